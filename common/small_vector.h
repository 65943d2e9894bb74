// SmallVector: a vector whose first N elements live in the object itself.
//
// An open lease names a handful of scopes and charges. As two std::vectors
// they were two heap blocks per lease besides the lease's own, made on the
// request's path whenever no settled lease could be reused (a load that
// leaves its leases open: every grant) and freed when it expired. Up to N
// elements now cost no allocation; past N they move to a std::vector and
// stay there until clear(). The vector is made only then: in every object
// its place is one pointer (16 bytes with the size, where a std::vector and
// a size_t took 32), which is what keeps a lease object in four lines.
//
// The N slots are always constructed: slots past size() keep whatever they
// last held (for a string, its capacity) until they are used again. The
// elements are in the vector exactly when it is not empty.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "common/line_pool.h"

namespace brake {

template <class T, size_t N>
class SmallVector {
 public:
  SmallVector() = default;
  SmallVector(const SmallVector& o) : slots_(o.slots_), size_(o.size_) {
    if (o.heap_ != nullptr) heap_ = std::make_unique<Heap>(*o.heap_);
  }
  SmallVector& operator=(const SmallVector& o) {
    if (this != &o) *this = SmallVector(o);
    return *this;
  }
  // The source is left empty (a defaulted move would leave it claiming
  // elements its moved-out vector no longer has).
  SmallVector(SmallVector&& o) noexcept
      : slots_(std::move(o.slots_)), size_(o.size_), heap_(std::move(o.heap_)) {
    o.clear();
  }
  SmallVector& operator=(SmallVector&& o) noexcept {
    if (this != &o) {
      slots_ = std::move(o.slots_);
      size_ = o.size_;
      heap_ = std::move(o.heap_);
      o.clear();
    }
    return *this;
  }

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  T* data() { return spilled() ? heap_->data() : slots_.data(); }
  const T* data() const { return spilled() ? heap_->data() : slots_.data(); }
  T* begin() { return data(); }
  T* end() { return data() + size_; }
  const T* begin() const { return data(); }
  const T* end() const { return data() + size_; }
  T& operator[](size_t i) { return data()[i]; }
  const T& operator[](size_t i) const { return data()[i]; }

  // As std::vector::resize: new elements are value-initialized.
  void resize(size_t n) {
    if (spilled()) {
      heap_->resize(n);  // to none: back to the slots
    } else if (n <= N) {
      for (size_t i = size_; i < n; ++i) slots_[i] = T();
    } else {
      Spill(n);
      heap_->resize(n);
    }
    size_ = static_cast<uint32_t>(n);
  }
  void push_back(T value) {
    if (!spilled() && size_ < N) {
      slots_[size_++] = std::move(value);
      return;
    }
    if (!spilled()) Spill(size_ + 1);
    heap_->push_back(std::move(value));
    ++size_;
  }
  // Removes [first, last), keeping the order of the rest.
  T* erase(T* first, T* last) {
    T* tail_end = std::move(last, end(), first);
    resize(static_cast<size_t>(tail_end - begin()));
    return first;
  }
  // Back to the slots; the vector keeps its capacity.
  void clear() {
    if (heap_ != nullptr) heap_->clear();
    size_ = 0;
  }

 private:
  bool spilled() const { return heap_ != nullptr && !heap_->empty(); }
  // Moves the elements to the vector; the caller then grows it past N.
  void Spill(size_t capacity) {
    if (heap_ == nullptr) heap_ = std::make_unique<Heap>();
    heap_->reserve(capacity);
    for (size_t i = 0; i < size_; ++i) heap_->push_back(std::move(slots_[i]));
  }

  std::array<T, N> slots_{};
  uint32_t size_ = 0;
  // The elements, once there are more than N: the vector and its elements
  // from LinePool, like the object that holds them (malloc's fresh pages
  // faulted in on the request's path, one per ~40 hierarchical leases).
  struct Heap : std::vector<T, LinePoolAllocator<T>>, LinePooled {};
  std::unique_ptr<Heap> heap_;
};

}  // namespace brake
