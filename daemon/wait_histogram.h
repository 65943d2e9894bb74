// WaitHistogram: how long waiting acquires (wait_ms > 0) waited before their
// answer, by result ("granted" or the denial reason), in fixed buckets.
//
// The buckets are fixed (1 ms to 60 s, as Prometheus `le` bounds in
// seconds), so an observation is a bucket search and two increments, never
// an allocation. Counts are kept per bucket and made cumulative when the
// histogram is written out. Loop thread only.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "budget/engine.h"

namespace brake {

class WaitHistogram {
 public:
  // Upper bounds of the finite buckets in microseconds; a last bucket
  // (+Inf) takes the rest.
  static constexpr std::array<int64_t, 15> kBoundsUs = {
      1'000,     2'500,     5'000,      10'000,     25'000,
      50'000,    100'000,   250'000,    500'000,    1'000'000,
      2'500'000, 5'000'000, 10'000'000, 30'000'000, 60'000'000};
  static constexpr size_t kBuckets = kBoundsUs.size() + 1;
  // Results: granted, then one per Reason in its order.
  static constexpr size_t kResults = 1 + kReasonCount;

  // Records one answer: granted, or refused with `reason`, after `waited_us`
  // (negative counts as 0).
  void Observe(bool granted, Reason reason, int64_t waited_us);

  // Result `r`'s wire label: "granted" or the reason's name.
  static std::string_view ResultName(size_t r);
  // Answers of result `r` that waited at most kBoundsUs[b] (b = kBuckets - 1:
  // all of them), cumulative as Prometheus' `le` buckets are.
  int64_t CumulativeCount(size_t r, size_t b) const;
  int64_t Count(size_t r) const { return count_[r]; }
  int64_t SumUs(size_t r) const { return sum_us_[r]; }

 private:
  std::array<std::array<int64_t, kBuckets>, kResults> buckets_{};
  std::array<int64_t, kResults> count_{};
  std::array<int64_t, kResults> sum_us_{};
};

}  // namespace brake
