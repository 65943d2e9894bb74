// The state RunLoad's load threads share and keep (bench/load_worker.h): the
// clocks, the counters, a connection and its request slots, and what the
// threads share. Internal to load.cc.
#pragma once

#include <time.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "bench/byte_buffer.h"

namespace brake::bench::load_worker {

inline constexpr size_t kReadChunk = 64 * 1024;
inline constexpr size_t kMaxReplyBytes = 16 * 1024 * 1024;
inline constexpr int64_t kNsPerMs = 1000 * 1000;
inline constexpr int64_t kNsPerSec = 1000 * kNsPerMs;

inline int64_t NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// CLOCK_REALTIME in microseconds since the epoch, the clock braked's fixed
// windows are aligned to.
inline int64_t RealNowUs() {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000 + ts.tv_nsec / 1000;
}

inline int64_t SecondsToNs(double s) { return std::llround(s * 1e9); }

inline std::string JsonString(const std::string& s) {
  // replace: invalid UTF-8 must not throw on the way to the wire.
  return nlohmann::json(s).dump(-1, ' ', false,
                                nlohmann::json::error_handler_t::replace);
}

// Counts by a short string key without allocating on the hot path: the
// handful of distinct reasons are found by linear search.
class Counters {
 public:
  void Add(std::string_view key) {
    for (auto& [k, n] : items_) {
      if (k == key) {
        ++n;
        return;
      }
    }
    items_.emplace_back(std::string(key), 1);
  }
  void MergeInto(std::map<std::string, uint64_t>* out) const {
    for (const auto& [k, n] : items_) (*out)[k] += n;
  }

 private:
  std::vector<std::pair<std::string, uint64_t>> items_;
};

enum class SlotKind : uint8_t { kDecision, kCommit };

struct Slot {
  uint64_t id = 0;
  int64_t send_ns = 0;
  int64_t send_real_us = 0;  // CLOCK_REALTIME at send_ns.
  SlotKind kind = SlotKind::kDecision;
  bool busy = false;
};

// One client connection. Request ids are seq * depth + slot, so a reply's
// slot is its id modulo depth and replies may arrive in any order.
struct Conn {
  int fd = -1;
  int index = 0;
  bool want_write = false;
  int in_flight = 0;
  uint64_t seq = 0;
  uint64_t grants = 0;
  int acquires_sent = 0;  // Counted for --once only.
  std::string request_tail;  // What follows the id in an acquire or ping.
  // --spread: the acquire's text before and after the task's number, and
  // the number of the next task.
  std::string spread_head;
  std::string spread_tail;
  int64_t next_task = 0;
  // --hold: the leases kept open, and the state of the generator that
  // picks which to commit (xorshift64, seeded per connection).
  std::vector<std::string> held;
  uint64_t pick_state = 0;
  std::vector<Slot> slots;
  std::vector<uint32_t> free_slots;
  std::vector<uint32_t> unstamped;  // Queued since the last send().
  ByteBuffer in;
  ByteBuffer out;
};

struct Shared {
  int64_t start_ns = 0;
  int64_t measure_start_ns = 0;
  int64_t measure_end_ns = 0;
  int64_t drain_end_ns = 0;
  int64_t window_us = 1000000;   // Aligned window width.
  int64_t first_window = 0;      // Aligned window index at start_ns.
  size_t aligned_windows = 0;    // Windows counted from first_window.
  std::atomic<bool> failed{false};
  std::mutex mu;
  std::string failure;  // Guarded by mu; the first failure wins.

  void Fail(std::string message) {
    std::lock_guard<std::mutex> lock(mu);
    if (!failed.load()) {
      failure = std::move(message);
      failed.store(true);
    }
  }
  double SecondsIn(int64_t now_ns) const {
    return static_cast<double>(now_ns - start_ns) / 1e9;
  }
};

}  // namespace brake::bench::load_worker
