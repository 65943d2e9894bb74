#include "budget/quota.h"
#include "tests/budget/limiter_helpers.h"

#include <catch2/catch.hpp>
#include <cstdint>
#include <vector>

#include "budget/calendar.h"

namespace brake {
namespace {

LimitSpec Budget(int64_t limit, Period period) {
  LimitSpec s;
  s.name = "daily";
  s.resource = Resource::kUsd;
  s.algorithm = Algorithm::kQuota;
  s.limit = limit;
  s.period = period;
  return s;
}

int64_t QuotaAt(int64_t y, int m, int d, int64_t h = 0) {
  return DaysFromCivil({y, m, d}) * kUsPerDay + h * kUsPerHour;
}

using limiter_test::Spend;
using limiter_test::Take;

TEST_CASE("quota: resets exactly at UTC period boundaries", "[budget]") {
  // Spend it all one microsecond before the boundary: denied until the
  // boundary, admitted exactly at it.
  struct Case {
    Period period;
    int64_t spend_at_us, boundary_us;
  };
  const Case cases[] = {
      {Period::kHour, QuotaAt(2024, 2, 29, 13), QuotaAt(2024, 2, 29, 14)},
      {Period::kHour, QuotaAt(2023, 12, 31, 23), QuotaAt(2024, 1, 1)},
      {Period::kDay, QuotaAt(2024, 2, 28, 5), QuotaAt(2024, 2, 29)},
      {Period::kDay, QuotaAt(2024, 2, 29, 5), QuotaAt(2024, 3, 1)},
      {Period::kDay, QuotaAt(2023, 2, 28, 5), QuotaAt(2023, 3, 1)},
      {Period::kDay, QuotaAt(2023, 12, 31), QuotaAt(2024, 1, 1)},
      {Period::kWeek, QuotaAt(2023, 12, 28), QuotaAt(2024, 1, 1)},  // Thu -> Mon
      {Period::kWeek, QuotaAt(2024, 2, 26), QuotaAt(2024, 3, 4)},
      {Period::kMonth, QuotaAt(2024, 2, 10), QuotaAt(2024, 3, 1)},  // leap February
      {Period::kMonth, QuotaAt(2023, 2, 10), QuotaAt(2023, 3, 1)},
      {Period::kMonth, QuotaAt(2100, 2, 10), QuotaAt(2100, 3, 1)},  // not a leap year
      {Period::kMonth, QuotaAt(2000, 2, 10), QuotaAt(2000, 3, 1)},  // a leap year
      {Period::kMonth, QuotaAt(2023, 12, 1), QuotaAt(2024, 1, 1)},  // Dec -> Jan
      {Period::kMonth, QuotaAt(2024, 4, 15), QuotaAt(2024, 5, 1)},
  };
  for (const Case& c : cases) {
    CAPTURE(static_cast<int>(c.period), c.spend_at_us, c.boundary_us);
    Quota q(Budget(5 * kNanoUsdPerUsd, c.period), c.spend_at_us);
    REQUIRE(Spend(q, 5 * kNanoUsdPerUsd, c.boundary_us - 1));
    Decision d = q.Check(1, c.boundary_us - 1);
    REQUIRE(d.verdict == Verdict::kDeny);
    REQUIRE(d.retry_after_us == 1);
    REQUIRE(q.Usage(c.boundary_us - 1).resets_in_us == 1);
    REQUIRE(Spend(q, 5 * kNanoUsdPerUsd, c.boundary_us));
    REQUIRE(q.period_start_us() == c.boundary_us);
  }
}

TEST_CASE("quota: admission", "[budget]") {
  const int64_t t = QuotaAt(2024, 3, 10, 12);
  Quota q(Budget(100, Period::kDay), t);

  SECTION("too large, fits, exhausted") {
    REQUIRE(q.Check(101, t).verdict == Verdict::kTooLarge);
    REQUIRE(Spend(q, 60, t));
    Decision d = q.Check(41, t);
    REQUIRE(d.verdict == Verdict::kDeny);
    REQUIRE(d.retry_after_us == 12 * kUsPerHour);
    REQUIRE(Spend(q, 40, t));
    REQUIRE(q.Check(1, t).verdict == Verdict::kDeny);
  }

  SECTION("amount 0 is admitted until the quota is exhausted") {
    REQUIRE(q.Check(0, t).verdict == Verdict::kAdmit);
    REQUIRE(Spend(q, 99, t));
    REQUIRE(q.Check(0, t).verdict == Verdict::kAdmit);
    REQUIRE(Spend(q, 1, t));
    Decision d = q.Check(0, t);
    REQUIRE(d.verdict == Verdict::kDeny);
    REQUIRE(d.retry_after_us == 12 * kUsPerHour);
  }

  SECTION("total never resets") {
    Quota total(Budget(10, Period::kTotal), t);
    REQUIRE(Spend(total, 10, t));
    Decision d = total.Check(1, t + 1000 * kUsPerDay);
    REQUIRE(d.verdict == Verdict::kDeny);
    REQUIRE(d.retry_after_us == kNever);
    LimitUsage u = total.Usage(t);
    REQUIRE(u.resets_in_us == kNever);
    REQUIRE(u.used == 10);
    REQUIRE(u.remaining == 0);
    REQUIRE(total.Check(11, t).verdict == Verdict::kTooLarge);
  }
}

TEST_CASE("quota: settle", "[budget]") {
  const int64_t t = QuotaAt(2024, 3, 10, 23);
  Quota q(Budget(100, Period::kDay), t);
  REQUIRE(Spend(q, 80, t));

  SECTION("refund within the period") {
    q.Settle(-30, t, t + 1);
    REQUIRE(q.count() == 50);
    q.Settle(-300, t, t + 1);
    REQUIRE(q.count() == 0);
  }

  SECTION("refund to a past period is dropped") {
    REQUIRE(Spend(q, 10, QuotaAt(2024, 3, 11, 1)));
    q.Settle(-30, t, QuotaAt(2024, 3, 11, 2));
    REQUIRE(q.count() == 10);
  }

  SECTION("extra charge may exceed the limit, then denies until reset") {
    q.Settle(50, t, t + 1);
    LimitUsage u = q.Usage(t + 1);
    REQUIRE(u.used == 130);
    REQUIRE(u.remaining == -30);
    REQUIRE(u.resets_in_us == kUsPerHour - 1);
    Decision d = q.Check(1, t + 1);
    REQUIRE(d.verdict == Verdict::kDeny);
    REQUIRE(d.retry_after_us == kUsPerHour - 1);
    REQUIRE(q.Check(0, t + 1).verdict == Verdict::kDeny);
    REQUIRE(Spend(q, 100, QuotaAt(2024, 3, 11)));
  }
}

TEST_CASE("quota: usage, save/restore, reset, reconfigure", "[budget]") {
  const int64_t t = QuotaAt(2024, 3, 10, 6);
  Quota q(Budget(100, Period::kDay), t);
  REQUIRE(Spend(q, 25, t));

  SECTION("usage") {
    LimitUsage u = q.Usage(t);
    REQUIRE(u.limit == 100);
    REQUIRE(u.used == 25);
    REQUIRE(u.remaining == 75);
    REQUIRE(u.resets_in_us == 18 * kUsPerHour);
    u = q.Usage(QuotaAt(2024, 3, 11, 1));
    REQUIRE(u.used == 0);
    REQUIRE(u.resets_in_us == 23 * kUsPerHour);
  }

  SECTION("save/restore") {
    std::vector<int64_t> saved = q.SaveState();
    REQUIRE(saved == std::vector<int64_t>{QuotaAt(2024, 3, 10), 25});
    Quota c(Budget(100, Period::kDay), t);
    REQUIRE(c.RestoreState(saved));
    REQUIRE(c.SaveState() == saved);
    REQUIRE(c.Check(76, t).verdict == Verdict::kDeny);
    REQUIRE_FALSE(c.RestoreState({}));
    REQUIRE_FALSE(c.RestoreState({0, -5}));
    REQUIRE_FALSE(c.RestoreState({0, 5, 6}));
    REQUIRE(c.SaveState() == saved);
  }

  SECTION("reset") {
    q.Reset(t);
    REQUIRE(q.count() == 0);
  }

  SECTION("reconfigure: raising the cap does not forgive today's spend") {
    q.Reconfigure(Budget(200, Period::kDay));
    REQUIRE(q.Usage(t).used == 25);
    REQUIRE(q.Check(175, t).verdict == Verdict::kAdmit);
    REQUIRE(q.Check(176, t).verdict == Verdict::kDeny);
  }

  SECTION("reconfigure day -> month keeps the count for the month") {
    q.Reconfigure(Budget(100, Period::kMonth));
    REQUIRE(q.Usage(QuotaAt(2024, 3, 20)).used == 25);
    REQUIRE(q.Usage(QuotaAt(2024, 4, 1)).used == 0);
    REQUIRE(q.period_start_us() == QuotaAt(2024, 4, 1));
  }
}

TEST_CASE("quota: held is not spent", "[budget]") {
  const int64_t t = QuotaAt(2024, 3, 10, 12);
  Quota q(Budget(100, Period::kDay), t);
  // A lease that took 2 s from grant to settlement spent 10.
  REQUIRE(Take(q, 10, t - 2 * limiter_test::kSec));
  q.Release(10, t - 2 * limiter_test::kSec, t);
  REQUIRE(Take(q, 80, t));  // a lease holds 80

  SECTION("over the count but within the spent part: held, with a hint") {
    Decision d = q.Check(20, t + 1);
    REQUIRE(d.verdict == Verdict::kHeld);
    REQUIRE(d.retry_after_us == 2 * limiter_test::kSec);  // as the last took
    LimitUsage u = q.Usage(t + 1);
    REQUIRE(u.used == 10);
    REQUIRE(u.held == 80);
    REQUIRE(u.remaining == 10);
    REQUIRE(q.Check(10, t + 1).verdict == Verdict::kAdmit);
  }

  SECTION("over what is unspent: spent, until the period ends") {
    Decision d = q.Check(91, t + 1);
    REQUIRE(d.verdict == Verdict::kDeny);
    REQUIRE(q.Usage(t + 1).held == 80);
    REQUIRE(d.retry_after_us == 12 * kUsPerHour - 1);
  }

  SECTION("the lease settles below its reservation: room comes back") {
    q.Settle(-70, t, t + 3 * limiter_test::kSec);
    q.Release(80, t, t + 3 * limiter_test::kSec);
    REQUIRE(q.held() == 0);
    REQUIRE(q.Usage(t + 3 * limiter_test::kSec).used == 20);
    REQUIRE(Take(q, 80, t + 3 * limiter_test::kSec));
    // The hint moves an eighth of the way to what this lease took (3 s).
    Decision d = q.Check(1, t + 3 * limiter_test::kSec);
    REQUIRE(d.verdict == Verdict::kHeld);
    REQUIRE(d.retry_after_us == 2 * limiter_test::kSec + limiter_test::kSec / 8);
  }

  SECTION("before any release, the hint is a second") {
    Quota fresh(Budget(100, Period::kDay), t);
    REQUIRE(Take(fresh, 100, t));
    REQUIRE(fresh.Check(1, t).retry_after_us == limiter_test::kSec);
  }

  SECTION("a lease of the past period holds nothing now") {
    const int64_t next = QuotaAt(2024, 3, 11, 1);
    REQUIRE(q.Usage(next).held == 0);
    REQUIRE(Take(q, 50, next));
    q.Release(80, t, next + 1);  // the old lease ends
    REQUIRE(q.held() == 50);
  }

  SECTION("a reset forgets what earlier leases hold") {
    q.Reset(t + 5);
    REQUIRE(Take(q, 30, t + 6));
    q.Release(80, t, t + 7);  // charged before the reset
    REQUIRE(q.held() == 30);
    q.Release(30, t + 6, t + 8);
    REQUIRE(q.held() == 0);
  }

  SECTION("restored: the state without what is held, then Hold per lease") {
    Quota c(Budget(100, Period::kDay), t);
    REQUIRE(c.RestoreState(q.SaveState()));
    REQUIRE(c.held() == 0);
    REQUIRE(c.Check(20, t + 1).verdict == Verdict::kDeny);
    c.Hold(80, t, t + 1);
    c.Hold(5, QuotaAt(2024, 3, 9), t + 1);  // of an ended period: not held
    REQUIRE(c.held() == 80);
    REQUIRE(c.Check(20, t + 1).verdict == Verdict::kHeld);
  }
}

}  // namespace
}  // namespace brake
