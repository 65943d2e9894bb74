// WaitHistogram: fixed buckets, inclusive upper bounds, cumulative counts.
#include "daemon/wait_histogram.h"

#include <catch2/catch.hpp>

namespace brake {
namespace {

constexpr size_t kGranted = 0;
constexpr size_t kTimeout = 1 + static_cast<size_t>(Reason::kTimeout);
constexpr size_t kInf = WaitHistogram::kBuckets - 1;

TEST_CASE(
    "wait histogram: a wait lands in the first bucket whose bound it "
    "does not exceed",
    "[histogram]") {
  struct Case {
    int64_t waited_us;
    size_t bucket;  // index of the first bucket that counts it
  };
  const Case cases[] = {
      {0, 0},     {-5, 0},          {1'000, 0},         {1'001, 1},
      {2'500, 1}, {60'000'000, 14}, {60'000'001, kInf}, {3'600'000'000, kInf},
  };
  for (const Case& c : cases) {
    CAPTURE(c.waited_us);
    WaitHistogram h;
    h.Observe(true, Reason::kRateLimited, c.waited_us);
    for (size_t b = 0; b < WaitHistogram::kBuckets; ++b) {
      CAPTURE(b);
      CHECK(h.CumulativeCount(kGranted, b) == (b >= c.bucket ? 1 : 0));
    }
  }
}

TEST_CASE("wait histogram: counts and sums per result", "[histogram]") {
  WaitHistogram h;
  h.Observe(true, Reason::kRateLimited, 3'000);  // granted
  h.Observe(true, Reason::kTimeout, 40'000);     // granted: reason unused
  h.Observe(false, Reason::kTimeout, 2'000'000);
  CHECK(h.Count(kGranted) == 2);
  CHECK(h.SumUs(kGranted) == 43'000);
  CHECK(h.CumulativeCount(kGranted, 1) == 0);  // le 0.0025
  CHECK(h.CumulativeCount(kGranted, 2) == 1);  // le 0.005
  CHECK(h.CumulativeCount(kGranted, 5) == 2);  // le 0.05
  CHECK(h.CumulativeCount(kGranted, kInf) == 2);
  CHECK(h.Count(kTimeout) == 1);
  CHECK(h.SumUs(kTimeout) == 2'000'000);
  CHECK(h.CumulativeCount(kTimeout, 9) == 0);   // le 1
  CHECK(h.CumulativeCount(kTimeout, 10) == 1);  // le 2.5
  CHECK(WaitHistogram::ResultName(kGranted) == "granted");
  CHECK(WaitHistogram::ResultName(kTimeout) == "timeout");
  CHECK(WaitHistogram::ResultName(WaitHistogram::kResults - 1) == "reserved");
}

}  // namespace
}  // namespace brake
