// Grant timeline: how grants were spread over the measured window, from
// per-millisecond counts on the bench's monotonic clock (index 0 is the first
// millisecond of the window). Used to check rate limits from the outside,
// e.g. that a sliding_log of 100 per 1000 ms never granted more than 100 in
// a rolling second. Pure functions; any thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace brake::bench {

// Grants summed per whole second (the last entry may cover a partial one).
std::vector<uint64_t> GrantsPerSecond(const std::vector<uint32_t>& per_ms);

struct RollingMax {
  uint64_t grants = 0;
  uint64_t start_ms = 0;  // First millisecond of the window that has them.
};

// The most grants received in any `window_ms` consecutive milliseconds (the
// whole run when it is shorter). Receive times shift with reply latency, so
// this can exceed a limit the server kept.
RollingMax MaxRollingGrants(const std::vector<uint32_t>& received_per_ms,
                            size_t window_ms);

// A lower bound on the most grants the server made in any `window_ms` of its
// own time: the most grants whose whole send-to-reply interval lies inside
// one window of `window_ms` consecutive milliseconds. `sent_per_ms` counts
// the same grants by the millisecond their request was sent, and
// `sent_before` those sent before the window began. A figure above a limit
// proves the server exceeded it. Returns zero when the vectors differ in
// size.
RollingMax MaxCertainGrants(const std::vector<uint32_t>& received_per_ms,
                            const std::vector<uint32_t>& sent_per_ms,
                            uint64_t sent_before, size_t window_ms);

// The fullest of a run's wall-clock-aligned windows (LoadResult's
// aligned_received or aligned_certain): its count and the CLOCK_REALTIME
// millisecond it starts at. Window i starts at (first_window + i) * window_ms.
// Zeros when `per_window` is empty.
struct AlignedMax {
  uint64_t grants = 0;
  int64_t start_unix_ms = 0;
};
AlignedMax MaxAlignedGrants(const std::vector<uint32_t>& per_window,
                            int64_t first_window, int64_t window_ms);

}  // namespace brake::bench
