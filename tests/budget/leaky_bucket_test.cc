#include "budget/leaky_bucket.h"
#include "tests/budget/limiter_helpers.h"

#include <catch2/catch.hpp>
#include <cstdint>
#include <vector>

namespace brake {
namespace {

using limiter_test::kMs;
using limiter_test::kSec;
using limiter_test::Take;

LimitSpec Shape(int64_t rate, int64_t per_ms, int64_t queue = 100) {
  LimitSpec s;
  s.name = "shape";
  s.algorithm = Algorithm::kLeakyBucket;
  s.rate = rate;
  s.per_ms = per_ms;
  s.queue = queue;
  return s;
}

TEST_CASE("leaky bucket: uniform spacing, no burst", "[budget]") {
  const int64_t t0 = 7 * kSec;
  LeakyBucket l(Shape(50, 1000), t0);

  SECTION("one grant every 20 ms, exact retry_after") {
    REQUIRE(Take(l, 1, t0));
    Decision d = l.Check(1, t0);
    REQUIRE(d.verdict == Verdict::kDeny);
    REQUIRE(d.retry_after_us == 20 * kMs);
    REQUIRE_FALSE(Take(l, 1, t0 + 20 * kMs - 1));
    REQUIRE(Take(l, 1, t0 + 20 * kMs));
    REQUIRE(l.NextSlotUs(t0 + 20 * kMs) == t0 + 40 * kMs);
  }

  SECTION("a greedy caller gets the rate: 50/s, plus the first") {
    int admitted = 0;
    for (int64_t t = t0; t <= t0 + 10 * kSec; t += 100) {
      while (Take(l, 1, t)) ++admitted;
    }
    REQUIRE(admitted == 501);
  }

  SECTION("idle time is not banked") {
    REQUIRE(Take(l, 1, t0 + 10 * kSec));
    REQUIRE_FALSE(Take(l, 1, t0 + 10 * kSec));
  }

  SECTION("an amount books that many slots") {
    REQUIRE(Take(l, 5, t0));
    REQUIRE(l.Check(1, t0).retry_after_us == 100 * kMs);
    REQUIRE(l.Backlog(t0) == 5);
    REQUIRE(l.Backlog(t0 + 30 * kMs) == 4);  // 70 ms ahead: 3.5, rounded up
    REQUIRE(l.Check(0, t0).verdict == Verdict::kAdmit);
  }

  SECTION("uneven intervals round up per charge") {
    LeakyBucket third(Shape(3, 1000), 0);
    REQUIRE(Take(third, 1, 0));
    REQUIRE(third.Check(1, 0).retry_after_us == 333334);
    REQUIRE(third.SlotsUs(3) == kSec);
  }

  SECTION("no rate means too large; queue is the spec's bound") {
    LeakyBucket dead(Shape(0, 1000), 0);
    REQUIRE(dead.Check(1, 0).verdict == Verdict::kTooLarge);
    REQUIRE(l.queue() == 100);
  }
}

TEST_CASE("leaky bucket: settle, usage, save/restore, reset", "[budget]") {
  LeakyBucket l(Shape(10, 1000), 0);
  REQUIRE(Take(l, 3, 0));  // next slot at 300 ms

  SECTION("extra charge books more") {
    l.Settle(2, 0, 100 * kMs);
    REQUIRE(l.NextSlotUs(100 * kMs) == 500 * kMs);
  }

  SECTION("refund frees future slots only") {
    l.Settle(-1, 0, 100 * kMs);
    REQUIRE(l.NextSlotUs(100 * kMs) == 200 * kMs);
    l.Settle(-10, 0, 100 * kMs);
    REQUIRE(l.NextSlotUs(100 * kMs) == 100 * kMs);
    REQUIRE(Take(l, 1, 100 * kMs));
  }

  SECTION("usage") {
    LimitUsage u = l.Usage(100 * kMs);
    REQUIRE(u.limit == 10);
    REQUIRE(u.used == 2);
    REQUIRE(u.remaining == 8);
    REQUIRE(u.resets_in_us == 200 * kMs);
    REQUIRE(l.Usage(kSec).used == 0);
    REQUIRE(l.Usage(kSec).resets_in_us == 0);
  }

  SECTION("save/restore") {
    std::vector<int64_t> saved = l.SaveState();
    REQUIRE(saved == std::vector<int64_t>{300 * kMs});
    LeakyBucket c(Shape(10, 1000), 0);
    REQUIRE(c.RestoreState(saved));
    REQUIRE(c.SaveState() == saved);
    REQUIRE_FALSE(c.RestoreState({}));
    REQUIRE_FALSE(c.RestoreState({1, 2}));
    REQUIRE(c.SaveState() == saved);
  }

  SECTION("reset and reconfigure") {
    l.Reconfigure(Shape(100, 1000));
    REQUIRE(l.NextSlotUs(0) == 300 * kMs);  // the booked schedule stays
    REQUIRE(Take(l, 1, 300 * kMs));
    REQUIRE(l.NextSlotUs(300 * kMs) == 310 * kMs);
    l.Reset(301 * kMs);
    REQUIRE(Take(l, 1, 301 * kMs));
  }
}

}  // namespace
}  // namespace brake
