// Fifo: a queue indexed from its front, in blocks of one LinePool chunk.
//
// Pushes go to the back and pops come off the front; element i counts from
// the front. Elements live in blocks of kPerBlock (one 2 MiB chunk each, a
// huge page where the system allows); a block the front has left goes back
// to LinePool's stock, where the back takes its next block. Growing takes one
// block and moves nothing. A ring that doubled moved every element
// and wrote its whole new array at once: at a million open leases a pause of
// 100 MiB of fresh memory on the request's path, where on the development VM
// a page new to the host costs ~6 us per 4 KiB; a block comes from the
// stock, whose pages another thread has touched (LinePool::Stock). std::deque
// allocates and frees a block every few elements.
#pragma once

#include <cstddef>
#include <new>
#include <vector>

#include "common/line_pool.h"

namespace brake {

template <class T, size_t kPerBlock = LinePool::kChunkBytes / sizeof(T)>
class Fifo {
  static_assert(kPerBlock > 0 && kPerBlock * sizeof(T) <= LinePool::kChunkBytes);

 public:
  Fifo() = default;
  Fifo(const Fifo&) = delete;
  Fifo& operator=(const Fifo&) = delete;
  ~Fifo() {
    while (!empty()) pop_front();
    for (T* b : blocks_) LinePool::FreeChunk(b);
  }

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  T& operator[](size_t i) { return At(head_ + i); }
  const T& operator[](size_t i) const {
    return const_cast<Fifo*>(this)->At(head_ + i);
  }
  T& front() { return At(head_); }
  const T& front() const { return (*this)[0]; }
  // A new default element at the back.
  T& emplace_back() {
    const size_t at = head_ + size_;
    if (at / kPerBlock == blocks_.size()) {
      blocks_.reserve(blocks_.size() + 1);  // nothing throws past this
      blocks_.push_back(static_cast<T*>(LinePool::AllocateChunk()));
    }
    T* slot = new (&At(at)) T();
    ++size_;
    return *slot;
  }
  // Drops the front element (what it holds goes now).
  void pop_front() {
    At(head_).~T();
    --size_;
    if (++head_ < kPerBlock) return;
    head_ = 0;
    LinePool::FreeChunk(blocks_.front());
    blocks_.erase(blocks_.begin());
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
  // The place `at` counted from the first block's start.
  T& At(size_t at) { return blocks_[at / kPerBlock][at % kPerBlock]; }

  std::vector<T*> blocks_;  // front block first
  size_t head_ = 0;         // the front's place in blocks_[0]
  size_t size_ = 0;
};

}  // namespace brake
