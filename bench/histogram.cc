#include "bench/histogram.h"

#include <algorithm>
#include <bit>
#include <cmath>

namespace brake::bench {
namespace {

// Index layout: [0, 2 * kSubBuckets) holds values exactly; a value v above
// that has shift = floor(log2 v) - kSubBucketBits and lands at
// shift * kSubBuckets + (v >> shift), which continues the previous range
// without gaps.
constexpr int kMaxShift = 40 - 1 - LatencyHistogram::kSubBucketBits;
constexpr size_t kBucketCount = (kMaxShift + 2) * LatencyHistogram::kSubBuckets;

}  // namespace

LatencyHistogram::LatencyHistogram() : counts_(kBucketCount, 0) {}

size_t LatencyHistogram::IndexOf(uint64_t value_ns) {
  if (value_ns >= kMaxNs) value_ns = kMaxNs - 1;
  if (value_ns < 2 * kSubBuckets) return static_cast<size_t>(value_ns);
  const int shift = std::bit_width(value_ns) - 1 - kSubBucketBits;
  return static_cast<size_t>(static_cast<uint64_t>(shift) * kSubBuckets +
                             (value_ns >> shift));
}

uint64_t LatencyHistogram::HighestEquivalent(size_t index) {
  if (index < 2 * kSubBuckets) return index;
  const uint64_t shift = index / kSubBuckets - 1;
  const uint64_t base = index - shift * kSubBuckets;
  return ((base + 1) << shift) - 1;
}

void LatencyHistogram::Record(uint64_t value_ns) {
  ++counts_[IndexOf(value_ns)];
  ++count_;
  min_ns_ = std::min(min_ns_, value_ns);
  max_ns_ = std::max(max_ns_, value_ns);
  sum_ns_ += static_cast<long double>(value_ns);
}

void LatencyHistogram::Merge(const LatencyHistogram& other) {
  for (size_t i = 0; i < counts_.size(); ++i) counts_[i] += other.counts_[i];
  count_ += other.count_;
  min_ns_ = std::min(min_ns_, other.min_ns_);
  max_ns_ = std::max(max_ns_, other.max_ns_);
  sum_ns_ += other.sum_ns_;
}

double LatencyHistogram::mean_ns() const {
  if (count_ == 0) return 0;
  return static_cast<double>(sum_ns_ / static_cast<long double>(count_));
}

uint64_t LatencyHistogram::ValueAtQuantile(double q) const {
  if (count_ == 0) return 0;
  q = std::clamp(q, 0.0, 1.0);
  uint64_t rank =
      static_cast<uint64_t>(std::ceil(q * static_cast<double>(count_)));
  rank = std::clamp<uint64_t>(rank, 1, count_);
  uint64_t seen = 0;
  for (size_t i = 0; i < counts_.size(); ++i) {
    seen += counts_[i];
    if (seen >= rank) return std::min(HighestEquivalent(i), max_ns_);
  }
  return max_ns_;
}

}  // namespace brake::bench
