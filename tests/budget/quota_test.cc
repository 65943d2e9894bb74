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
    REQUIRE(Take(q, 5 * kNanoUsdPerUsd, c.boundary_us - 1));
    Decision d = q.Check(1, c.boundary_us - 1);
    REQUIRE(d.verdict == Verdict::kDeny);
    REQUIRE(d.retry_after_us == 1);
    REQUIRE(q.Usage(c.boundary_us - 1).resets_in_us == 1);
    REQUIRE(Take(q, 5 * kNanoUsdPerUsd, c.boundary_us));
    REQUIRE(q.period_start_us() == c.boundary_us);
  }
}

TEST_CASE("quota: admission", "[budget]") {
  const int64_t t = QuotaAt(2024, 3, 10, 12);
  Quota q(Budget(100, Period::kDay), t);

  SECTION("too large, fits, exhausted") {
    REQUIRE(q.Check(101, t).verdict == Verdict::kTooLarge);
    REQUIRE(Take(q, 60, t));
    Decision d = q.Check(41, t);
    REQUIRE(d.verdict == Verdict::kDeny);
    REQUIRE(d.retry_after_us == 12 * kUsPerHour);
    REQUIRE(Take(q, 40, t));
    REQUIRE(q.Check(1, t).verdict == Verdict::kDeny);
  }

  SECTION("amount 0 is admitted until the quota is exhausted") {
    REQUIRE(q.Check(0, t).verdict == Verdict::kAdmit);
    REQUIRE(Take(q, 99, t));
    REQUIRE(q.Check(0, t).verdict == Verdict::kAdmit);
    REQUIRE(Take(q, 1, t));
    Decision d = q.Check(0, t);
    REQUIRE(d.verdict == Verdict::kDeny);
    REQUIRE(d.retry_after_us == 12 * kUsPerHour);
  }

  SECTION("total never resets") {
    Quota total(Budget(10, Period::kTotal), t);
    REQUIRE(Take(total, 10, t));
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
  REQUIRE(Take(q, 80, t));

  SECTION("refund within the period") {
    q.Settle(-30, t, t + 1);
    REQUIRE(q.count() == 50);
    q.Settle(-300, t, t + 1);
    REQUIRE(q.count() == 0);
  }

  SECTION("refund to a past period is dropped") {
    REQUIRE(Take(q, 10, QuotaAt(2024, 3, 11, 1)));
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
    REQUIRE(Take(q, 100, QuotaAt(2024, 3, 11)));
  }
}

TEST_CASE("quota: usage, save/restore, reset, reconfigure", "[budget]") {
  const int64_t t = QuotaAt(2024, 3, 10, 6);
  Quota q(Budget(100, Period::kDay), t);
  REQUIRE(Take(q, 25, t));

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

}  // namespace
}  // namespace brake
