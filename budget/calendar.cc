#include "budget/calendar.h"

#include <limits>

#include "common/sat_math.h"

namespace brake {

using sat::FloorDiv;
using sat::SatAdd;
using sat::SatMul;

// Both conversions count in 400-year eras of 146,097 days, with years
// starting on March 1st so that the leap day falls at the end of a year.
// See https://howardhinnant.github.io/date_algorithms.html.
int64_t DaysFromCivil(const CivilDate& date) {
  const int64_t m = date.month;
  const int64_t y = date.year - (m <= 2 ? 1 : 0);
  const int64_t era = (y >= 0 ? y : y - 399) / 400;
  const int64_t yoe = y - era * 400;  // [0, 399]
  const int64_t doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + date.day - 1;
  const int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;  // [0, 146096]
  return era * 146097 + doe - 719468;
}

CivilDate CivilFromDays(int64_t days) {
  const int64_t z = days + 719468;
  const int64_t era = (z >= 0 ? z : z - 146096) / 146097;
  const int64_t doe = z - era * 146097;  // [0, 146096]
  const int64_t yoe =
      (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;    // [0, 399]
  const int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);  // [0, 365]
  const int64_t mp = (5 * doy + 2) / 153;                       // [0, 11]
  CivilDate out;
  out.day = static_cast<int>(doy - (153 * mp + 2) / 5 + 1);
  out.month = static_cast<int>(mp < 10 ? mp + 3 : mp - 9);
  out.year = yoe + era * 400 + (out.month <= 2 ? 1 : 0);
  return out;
}

int WeekdayFromDays(int64_t days) {
  // 1970-01-01 was a Thursday (3 when Monday is 0).
  int64_t w = (days + 3) % 7;
  return static_cast<int>(w < 0 ? w + 7 : w);
}

namespace {

int64_t DaysToUs(int64_t days) { return SatMul(days, kUsPerDay); }

CivilDate FirstOfNextMonth(const CivilDate& d) {
  CivilDate next{d.year, d.month + 1, 1};
  if (next.month > 12) {
    next.month = 1;
    ++next.year;
  }
  return next;
}

}  // namespace

int64_t PeriodStartUs(Period period, int64_t now_us) {
  const int64_t days = FloorDiv(now_us, kUsPerDay);
  switch (period) {
    case Period::kHour:
      return SatMul(FloorDiv(now_us, kUsPerHour), kUsPerHour);
    case Period::kDay:
      return DaysToUs(days);
    case Period::kWeek:
      return DaysToUs(days - WeekdayFromDays(days));
    case Period::kMonth: {
      CivilDate d = CivilFromDays(days);
      d.day = 1;
      return DaysToUs(DaysFromCivil(d));
    }
    case Period::kTotal:
      break;
  }
  return std::numeric_limits<int64_t>::min();
}

int64_t PeriodEndUs(Period period, int64_t now_us) {
  switch (period) {
    case Period::kHour:
      return SatAdd(PeriodStartUs(period, now_us), kUsPerHour);
    case Period::kDay:
      return SatAdd(PeriodStartUs(period, now_us), kUsPerDay);
    case Period::kWeek:
      return SatAdd(PeriodStartUs(period, now_us), 7 * kUsPerDay);
    case Period::kMonth: {
      CivilDate d = CivilFromDays(FloorDiv(now_us, kUsPerDay));
      return DaysToUs(DaysFromCivil(FirstOfNextMonth(d)));
    }
    case Period::kTotal:
      break;
  }
  return std::numeric_limits<int64_t>::max();
}

}  // namespace brake
