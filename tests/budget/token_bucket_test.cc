#include "budget/token_bucket.h"
#include "tests/budget/limiter_helpers.h"

#include <catch2/catch.hpp>
#include <cstdint>
#include <algorithm>
#include <limits>
#include <random>

namespace brake {
namespace {

using limiter_test::kMs;
using limiter_test::kSec;
using limiter_test::Take;

LimitSpec Bucket(int64_t rate, int64_t per_ms, int64_t burst,
                 bool pay_later = false) {
  LimitSpec s;
  s.name = "rps";
  s.algorithm = Algorithm::kTokenBucket;
  s.rate = rate;
  s.per_ms = per_ms;
  s.burst = burst;
  s.pay_later = pay_later;
  return s;
}

// Check, and Charge when admitted, as the engine does.
TEST_CASE("token bucket: 100/s burst 100 known figures", "[budget]") {
  const int64_t t0 = 5 * kSec;
  TokenBucket b(Bucket(100, 1000, 100), t0);

  SECTION("starts full: 100 immediate grants, then one every 10 ms") {
    for (int i = 0; i < 100; ++i) REQUIRE(Take(b, 1, t0));
    Decision d = b.Check(1, t0);
    REQUIRE(d.verdict == Verdict::kDeny);
    REQUIRE(d.retry_after_us == 10 * kMs);
    REQUIRE_FALSE(Take(b, 1, t0 + 10 * kMs - 1));
    REQUIRE(Take(b, 1, t0 + 10 * kMs));
    REQUIRE_FALSE(Take(b, 1, t0 + 20 * kMs - 1));
    REQUIRE(Take(b, 1, t0 + 20 * kMs));
  }

  SECTION("a greedy caller over 10 s gets 1,100 +/- 1") {
    int64_t admitted = 0;
    for (int64_t t = t0; t <= t0 + 10 * kSec; t += 137) {
      while (Take(b, 1, t)) ++admitted;
    }
    REQUIRE(admitted >= 1099);
    REQUIRE(admitted <= 1101);
  }

  SECTION("burst 0 means rate") {
    TokenBucket z(Bucket(100, 1000, 0), t0);
    REQUIRE(z.Burst() == 100);
    REQUIRE(z.Check(100, t0).verdict == Verdict::kAdmit);
    REQUIRE(z.Check(101, t0).verdict == Verdict::kTooLarge);
  }

  SECTION("amount 0 is always admitted") {
    REQUIRE(Take(b, 100, t0));
    REQUIRE(b.Check(0, t0).verdict == Verdict::kAdmit);
    REQUIRE(b.Check(0, t0).retry_after_us == 0);
  }

  SECTION("too large without pay_later") {
    REQUIRE(b.Check(101, t0).verdict == Verdict::kTooLarge);
    REQUIRE(b.Check(100, t0).verdict == Verdict::kAdmit);
  }

  SECTION("idle time refills, capped at burst") {
    REQUIRE(Take(b, 100, t0));
    REQUIRE(b.StoredPermits(t0) == 0);
    REQUIRE(b.StoredPermits(t0 + 500 * kMs) == 50);
    REQUIRE(b.StoredPermits(t0 + 1 * kSec) == 100);
    REQUIRE(b.StoredPermits(t0 + 100 * kSec) == 100);
    REQUIRE(Take(b, 100, t0 + 100 * kSec));
    REQUIRE_FALSE(Take(b, 1, t0 + 100 * kSec));
  }
}

TEST_CASE("token bucket: retry_after is exact", "[budget]") {
  // Intervals that do not divide evenly: 3 per 1000 ms = 333,333.3 us each.
  struct Case {
    int64_t rate, per_ms, burst, drain, ask;
  };
  const Case cases[] = {
      {100, 1000, 100, 100, 1}, {100, 1000, 100, 100, 100},
      {3, 1000, 5, 5, 2},       {7, 60000, 7, 6, 3},
      {1, 1, 1, 1, 1},          {1000000, 1000, 10, 10, 10},
  };
  for (const Case& c : cases) {
    CAPTURE(c.rate, c.per_ms, c.burst, c.drain, c.ask);
    const int64_t t0 = 1234567;
    TokenBucket b(Bucket(c.rate, c.per_ms, c.burst), t0);
    REQUIRE(Take(b, c.drain, t0));
    Decision d = b.Check(c.ask, t0 + 1);
    REQUIRE(d.verdict == Verdict::kDeny);
    REQUIRE(d.retry_after_us > 0);
    REQUIRE(b.Check(c.ask, t0 + 1 + d.retry_after_us - 1).verdict ==
            Verdict::kDeny);
    REQUIRE(b.Check(c.ask, t0 + 1 + d.retry_after_us).verdict ==
            Verdict::kAdmit);
  }
}

TEST_CASE("token bucket: pay_later follows Guava's acquire", "[budget]") {
  const int64_t t0 = 0;
  TokenBucket b(Bucket(10, 1000, 10, /*pay_later=*/true), t0);

  SECTION("a request larger than burst is granted and paid later") {
    REQUIRE(Take(b, 30, t0));  // 10 stored, 20 borrowed = 2 s of debt
    REQUIRE(b.StoredPermits(t0) == -20);
    Decision d = b.Check(1, t0);
    REQUIRE(d.verdict == Verdict::kDeny);
    REQUIRE(d.retry_after_us == 2 * kSec);
    REQUIRE_FALSE(Take(b, 1, t0 + 2 * kSec - 1));
    // Debt-free: the next request is granted whatever its size.
    REQUIRE(Take(b, 5, t0 + 2 * kSec));
    REQUIRE(b.Check(1, t0 + 2 * kSec).retry_after_us == 500 * kMs);
  }

  SECTION("usage shows the debt") {
    REQUIRE(Take(b, 15, t0));
    LimitUsage u = b.Usage(t0);
    REQUIRE(u.limit == 10);
    REQUIRE(u.remaining == -5);
    REQUIRE(u.used == 15);
    REQUIRE(u.resets_in_us == 1500 * kMs);
  }
}

TEST_CASE("token bucket: settle, usage, save/restore, reset", "[budget]") {
  const int64_t t0 = 10 * kSec;
  TokenBucket b(Bucket(100, 1000, 100), t0);

  SECTION("usage of a full bucket") {
    LimitUsage u = b.Usage(t0);
    REQUIRE(u.limit == 100);
    REQUIRE(u.used == 0);
    REQUIRE(u.remaining == 100);
    REQUIRE(u.resets_in_us == 0);
  }

  SECTION("refund gives permits back, never above full") {
    REQUIRE(Take(b, 60, t0));
    b.Settle(-20, t0, t0);
    REQUIRE(b.StoredPermits(t0) == 60);
    b.Settle(-1000, t0, t0);
    REQUIRE(b.StoredPermits(t0) == 100);
    REQUIRE(b.Usage(t0).resets_in_us == 0);
    REQUIRE(Take(b, 100, t0));
    REQUIRE_FALSE(Take(b, 1, t0));
  }

  SECTION("extra charge drives into debt") {
    REQUIRE(Take(b, 90, t0));
    b.Settle(30, t0, t0 + 10);
    REQUIRE(b.StoredPermits(t0 + 10) == -20);
    Decision d = b.Check(1, t0 + 10);
    REQUIRE(d.verdict == Verdict::kDeny);
    REQUIRE(b.Check(1, t0 + 10 + d.retry_after_us).verdict == Verdict::kAdmit);
    REQUIRE(d.retry_after_us == 210 * kMs - 10);
  }

  SECTION("save/restore round trip") {
    REQUIRE(Take(b, 70, t0));
    std::vector<int64_t> saved = b.SaveState();
    TokenBucket c(Bucket(100, 1000, 100), t0 + 99 * kSec);
    REQUIRE(c.RestoreState(saved));
    REQUIRE(c.SaveState() == saved);
    REQUIRE(c.StoredPermits(t0) == 30);
    REQUIRE_FALSE(c.RestoreState({}));
    REQUIRE_FALSE(c.RestoreState({1, 2}));
    REQUIRE(c.SaveState() == saved);
  }

  SECTION("reset refills") {
    REQUIRE(Take(b, 100, t0));
    b.Reset(t0 + 1);
    REQUIRE(b.StoredPermits(t0 + 1) == 100);
  }

  SECTION("reconfigure keeps what was spent") {
    REQUIRE(Take(b, 100, t0));
    b.Reconfigure(Bucket(100, 1000, 500));
    REQUIRE(b.StoredPermits(t0) == 0);
    REQUIRE(b.StoredPermits(t0 + 2 * kSec) == 200);
    b.Reconfigure(Bucket(100, 1000, 50));
    REQUIRE(b.StoredPermits(t0 + 2 * kSec) == 50);
  }
}

TEST_CASE("token bucket: a new rate prices a single permit anew",
          "[budget]") {
  // The cost of one permit is kept beside the spec (the usual request asks
  // for one): it must follow every change of rate or period.
  const int64_t t0 = 5 * kSec;
  TokenBucket b(Bucket(100, 1000, 100), t0);
  CHECK(b.CostUs(1) == 10 * kMs);
  REQUIRE(Take(b, 100, t0));
  CHECK(b.Check(1, t0).retry_after_us == 10 * kMs);
  b.Reconfigure(Bucket(10, 1000, 100));
  CHECK(b.CostUs(1) == 100 * kMs);
  CHECK(b.CostUs(2) == 200 * kMs);
  CHECK(b.Check(1, t0).retry_after_us == 100 * kMs);
  b.Reconfigure(Bucket(3, 1000, 100));  // 333,333.3 us, rounded up
  CHECK(b.CostUs(1) == 333'334);
  CHECK(b.Check(1, t0).retry_after_us == 333'334);
  b.Reconfigure(Bucket(0, 1000, 100));  // no refill: never
  CHECK(b.CostUs(1) == std::numeric_limits<int64_t>::max());
  CHECK(b.Check(1, t0).verdict == Verdict::kTooLarge);
  b.Reconfigure(Bucket(100, 1000, 100));
  CHECK(b.Check(1, t0).retry_after_us == 10 * kMs);
}

TEST_CASE("token bucket: extreme values saturate", "[budget]") {
  constexpr int64_t kBig = std::numeric_limits<int64_t>::max();
  TokenBucket b(Bucket(1, kBig, kBig, /*pay_later=*/true), 0);
  REQUIRE(b.Check(1, 0).verdict == Verdict::kAdmit);
  b.Charge(kBig, 0);
  b.Charge(kBig, 0);
  Decision d = b.Check(1, 0);
  REQUIRE(d.verdict == Verdict::kDeny);
  REQUIRE(d.retry_after_us > 0);
  TokenBucket dead(Bucket(0, 1000, 0), 0);
  REQUIRE(dead.Check(1, 0).verdict == Verdict::kTooLarge);
  REQUIRE(dead.Check(0, 0).verdict == Verdict::kAdmit);
}

TEST_CASE("token bucket: stored permits as the formula gives them",
          "[budget]") {
  // min(burst, floor(elapsed * rate / per)), elapsed from the saved
  // empty_at clamped to a full bucket, by the saturating arithmetic of
  // common/sat_math.h: the shortcut for a full bucket must agree with the
  // division everywhere, saturated costs included.
  using namespace sat;
  constexpr int64_t kBig = std::numeric_limits<int64_t>::max();
  std::mt19937_64 rng(5);
  auto pick = [&](std::initializer_list<int64_t> edges, int64_t most) {
    if (rng() % 4 == 0) return *(edges.begin() + rng() % edges.size());
    return static_cast<int64_t>(rng() % static_cast<uint64_t>(most)) + 1;
  };
  size_t differ = 0, full = 0;
  for (int i = 0; i < 20000; ++i) {
    const int64_t rate = pick({1, 3, 1000000000, kBig}, 1000000);
    const int64_t per_ms = pick({1, 1000, kBig / 1000, kBig}, 100000);
    const int64_t burst = pick({0, 1, 7, kBig}, 1000000);
    TokenBucket b(Bucket(rate, per_ms, burst), 0);
    const int64_t cap = burst > 0 ? burst : rate;
    const int64_t cost = MulDivCeil(cap, MsToUs(per_ms), rate);
    int64_t now = 0;
    for (int k = 0; k < 4; ++k) {
      now += static_cast<int64_t>(rng() % 3000000);
      if (rng() % 2) b.Charge(static_cast<int64_t>(rng() % 50) + 1, now);
      const int64_t from = std::max(b.SaveState()[0], SatSub(now, cost));
      const int64_t want = std::min(
          MulDivFloor(SatSub(now, from), rate, MsToUs(per_ms)), cap);
      const int64_t got = b.StoredPermits(now);
      differ += got != want;
      full += got == cap;
    }
  }
  CHECK(differ == 0);
  CHECK(full > 1000);  // the shortcut was taken
}

}  // namespace
}  // namespace brake
