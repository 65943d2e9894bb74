#include "budget/warmup.h"
#include "tests/budget/limiter_helpers.h"

#include <catch2/catch.hpp>
#include <cstdint>
#include <vector>

namespace brake {
namespace {

using limiter_test::kMs;
using limiter_test::kSec;
using limiter_test::Take;

LimitSpec Ramp(int64_t rate, int64_t per_ms, int64_t warmup_ms,
               double cold_factor = 3.0) {
  LimitSpec s;
  s.name = "ramp";
  s.algorithm = Algorithm::kWarmup;
  s.rate = rate;
  s.per_ms = per_ms;
  s.warmup_ms = warmup_ms;
  s.cold_factor = cold_factor;
  return s;
}

TEST_CASE("warmup: shape and the first permits from cold", "[budget]") {
  SECTION("10/s, 1 s warm-up: threshold 5, max 10, first permit 280 ms") {
    Warmup w(Ramp(10, 1000, 1000), 0);
    Warmup::Shape s = w.shape();
    REQUIRE(s.stable_us == Approx(100000));
    REQUIRE(s.cold_us == Approx(300000));
    REQUIRE(s.threshold == Approx(5));
    REQUIRE(s.max_permits == Approx(10));
    REQUIRE(w.StoredPermits(0) == Approx(10));
    REQUIRE(Take(w, 1, 0));
    Decision d = w.Check(1, 0);
    REQUIRE(d.verdict == Verdict::kDeny);
    REQUIRE(d.retry_after_us == 280 * kMs);
    REQUIRE_FALSE(Take(w, 1, 280 * kMs - 1));
    REQUIRE(Take(w, 1, 280 * kMs));
    REQUIRE(w.next_free_us() == 520 * kMs);  // the second costs 240 ms
  }

  SECTION("Guava's testWarmUp: 2/s, 4 s warm-up") {
    // Guava's figures: waits of 1375, 1125, 875, 625 ms, then 500 ms.
    Warmup w(Ramp(2, 1000, 4000), 0);
    const int64_t gaps_ms[] = {1375, 1125, 875, 625, 500, 500, 500, 500};
    int64_t t = 0;
    REQUIRE(Take(w, 1, t));
    for (int64_t gap : gaps_ms) {
      CAPTURE(t, gap);
      REQUIRE_FALSE(Take(w, 1, t + gap * kMs - 1));
      t += gap * kMs;
      REQUIRE(Take(w, 1, t));
    }
  }

  SECTION("a cold start admits only a trickle, then ramps to the rate") {
    // 50/s with a 10 s warm-up, polled every millisecond by a greedy caller.
    Warmup w(Ramp(50, 1000, 10000), 0);
    std::vector<int> per_second(16, 0);
    for (int64_t t = 0; t < 16 * kSec; t += kMs) {
      while (Take(w, 1, t)) ++per_second[t / kSec];
    }
    CAPTURE(per_second);
    REQUIRE(per_second[0] >= 10);
    REQUIRE(per_second[0] <= 20);
    for (size_t i = 1; i < per_second.size(); ++i) {
      REQUIRE(per_second[i] + 1 >= per_second[i - 1]);  // ramps up
    }
    REQUIRE(per_second[11] >= 45);
    REQUIRE(per_second[11] <= 51);
    REQUIRE(per_second[15] >= 45);
    REQUIRE(per_second[15] <= 51);
  }
}

TEST_CASE("warmup: idle time cools the limiter down again", "[budget]") {
  Warmup w(Ramp(10, 1000, 1000), 0);
  // Drain to below the threshold: stable cost of 100 ms per permit.
  int64_t t = 0;
  for (int i = 0; i < 30; ++i) {
    while (!Take(w, 1, t)) t = w.next_free_us();
  }
  REQUIRE(w.StoredPermits(t) == Approx(0).margin(1e-6));
  REQUIRE(w.Check(1, t).retry_after_us == 100 * kMs);
  // Refill at warmup / max = 100 ms per permit; 2 s of idling is fully cold.
  const int64_t idle_from = w.next_free_us();
  REQUIRE(w.StoredPermits(idle_from + 500 * kMs) == Approx(5));
  REQUIRE(w.StoredPermits(idle_from + 2 * kSec) == Approx(10));
  REQUIRE(Take(w, 1, idle_from + 2 * kSec));
  REQUIRE(w.Check(1, idle_from + 2 * kSec).retry_after_us == 280 * kMs);
}

TEST_CASE("warmup: admission details", "[budget]") {
  Warmup w(Ramp(10, 1000, 1000), 0);

  SECTION("amount 0 always admitted; a big request is paid later") {
    REQUIRE(Take(w, 20, 0));
    // 10 stored: 5 above threshold cost (300+100)/2*5 = 1 s, 5 below 0.5 s,
    // 10 fresh 1 s.
    REQUIRE(w.next_free_us() == 2500 * kMs);
    REQUIRE(w.Check(0, 0).verdict == Verdict::kAdmit);
    Decision d = w.Check(1, 10);
    REQUIRE(d.verdict == Verdict::kDeny);
    REQUIRE(d.retry_after_us == 2500 * kMs - 10);
  }

  SECTION("no rate means too large") {
    Warmup dead(Ramp(0, 1000, 1000), 0);
    REQUIRE(dead.Check(1, 0).verdict == Verdict::kTooLarge);
  }

  SECTION("no warm-up period is a plain stable rate") {
    Warmup flat(Ramp(10, 1000, 0), 0);
    REQUIRE(Take(flat, 1, 0));
    REQUIRE(flat.Check(1, 0).retry_after_us == 100 * kMs);
    REQUIRE(Take(flat, 1, 100 * kMs));
    REQUIRE(flat.Check(1, 5 * kSec).verdict == Verdict::kAdmit);
    REQUIRE(Take(flat, 1, 5 * kSec));
    REQUIRE(flat.Check(1, 5 * kSec).retry_after_us == 100 * kMs);
  }
}

TEST_CASE("warmup: settle, usage, save/restore, reset", "[budget]") {
  Warmup w(Ramp(10, 1000, 1000), 0);
  REQUIRE(Take(w, 1, 0));  // next free at 280 ms

  SECTION("extra charge pushes the next free instant") {
    w.Settle(1, 0, 10);
    REQUIRE(w.next_free_us() == 520 * kMs);
  }

  SECTION("refund pulls it back, never before now") {
    w.Settle(-1, 0, 10);
    REQUIRE(w.next_free_us() == 180 * kMs);
    w.Settle(-100, 0, 10);
    REQUIRE(w.next_free_us() == 10);
    w.Settle(-100, 0, 20);
    REQUIRE(w.next_free_us() == 10);
  }

  SECTION("usage") {
    LimitUsage u = w.Usage(0);
    REQUIRE(u.limit == 10);
    REQUIRE(u.used == 3);
    REQUIRE(u.remaining == 7);
    REQUIRE(u.resets_in_us == 280 * kMs);
    u = w.Usage(kSec);
    REQUIRE(u.used == 0);
    REQUIRE(u.resets_in_us == 0);
  }

  SECTION("save/restore round trip") {
    std::vector<int64_t> saved = w.SaveState();
    REQUIRE(saved == std::vector<int64_t>{280 * kMs, 9'000'000});
    Warmup c(Ramp(10, 1000, 1000), 5 * kSec);
    REQUIRE(c.RestoreState(saved));
    REQUIRE(c.SaveState() == saved);
    REQUIRE(Take(c, 1, 280 * kMs));
    REQUIRE(c.next_free_us() == 520 * kMs);
    REQUIRE_FALSE(c.RestoreState({1}));
    REQUIRE_FALSE(c.RestoreState({1, -1}));
    REQUIRE(c.next_free_us() == 520 * kMs);
  }

  SECTION("reset is cold again") {
    for (int64_t t = 0; t < 3 * kSec; t += kMs) Take(w, 1, t);
    w.Reset(3 * kSec);
    REQUIRE(w.StoredPermits(3 * kSec) == Approx(10));
    REQUIRE(Take(w, 1, 3 * kSec));
    REQUIRE(w.Check(1, 3 * kSec).retry_after_us == 280 * kMs);
  }

  SECTION("reconfigure keeps the schedule, caps stored permits") {
    w.Reconfigure(Ramp(10, 1000, 500));  // max becomes 5
    REQUIRE(w.Check(1, 279 * kMs).verdict == Verdict::kDeny);
    REQUIRE(w.StoredPermits(280 * kMs) == Approx(5));
    REQUIRE(Take(w, 1, 280 * kMs));
  }
}

}  // namespace
}  // namespace brake
