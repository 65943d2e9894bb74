#include "ctl/format.h"

#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>

namespace brake::ctl {

using nlohmann::json;


std::string DumpJson(const json& value) {
  return value.dump(-1, ' ', false, json::error_handler_t::replace);
}

std::string FormatValue(const json& value) {
  switch (value.type()) {
    case json::value_t::null:
    case json::value_t::discarded:
      return "-";
    case json::value_t::string:
      return value.get_ref<const std::string&>();
    case json::value_t::boolean:
      return value.get<bool>() ? "true" : "false";
    case json::value_t::number_integer:
      return std::to_string(value.get<int64_t>());
    case json::value_t::number_unsigned:
      return std::to_string(value.get<uint64_t>());
    case json::value_t::number_float:
      return FormatDecimal(value.get<double>());
    default:
      return DumpJson(value);
  }
}

std::string FormatField(const json& object, std::string_view key) {
  if (!object.is_object()) return "-";
  auto it = object.find(key);
  return it == object.end() ? "-" : FormatValue(*it);
}

std::string FormatInline(const json& value) {
  std::string s;
  if (value.is_object()) {
    for (auto it = value.begin(); it != value.end(); ++it) {
      if (!s.empty()) s += ' ';
      s += it.key() + "=" + FormatValue(it.value());
    }
    return s.empty() ? "-" : s;
  }
  if (value.is_array()) {
    for (const auto& item : value) {
      if (!s.empty()) s += ", ";
      s += FormatInline(item);
    }
    return s.empty() ? "-" : s;
  }
  return FormatValue(value);
}


std::string FormatDurationField(const json& object, std::string_view key) {
  if (!object.is_object()) return "-";
  auto it = object.find(key);
  if (it == object.end() || !it->is_number()) return "-";
  if (it->is_number_float()) {
    double v = it->get<double>();
    if (!std::isfinite(v)) return "-";
    if (v > 9e18) v = 9e18;
    if (v < -9e18) v = -9e18;
    return FormatDurationMs(static_cast<int64_t>(std::llround(v)));
  }
  if (it->is_number_unsigned() &&
      it->get<uint64_t>() > static_cast<uint64_t>(INT64_MAX)) {
    return FormatDurationMs(INT64_MAX);
  }
  return FormatDurationMs(it->get<int64_t>());
}

Parsed<int64_t> ParseNonNegativeInt(std::string_view text) {
  const char* kMessage = "must be an integer >= 0";
  if (text.empty()) return {std::nullopt, kMessage};
  for (char c : text) {
    if (c < '0' || c > '9') return {std::nullopt, kMessage};
  }
  int64_t value = 0;
  auto [end, ec] =
      std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size()) {
    return {std::nullopt, "is out of range"};
  }
  return {value, ""};
}

Parsed<double> ParseNonNegativeDecimal(std::string_view text) {
  const char* kMessage = "must be a number >= 0";
  // strtod would accept "inf", "nan", hex and leading spaces; allow only
  // plain decimal notation.
  if (text.empty()) return {std::nullopt, kMessage};
  for (char c : text) {
    bool ok = (c >= '0' && c <= '9') || c == '.' || c == 'e' || c == 'E' ||
              c == '+' || c == '-';
    if (!ok) return {std::nullopt, kMessage};
  }
  if (text[0] < '0' || text[0] > '9') {
    if (text[0] != '.') return {std::nullopt, kMessage};
  }
  std::string copy(text);
  char* end = nullptr;
  double value = std::strtod(copy.c_str(), &end);
  if (end != copy.c_str() + copy.size() || !std::isfinite(value) || value < 0) {
    return {std::nullopt, kMessage};
  }
  return {value, ""};
}

Parsed<int64_t> ParseSinceMs(std::string_view text) {
  const char* kMessage = "must be a date YYYY-MM-DD or ms since the epoch";
  if (text.size() == 10 && text[4] == '-' && text[7] == '-') {
    auto number = [&](size_t pos, size_t len) -> int {
      int v = 0;
      for (size_t i = pos; i < pos + len; ++i) {
        if (text[i] < '0' || text[i] > '9') return -1;
        v = v * 10 + (text[i] - '0');
      }
      return v;
    };
    int y = number(0, 4), m = number(5, 2), d = number(8, 2);
    if (y < 0 || m < 0 || d < 0) return {std::nullopt, kMessage};
    std::chrono::year_month_day date{
        std::chrono::year(y), std::chrono::month(static_cast<unsigned>(m)),
        std::chrono::day(static_cast<unsigned>(d))};
    if (!date.ok() || y < 1970) return {std::nullopt, "is not a valid date"};
    auto days = std::chrono::sys_days(date).time_since_epoch().count();
    return {static_cast<int64_t>(days) * 86'400'000, ""};
  }
  Parsed<int64_t> ms = ParseNonNegativeInt(text);
  if (!ms.value) return {std::nullopt, kMessage};
  return ms;
}

}  // namespace brake::ctl
