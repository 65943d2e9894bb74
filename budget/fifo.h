// Fifo: a queue indexed from its front, in one ring of a power-of-two size.
//
// Pushes go to the back and pops come off the front; element i counts from
// the front. A popped place is reused by a later push, so a queue whose
// length stays within what it has reached allocates nothing; when full,
// the ring doubles (the elements move once, as a vector's do). std::deque
// allocates and frees a chunk every few elements, and finds element i with
// a division by its elements per chunk; a vector that drops its front now
// and then would move every live element each time, a pause as long as the
// queue.
#pragma once

#include <cstddef>
#include <utility>
#include <vector>

#include "common/huge_page_allocator.h"

namespace brake {

template <class T>
class Fifo {
 public:
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  T& operator[](size_t i) { return items_[(head_ + i) & mask_]; }
  const T& operator[](size_t i) const { return items_[(head_ + i) & mask_]; }
  T& front() { return items_[head_]; }
  const T& front() const { return items_[head_]; }

  // A new default element at the back (every free place holds one).
  T& emplace_back() {
    if (size_ == items_.size()) Grow();
    T& slot = items_[(head_ + size_) & mask_];
    ++size_;
    return slot;
  }
  // Drops the front element (what it holds goes now).
  void pop_front() {
    items_[head_] = T{};
    head_ = (head_ + 1) & mask_;
    --size_;
  }

  // Front to back.
  class iterator {
   public:
    iterator(Fifo* f, size_t i) : f_(f), i_(i) {}
    T& operator*() const { return (*f_)[i_]; }
    iterator& operator++() {
      ++i_;
      return *this;
    }
    bool operator!=(const iterator& o) const { return i_ != o.i_; }

   private:
    Fifo* f_;
    size_t i_;
  };
  iterator begin() { return iterator(this, 0); }
  iterator end() { return iterator(this, size_); }

 private:
  void Grow() {
    Items bigger(items_.empty() ? 16 : 2 * items_.size());
    for (size_t i = 0; i < size_; ++i) bigger[i] = std::move((*this)[i]);
    items_ = std::move(bigger);
    head_ = 0;
    mask_ = items_.size() - 1;
  }

  // On huge pages once it is large (the lease book's ring at hundreds of
  // thousands of open leases).
  using Items = std::vector<T, HugePageAllocator<T>>;
  Items items_;  // a power of two long, or empty
  size_t head_ = 0;  // index of the front in items_
  size_t size_ = 0;
  size_t mask_ = 0;
};

}  // namespace brake
