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

size_t LatencyHistogram::IndexOf(uint64_t value_us) {
  if (value_us >= kMaxUs) value_us = kMaxUs - 1;
  if (value_us < 2 * kSubBuckets) return static_cast<size_t>(value_us);
  const int shift = std::bit_width(value_us) - 1 - kSubBucketBits;
  return static_cast<size_t>(static_cast<uint64_t>(shift) * kSubBuckets +
                             (value_us >> shift));
}

uint64_t LatencyHistogram::HighestEquivalent(size_t index) {
  if (index < 2 * kSubBuckets) return index;
  const uint64_t shift = index / kSubBuckets - 1;
  const uint64_t base = index - shift * kSubBuckets;
  return ((base + 1) << shift) - 1;
}

void LatencyHistogram::Record(uint64_t value_us) {
  ++counts_[IndexOf(value_us)];
  ++count_;
  min_us_ = std::min(min_us_, value_us);
  max_us_ = std::max(max_us_, value_us);
  sum_us_ += static_cast<long double>(value_us);
}

void LatencyHistogram::Merge(const LatencyHistogram& other) {
  for (size_t i = 0; i < counts_.size(); ++i) counts_[i] += other.counts_[i];
  count_ += other.count_;
  min_us_ = std::min(min_us_, other.min_us_);
  max_us_ = std::max(max_us_, other.max_us_);
  sum_us_ += other.sum_us_;
}

double LatencyHistogram::mean_us() const {
  if (count_ == 0) return 0;
  return static_cast<double>(sum_us_ / static_cast<long double>(count_));
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
    if (seen >= rank) return std::min(HighestEquivalent(i), max_us_);
  }
  return max_us_;
}

}  // namespace brake::bench
