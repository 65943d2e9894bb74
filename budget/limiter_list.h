// LimiterList: a subject's limiters, the first kInline of them held in place.
//
// Most subjects have one or two limits. In a std::vector their pointers
// sit in a block of their own: one more allocation per subject and, with a
// million subjects, one more cache miss per decision between the subject
// and its limiters. Here they are part of the subject; a third limiter
// moves them all to the heap, as a vector would hold them.
#pragma once

#include <cstdint>
#include <memory>
#include <utility>

#include "budget/limiter.h"

namespace brake {

class LimiterList {
 public:
  using Ptr = std::unique_ptr<Limiter>;
  static constexpr uint32_t kInline = 2;

  LimiterList() = default;
  LimiterList(const LimiterList&) = delete;
  LimiterList& operator=(const LimiterList&) = delete;
  LimiterList(LimiterList&& o) noexcept { *this = std::move(o); }
  LimiterList& operator=(LimiterList&& o) noexcept {
    if (this == &o) return *this;
    clear();
    if (o.heap_) {
      heap_ = std::move(o.heap_);
    } else {
      for (uint32_t i = 0; i < o.size_; ++i) inline_[i] = std::move(o.inline_[i]);
    }
    size_ = o.size_;
    capacity_ = o.capacity_;
    o.size_ = 0;
    o.capacity_ = kInline;
    return *this;
  }

  Ptr* data() { return heap_ ? heap_.get() : inline_; }
  const Ptr* data() const { return heap_ ? heap_.get() : inline_; }
  // Whether the limiters' pointers are in place (not in a heap block).
  bool in_place() const { return heap_ == nullptr; }
  Ptr* begin() { return data(); }
  Ptr* end() { return data() + size_; }
  const Ptr* begin() const { return data(); }
  const Ptr* end() const { return data() + size_; }
  uint32_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  Ptr& operator[](uint32_t i) { return data()[i]; }
  const Ptr& operator[](uint32_t i) const { return data()[i]; }
  Ptr& back() { return data()[size_ - 1]; }

  void push_back(Ptr p) {
    if (size_ == capacity_) Grow();
    data()[size_++] = std::move(p);
  }
  void clear() {
    for (Ptr& p : *this) p.reset();
    heap_.reset();
    size_ = 0;
    capacity_ = kInline;
  }

 private:
  void Grow() {
    auto bigger = std::make_unique<Ptr[]>(capacity_ * 2);
    for (uint32_t i = 0; i < size_; ++i) bigger[i] = std::move(data()[i]);
    heap_ = std::move(bigger);
    capacity_ *= 2;
  }

  Ptr inline_[kInline];
  std::unique_ptr<Ptr[]> heap_;  // all of them, once more than kInline
  uint32_t size_ = 0;
  uint32_t capacity_ = kInline;
};

}  // namespace brake
