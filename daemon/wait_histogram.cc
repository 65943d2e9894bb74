#include "daemon/wait_histogram.h"

#include <algorithm>
#include <limits>

namespace brake {

void WaitHistogram::Observe(bool granted, Reason reason, int64_t waited_us) {
  const size_t r = granted ? 0 : 1 + static_cast<size_t>(reason);
  if (r >= kResults) return;
  waited_us = std::max<int64_t>(0, waited_us);
  // `le` is inclusive: a wait equal to a bound belongs to that bucket.
  const size_t b = static_cast<size_t>(
      std::lower_bound(kBoundsUs.begin(), kBoundsUs.end(), waited_us) -
      kBoundsUs.begin());
  ++buckets_[r][b];
  ++count_[r];
  sum_us_[r] = waited_us > std::numeric_limits<int64_t>::max() - sum_us_[r]
                   ? std::numeric_limits<int64_t>::max()
                   : sum_us_[r] + waited_us;
}

std::string_view WaitHistogram::ResultName(size_t r) {
  return r == 0 ? std::string_view("granted")
                : ReasonName(static_cast<Reason>(r - 1));
}

int64_t WaitHistogram::CumulativeCount(size_t r, size_t b) const {
  int64_t n = 0;
  for (size_t i = 0; i <= b && i < kBuckets; ++i) n += buckets_[r][i];
  return n;
}

}  // namespace brake
