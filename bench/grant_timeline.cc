#include "bench/grant_timeline.h"

#include <algorithm>

namespace brake::bench {

std::vector<uint64_t> GrantsPerSecond(const std::vector<uint32_t>& per_ms) {
  std::vector<uint64_t> out((per_ms.size() + 999) / 1000, 0);
  for (size_t i = 0; i < per_ms.size(); ++i) out[i / 1000] += per_ms[i];
  return out;
}

RollingMax MaxRollingGrants(const std::vector<uint32_t>& received_per_ms,
                            size_t window_ms) {
  const std::vector<uint32_t>& recv = received_per_ms;
  RollingMax best;
  if (recv.empty() || window_ms == 0) return best;
  const size_t w = std::min(window_ms, recv.size());
  uint64_t sum = 0;
  for (size_t i = 0; i < w; ++i) sum += recv[i];
  best.grants = sum;
  for (size_t start = 1; start + w <= recv.size(); ++start) {
    sum += recv[start + w - 1];
    sum -= recv[start - 1];
    if (sum > best.grants) {
      best.grants = sum;
      best.start_ms = start;
    }
  }
  return best;
}

RollingMax MaxCertainGrants(const std::vector<uint32_t>& received_per_ms,
                            const std::vector<uint32_t>& sent_per_ms,
                            uint64_t sent_before, size_t window_ms) {
  // Window [a, a + w) in whole ms holds grant i for sure iff its send ms
  // s_i >= a and its receive ms r_i <= a + w - 1. Their number is
  // #{r_i <= a + w - 1} - #{r_i <= a + w - 1, s_i < a}, which is at least
  // received(<= a + w - 1) - sent(< a), since s_i <= r_i.
  const std::vector<uint32_t>& recv = received_per_ms;
  RollingMax best;
  if (recv.empty() || window_ms == 0 || sent_per_ms.size() != recv.size()) {
    return best;
  }
  const size_t w = std::min(window_ms, recv.size());
  uint64_t received = 0;  // Received in [0, a + w - 1].
  for (size_t i = 0; i + 1 < w; ++i) received += recv[i];
  uint64_t sent = sent_before;  // Sent before a.
  for (size_t a = 0; a + w <= recv.size(); ++a) {
    received += recv[a + w - 1];
    if (a > 0) sent += sent_per_ms[a - 1];
    const uint64_t count = received > sent ? received - sent : 0;
    if (count > best.grants) {
      best.grants = count;
      best.start_ms = a;
    }
  }
  return best;
}

AlignedMax MaxAlignedGrants(const std::vector<uint32_t>& per_window,
                            int64_t first_window, int64_t window_ms) {
  AlignedMax best;
  for (size_t i = 0; i < per_window.size(); ++i) {
    if (i == 0 || per_window[i] > best.grants) {
      best.grants = per_window[i];
      best.start_unix_ms =
          (first_window + static_cast<int64_t>(i)) * window_ms;
    }
  }
  return best;
}

}  // namespace brake::bench
