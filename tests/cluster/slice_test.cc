#include "cluster/slice.h"

#include <catch2/catch.hpp>
#include <cstdint>

namespace brake::cluster {
namespace {

constexpr int64_t kSliceT0 = 1'000'000'000;
constexpr int64_t kTtlUs = 5'000'000;

Slice SliceOf(int64_t units, int64_t now_us = kSliceT0) {
  Slice s;
  s.Add(SliceGrant{units, now_us + kTtlUs});
  return s;
}

TEST_CASE("slice: grants only what it holds, however old", "[slice]") {
  Slice s = SliceOf(100);
  CHECK(s.available() == 100);
  CHECK(s.Take(60));
  CHECK_FALSE(s.Take(41));  // all or nothing
  CHECK(s.available() == 40);
  CHECK(s.Take(40));
  CHECK(s.available() == 0);
  CHECK_FALSE(s.Take(1));
  Slice t = SliceOf(100);
  // Past its expiry Redis still counts every unit of it: still granted.
  CHECK(t.available() == 100);
  CHECK(t.Take(1));
  CHECK_FALSE(t.Take(-1));
}

TEST_CASE("slice: settlements refund or run into debt", "[slice]") {
  Slice s = SliceOf(100);
  REQUIRE(s.Take(50));
  s.Settle(-20);  // the call used 30 of its 50
  CHECK(s.available() == 70);
  s.Settle(+90);  // another settled far past its reservation
  CHECK(s.used() == 120);
  CHECK(s.debt() == 20);
  CHECK(s.available() == 0);
  s.Add(SliceGrant{50, kSliceT0 + kTtlUs});  // the next lease covers the debt
  CHECK(s.debt() == 0);
  CHECK(s.available() == 30);
}

TEST_CASE("slice: a late renewal keeps what the slice holds", "[slice]") {
  Slice s = SliceOf(100);
  REQUIRE(s.Take(30));
  const int64_t later = kSliceT0 + kTtlUs + 1;
  s.Add(SliceGrant{40, later + kTtlUs});
  CHECK(s.available() == 110);
  CHECK(s.used() == 30);
  CHECK(s.expires_us() == later + kTtlUs);
  // A renewal before expiry keeps what is held and moves the expiry.
  s.Add(SliceGrant{10, later + 2 * kTtlUs});
  CHECK(s.available() == 120);
  CHECK(s.expires_us() == later + 2 * kTtlUs);
}

TEST_CASE("slice: refills before it runs dry or expires", "[slice]") {
  Slice s = SliceOf(100);
  CHECK_FALSE(s.NeedsRefill(kSliceT0, 10, 1'000'000));
  REQUIRE(s.Take(91));
  CHECK(s.NeedsRefill(kSliceT0, 10, 1'000'000));  // 9 left, under the low water
  Slice t = SliceOf(100);
  CHECK(t.NeedsRefill(kSliceT0 + kTtlUs - 1'000'000, 10, 1'000'000));
}

TEST_CASE("slice: gives back what it does not use, reports what it spent",
          "[slice]") {
  Slice s = SliceOf(100);
  REQUIRE(s.Take(30));
  CHECK(s.GiveBack(20) == 50);  // keeps 20 for the next calls
  CHECK(s.held() == 50);
  CHECK(s.available() == 20);
  CHECK(s.GiveBack(100) == 0);
  CHECK(s.ReportSettled(25) == 25);  // settled spend leaves the slice
  CHECK(s.used() == 5);
  CHECK(s.held() == 25);
  CHECK(s.ReportSettled(10) == 5);  // never more than is used
  CHECK(s.GiveBack(0) == 20);  // expired or not
}

TEST_CASE("slice: sizes shrink as the limit nears its end", "[slice]") {
  // Plenty left: the demand decides (100/s for 2 s).
  CHECK(SliceToAsk(1'000'000, 3, 100.0, 2000, 10) == 200);
  CHECK(SliceToAsk(1'000'000, 3, 0.0, 2000, 10) == 10);  // at least min
  // Near the end: a sixth of what is left for each of three nodes.
  CHECK(SliceToAsk(600, 3, 100.0, 2000, 10) == 100);
  CHECK(SliceToAsk(5, 3, 100.0, 2000, 10) == 1);
  CHECK(SliceToAsk(0, 3, 100.0, 2000, 10) == 0);
  CHECK(SliceToAsk(-5, 3, 100.0, 2000, 10) == 0);
  CHECK(SliceToAsk(1'000, 0, 1e300, 2000, 10) == 500);  // no overflow
  // Three nodes asking in turn never take more than is left.
  int64_t remaining = 1'000;
  for (int i = 0; i < 60; ++i) {
    const int64_t ask = SliceToAsk(remaining, 3, 50.0, 1000, 1);
    CHECK(ask <= remaining);
    remaining -= ask;
  }
  CHECK(remaining >= 0);
  CHECK(remaining < 10);
}

}  // namespace
}  // namespace brake::cluster
