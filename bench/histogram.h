// LatencyHistogram: an HDR-style log-linear histogram of latencies in
// nanoseconds (reports print microseconds with one decimal: at a 1x1 p50 of
// ~16 us, whole microseconds were steps of 6 %, too coarse for a 1.15 ratio).
//
// Values below 2 * kSubBuckets (256 ns) are kept exactly; above that, every
// power of two is split into kSubBuckets linear buckets, so a reported value
// is never more than 1/128 (< 0.8 %) above the true one. Memory is fixed
// (about 35 KiB) whatever the number of samples, and two histograms merge by
// adding counts. Not thread-safe: each load thread owns one and they are
// merged after the threads are joined.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace brake::bench {

class LatencyHistogram {
 public:
  static constexpr int kSubBucketBits = 7;
  static constexpr uint64_t kSubBuckets = uint64_t{1} << kSubBucketBits;
  // Values at or above this (about 18 minutes) are recorded as kMaxNs - 1.
  static constexpr uint64_t kMaxNs = uint64_t{1} << 40;

  LatencyHistogram();

  void Record(uint64_t value_ns);
  void Merge(const LatencyHistogram& other);

  uint64_t count() const { return count_; }
  // 0 when empty.
  uint64_t min_ns() const { return count_ == 0 ? 0 : min_ns_; }
  uint64_t max_ns() const { return max_ns_; }
  double mean_ns() const;

  // The value at quantile `q` (0.5 = median, 0.999 = p99.9): the highest
  // value equivalent to the bucket holding the ceil(q * count)-th smallest
  // sample, capped at max_ns(). 0 when empty. `q` is clamped to [0, 1].
  uint64_t ValueAtQuantile(double q) const;

  // Exposed for tests: the bucket of a value and the highest value that maps
  // to a bucket.
  static size_t IndexOf(uint64_t value_ns);
  static uint64_t HighestEquivalent(size_t index);

 private:
  std::vector<uint64_t> counts_;
  uint64_t count_ = 0;
  uint64_t min_ns_ = UINT64_MAX;
  uint64_t max_ns_ = 0;
  long double sum_ns_ = 0;
};

}  // namespace brake::bench
