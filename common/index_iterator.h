// IndexIterator: walks a container by index, each element as the
// container's operator[] returns it (a view made on the fly, as LeasePuts'
// and LedgerRows' rows are), for range-for.
#pragma once

#include <cstddef>

namespace brake {

template <typename Container>
class IndexIterator {
 public:
  IndexIterator(const Container* c, size_t i) : c_(c), i_(i) {}
  auto operator*() const { return (*c_)[i_]; }
  IndexIterator& operator++() {
    ++i_;
    return *this;
  }
  bool operator!=(const IndexIterator& o) const { return i_ != o.i_; }

 private:
  const Container* c_;
  size_t i_;
};

}  // namespace brake
