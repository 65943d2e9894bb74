// Calendar: UTC period boundaries for quotas.
//
// Converts between days since the Unix epoch and proleptic Gregorian dates
// (Howard Hinnant's days_from_civil / civil_from_days), and finds the start
// and end of the hour, day, week (Monday 00:00 UTC) or month holding an
// instant given in microseconds since the epoch. Pure functions; any thread.
#pragma once

#include <cstdint>

#include "budget/limit_spec.h"

namespace brake {

inline constexpr int64_t kUsPerHour = int64_t{3'600'000'000};
inline constexpr int64_t kUsPerDay = 24 * kUsPerHour;

struct CivilDate {
  int64_t year = 1970;
  int month = 1;  // 1..12
  int day = 1;    // 1..31

  bool operator==(const CivilDate&) const = default;
};

// Days since 1970-01-01 of `date` (negative before). `date` must be valid.
int64_t DaysFromCivil(const CivilDate& date);
// The date `days` after 1970-01-01.
CivilDate CivilFromDays(int64_t days);
// 0 for Monday .. 6 for Sunday.
int WeekdayFromDays(int64_t days);

// Start of the period holding `now_us` (microseconds since the epoch), and
// the start of the next one. kTotal never starts or ends: its start is the
// lowest int64 and its end the highest. Saturates at the int64 bounds.
int64_t PeriodStartUs(Period period, int64_t now_us);
int64_t PeriodEndUs(Period period, int64_t now_us);

}  // namespace brake
