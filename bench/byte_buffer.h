// ByteBuffer: a growable byte queue for socket IO (append at the back,
// consume from the front) that, unlike std::string::resize, never zero-fills
// the space a recv() is about to overwrite. Owned by one connection on one
// thread. Running out of memory aborts.
#pragma once

#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <string_view>

namespace brake::bench {

class ByteBuffer {
 public:
  ByteBuffer() = default;
  ~ByteBuffer() { std::free(base_); }
  ByteBuffer(const ByteBuffer&) = delete;
  ByteBuffer& operator=(const ByteBuffer&) = delete;

  const char* data() const { return base_ + start_; }
  char* data() { return base_ + start_; }
  size_t size() const { return end_ - start_; }
  bool empty() const { return end_ == start_; }
  std::string_view view() const { return {data(), size()}; }

  // Room for at least `n` more bytes after the content; fill some, then
  // call Commit with how many.
  char* Prepare(size_t n) {
    if (cap_ - end_ < n) MakeRoom(n);
    return base_ + end_;
  }
  void Commit(size_t n) { end_ += n; }

  void Append(std::string_view s) {
    std::memcpy(Prepare(s.size()), s.data(), s.size());
    end_ += s.size();
  }
  void Append(char c) {
    *Prepare(1) = c;
    ++end_;
  }

  // Drops `n` bytes (at most size()) from the front.
  void Consume(size_t n) {
    start_ += n;
    if (start_ >= end_) start_ = end_ = 0;
  }
  void Clear() { start_ = end_ = 0; }

 private:
  void MakeRoom(size_t n) {
    const size_t used = size();
    if (cap_ - used >= n) {
      std::memmove(base_, base_ + start_, used);  // Reuse the consumed front.
    } else {
      size_t cap = cap_ < 4096 ? 4096 : cap_;
      while (cap - used < n) cap *= 2;
      char* fresh = static_cast<char*>(std::malloc(cap));
      if (fresh == nullptr) std::abort();
      if (used > 0) std::memcpy(fresh, base_ + start_, used);
      std::free(base_);
      base_ = fresh;
      cap_ = cap;
    }
    start_ = 0;
    end_ = used;
  }

  char* base_ = nullptr;
  size_t start_ = 0;
  size_t end_ = 0;
  size_t cap_ = 0;
};

}  // namespace brake::bench
