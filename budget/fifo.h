// Fifo: a queue indexed from its front, in one vector.
//
// Pushes go to the back and pops come off the front; element i counts from
// the front. Popped places are not freed one by one: once they are at least
// as many as the live elements, the live ones move down in one go, so a pop
// costs one move on average and the vector keeps its capacity, and a queue
// whose length stays within what it has reached allocates nothing.
// std::deque allocates and frees a chunk every few elements, and finds
// element i with a division by its elements per chunk.
#pragma once

#include <cstddef>
#include <utility>
#include <vector>

namespace brake {

template <class T>
class Fifo {
 public:
  size_t size() const { return items_.size() - head_; }
  bool empty() const { return head_ == items_.size(); }
  T& operator[](size_t i) { return items_[head_ + i]; }
  const T& operator[](size_t i) const { return items_[head_ + i]; }
  T& front() { return items_[head_]; }
  const T& front() const { return items_[head_]; }

  // A new default element at the back.
  T& emplace_back() { return items_.emplace_back(); }
  // Drops the front element (what it holds goes now).
  void pop_front() {
    items_[head_] = T{};
    ++head_;
    if (head_ >= kCompactFrom && head_ * 2 >= items_.size()) {
      items_.erase(items_.begin(), items_.begin() + head_);
      head_ = 0;
    }
  }

  auto begin() { return items_.begin() + head_; }
  auto end() { return items_.end(); }

 private:
  // Below this many popped places, a pop only moves the front on.
  static constexpr size_t kCompactFrom = 64;

  std::vector<T> items_;
  size_t head_ = 0;  // index of the front in items_
};

}  // namespace brake
