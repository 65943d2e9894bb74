// JSON field readers: typed, bounded access to fields of a request object.
//
// Every reader names the field in its error ("tokens: must be an integer
// between 0 and 1000000000000"), so that every bad_request says what was
// wrong. `field` is the full path used in messages ("limits[2].rate").
// Stateless; any thread.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "budget/pricing.h"
#include "common/json_depth.h"
#include "common/status.h"

namespace brake {

using json = nlohmann::json;

inline constexpr size_t kMaxNameBytes = 128;
// The longest value of a FieldKind::kString field (a lease, for one).
inline constexpr size_t kMaxStringBytes = 256;

// Non-empty, at most 128 bytes, no control characters (printable ASCII or
// UTF-8 beyond ASCII, except the C1 controls U+0080..U+009F).
Status ValidateName(std::string_view value, std::string_view field);
// A model in a price table: a name, or "*", the price of an acquire that
// names no model (kUnnamedModel).
Status ValidateModel(std::string_view value, std::string_view field);
// Whether ValidateName accepts `value`, without building a Status (the
// fast path asks it of every name).
bool IsValidName(std::string_view value);
// "global", or KIND:NAME with KIND user|task|resource and NAME a valid name
// or "*".
Status ValidateScope(std::string_view value, std::string_view field);

// Reads obj[key] as an integer in [min, max]: absent -> `fallback` (when
// given) or an error "KEY: is required"; fractional, non-numeric or out of
// range -> an error. `prefix` is prepended to the field name in messages.
Result<int64_t> ReadInt(const json& obj, const char* key, int64_t min,
                        int64_t max, std::optional<int64_t> fallback,
                        std::string_view prefix = "");
// A number (integer or fractional) in [min, max].
Result<double> ReadNumber(const json& obj, const char* key, double min,
                          double max, std::optional<double> fallback,
                          std::string_view prefix = "");
// A string; absent -> fallback (when given) or "is required".
Result<std::string> ReadString(const json& obj, const char* key,
                               std::optional<std::string> fallback,
                               std::string_view prefix = "");
// A name (see ValidateName); absent -> "" when optional.
Result<std::string> ReadName(const json& obj, const char* key, bool required,
                             std::string_view prefix = "");
Result<bool> ReadBool(const json& obj, const char* key, bool fallback,
                      std::string_view prefix = "");

// usd as a decimal number -> nano-usd, rounded to the nearest nano.
int64_t UsdToNano(double usd);
double NanoToUsd(int64_t nano);

}  // namespace brake
