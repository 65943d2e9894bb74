// Text conversions for brakectl: JSON values to display strings, and
// command-line words to validated numbers.
//
// Display: usd and other fractional values print with up to 6 decimals and
// no trailing zeros; durations in ms print as "340ms", "1.2s", "11h23m20s";
// absent or null values print as "-". Parsing: the Parse* functions accept
// exactly the text they describe and fail with a message suitable for a usage
// error (the caller prefixes the flag). Pure functions; any thread.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "common/human_text.h"

namespace brake::ctl {

using brake::FormatDecimal;  // common/human_text.h
using brake::FormatDurationMs;

// A JSON scalar for a table cell: strings as is, integers in full, floats
// via FormatDecimal, booleans as true/false, null as "-"; arrays and
// objects as compact JSON.
std::string FormatValue(const nlohmann::json& value);

// The member `key` of `object` formatted by FormatValue, or "-" when
// `object` is not an object or has no such member.
std::string FormatField(const nlohmann::json& object, std::string_view key);

// "k=v k=v" for an object (values by FormatValue), items of an array joined
// by ", ", other values by FormatValue.
std::string FormatInline(const nlohmann::json& value);

// A JSON duration in ms: a number via FormatDurationMs, otherwise "-".
std::string FormatDurationField(const nlohmann::json& object,
                                std::string_view key);

// The JSON text of `value`, compact, never throwing on invalid UTF-8 (bad
// bytes become U+FFFD).
std::string DumpJson(const nlohmann::json& value);

// Parse outcomes carry either the value or a message such as
// "must be an integer >= 0".
template <typename T>
struct Parsed {
  std::optional<T> value;
  std::string error;
};

// Decimal digits only, within int64.
Parsed<int64_t> ParseNonNegativeInt(std::string_view text);

// A finite decimal >= 0 ("2.5", "10", "0.15", "1e-3").
Parsed<double> ParseNonNegativeDecimal(std::string_view text);

// Milliseconds since the Unix epoch from "YYYY-MM-DD" (UTC midnight) or from
// an integer >= 0 taken as ms.
Parsed<int64_t> ParseSinceMs(std::string_view text);

}  // namespace brake::ctl
