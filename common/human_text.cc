#include "common/human_text.h"

#include <cmath>
#include <cstdio>
#include <limits>

namespace brake {

std::string FormatDecimal(double value) {
  if (!std::isfinite(value))
    return std::isnan(value) ? "nan" : (value > 0 ? "inf" : "-inf");
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.6f", value);
  std::string s(buf);
  if (s.find('.') != std::string::npos) {
    while (s.back() == '0') s.pop_back();
    if (s.back() == '.') s.pop_back();
  }
  if (s == "-0") s = "0";
  return s;
}

std::string FormatDurationMs(int64_t ms) {
  if (ms < 0) {
    // Negating INT64_MIN overflows; it is not a real duration anyway.
    if (ms == std::numeric_limits<int64_t>::min()) ++ms;
    // Appending, not "-" + string: GCC 12 warns falsely (-Wrestrict) on that.
    std::string s(1, '-');
    s += FormatDurationMs(-ms);
    return s;
  }
  if (ms < 1000) return std::to_string(ms) + "ms";
  if (ms < 60'000) {
    std::string s = FormatDecimal(static_cast<double>(ms) / 1000.0);
    return s + "s";
  }
  // Past a minute, seconds are precise enough.
  int64_t seconds = ms / 1000;
  const int64_t days = seconds / 86400;
  seconds %= 86400;
  const int64_t hours = seconds / 3600;
  seconds %= 3600;
  const int64_t minutes = seconds / 60;
  seconds %= 60;
  std::string s;
  if (days > 0) s += std::to_string(days) + "d";
  if (hours > 0) s += std::to_string(hours) + "h";
  if (minutes > 0) s += std::to_string(minutes) + "m";
  if (seconds > 0) s += std::to_string(seconds) + "s";
  return s;
}

}  // namespace brake
