#include "budget/calendar.h"

#include <catch2/catch.hpp>
#include <cstdint>
#include <limits>

namespace brake {
namespace {

constexpr int64_t kSecUs = 1'000'000;

TEST_CASE("calendar: known dates", "[budget]") {
  // Reference values from Python's datetime.
  struct Case {
    CivilDate date;
    int64_t days;
    int weekday;  // Monday = 0
  };
  const Case cases[] = {
      {{1970, 1, 1}, 0, 3},        {{1969, 12, 29}, -3, 0},
      {{2000, 3, 1}, 11017, 2},    {{2024, 2, 29}, 19782, 3},
      {{2024, 3, 1}, 19783, 4},    {{2023, 12, 31}, 19722, 6},
      {{2024, 1, 1}, 19723, 0},    {{1900, 3, 1}, -25508, 3},
      {{2100, 2, 28}, 47540, 6},   {{2100, 3, 1}, 47541, 0},
      {{1600, 2, 29}, -135081, 1}, {{2025, 6, 2}, 20241, 0},
  };
  for (const Case& c : cases) {
    CAPTURE(c.date.year, c.date.month, c.date.day);
    REQUIRE(DaysFromCivil(c.date) == c.days);
    REQUIRE(CivilFromDays(c.days) == c.date);
    REQUIRE(WeekdayFromDays(c.days) == c.weekday);
  }
}

TEST_CASE("calendar: consecutive days walk the calendar", "[budget]") {
  const int kDaysIn[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  CivilDate expect{1599, 1, 1};
  for (int64_t days = DaysFromCivil(expect); days < 200'000; ++days) {
    CivilDate got = CivilFromDays(days);
    if (got != expect) {
      CAPTURE(days, expect.year, expect.month, expect.day);
      REQUIRE(got == expect);
    }
    if (DaysFromCivil(got) != days) REQUIRE(DaysFromCivil(got) == days);
    const bool leap = (expect.year % 4 == 0 && expect.year % 100 != 0) ||
                      expect.year % 400 == 0;
    int len = kDaysIn[expect.month - 1] + (expect.month == 2 && leap ? 1 : 0);
    if (++expect.day > len) {
      expect.day = 1;
      if (++expect.month > 12) {
        expect.month = 1;
        ++expect.year;
      }
    }
  }
}

int64_t At(int64_t y, int m, int d, int64_t h = 0, int64_t min = 0,
           int64_t s = 0) {
  return DaysFromCivil({y, m, d}) * kUsPerDay + h * kUsPerHour +
         (min * 60 + s) * kSecUs;
}

TEST_CASE("calendar: period boundaries", "[budget]") {
  REQUIRE(At(2024, 2, 29, 13, 45, 10) == 1709214310 * kSecUs);
  struct Case {
    Period period;
    int64_t now_us, start_us, end_us;
  };
  const Case cases[] = {
      // hour
      {Period::kHour, At(2024, 2, 29, 13, 45, 10), At(2024, 2, 29, 13),
       At(2024, 2, 29, 14)},
      {Period::kHour, At(2023, 12, 31, 23, 59, 59), At(2023, 12, 31, 23),
       At(2024, 1, 1)},
      {Period::kHour, At(2024, 1, 1), At(2024, 1, 1), At(2024, 1, 1, 1)},
      {Period::kHour, At(2024, 1, 1) - 1, At(2023, 12, 31, 23), At(2024, 1, 1)},
      // day
      {Period::kDay, At(2024, 2, 28, 23, 59, 59), At(2024, 2, 28),
       At(2024, 2, 29)},
      {Period::kDay, At(2024, 2, 29), At(2024, 2, 29), At(2024, 3, 1)},
      {Period::kDay, At(2023, 2, 28, 12), At(2023, 2, 28), At(2023, 3, 1)},
      {Period::kDay, -1, -kUsPerDay, 0},
      // week: Monday 00:00 UTC
      {Period::kWeek, At(2024, 1, 1), At(2024, 1, 1), At(2024, 1, 8)},
      {Period::kWeek, At(2024, 1, 1) - 1, At(2023, 12, 25), At(2024, 1, 1)},
      {Period::kWeek, At(2024, 2, 29, 12), At(2024, 2, 26), At(2024, 3, 4)},
      {Period::kWeek, 0, At(1969, 12, 29), At(1970, 1, 5)},
      {Period::kWeek, At(2025, 6, 8, 23, 59, 59), At(2025, 6, 2),
       At(2025, 6, 9)},
      // month
      {Period::kMonth, At(2024, 2, 29, 23, 59, 59), At(2024, 2, 1),
       At(2024, 3, 1)},
      {Period::kMonth, At(2023, 2, 28, 23), At(2023, 2, 1), At(2023, 3, 1)},
      {Period::kMonth, At(2100, 2, 28), At(2100, 2, 1), At(2100, 3, 1)},
      {Period::kMonth, At(2000, 2, 29), At(2000, 2, 1), At(2000, 3, 1)},
      {Period::kMonth, At(2023, 12, 31, 23, 59, 59), At(2023, 12, 1),
       At(2024, 1, 1)},
      {Period::kMonth, At(2024, 1, 1), At(2024, 1, 1), At(2024, 2, 1)},
      {Period::kMonth, At(2024, 4, 30, 12), At(2024, 4, 1), At(2024, 5, 1)},
      {Period::kMonth, -1, At(1969, 12, 1), 0},
  };
  for (const Case& c : cases) {
    CAPTURE(static_cast<int>(c.period), c.now_us);
    REQUIRE(PeriodStartUs(c.period, c.now_us) == c.start_us);
    REQUIRE(PeriodEndUs(c.period, c.now_us) == c.end_us);
  }
}

TEST_CASE("calendar: total and extremes", "[budget]") {
  constexpr int64_t kLo = std::numeric_limits<int64_t>::min();
  constexpr int64_t kHi = std::numeric_limits<int64_t>::max();
  REQUIRE(PeriodStartUs(Period::kTotal, 12345) == kLo);
  REQUIRE(PeriodEndUs(Period::kTotal, 12345) == kHi);
  for (Period p :
       {Period::kHour, Period::kDay, Period::kWeek, Period::kMonth}) {
    CAPTURE(static_cast<int>(p));
    REQUIRE(PeriodEndUs(p, kHi - 1) == kHi);
    REQUIRE(PeriodStartUs(p, kHi) <= kHi);
    REQUIRE(PeriodStartUs(p, kLo + 1) == kLo);
    REQUIRE(PeriodEndUs(p, kLo + 1) > kLo);
  }
}

}  // namespace
}  // namespace brake
