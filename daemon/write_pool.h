// WritePool: libuv write requests with their buffers, recycled.
//
// A finished write request is kept, with its buffer's capacity, for the next
// write of any connection, so that steady traffic allocates neither the
// request nor the reply bytes. At most kMaxSpareWrites are kept, and none
// whose buffer grew beyond kMaxSpareBytes. Per thread (each loop runs on
// one); the spares are freed when the thread ends.
#pragma once

#include <uv.h>

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

namespace brake {

struct WriteReq {
  uv_write_t req;
  std::string data;
};

inline constexpr size_t kMaxSpareWrites = 64;
inline constexpr size_t kMaxSpareBytes = 256 * 1024;

inline std::vector<std::unique_ptr<WriteReq>>& SpareWrites() {
  thread_local std::vector<std::unique_ptr<WriteReq>> spares;
  return spares;
}

// A request with an empty `data` (which may have capacity).
inline WriteReq* TakeWriteReq() {
  auto& spares = SpareWrites();
  if (spares.empty()) return new WriteReq();
  WriteReq* w = spares.back().release();
  spares.pop_back();
  return w;
}

// Takes `w` back once libuv is done with it (its callback ran, or uv_write
// failed).
inline void ReturnWriteReq(WriteReq* w) {
  auto& spares = SpareWrites();
  if (spares.size() >= kMaxSpareWrites || w->data.capacity() > kMaxSpareBytes) {
    delete w;
    return;
  }
  w->data.clear();
  spares.emplace_back(w);
}

}  // namespace brake
