// Numbers and durations as people read them, the same in brakectl's tables
// and in the messages braked writes (the HTTP front's denials).
//
// Decimals print with up to 6 places and no trailing zeros; durations in
// ms as "340ms", "1.2s", "11h23m20s". Pure functions; any thread.
#pragma once

#include <cstdint>
#include <string>

namespace brake {

// "1.5", "0.0123", "3", "0.000001"; rounds to 6 decimals; never "-0".
std::string FormatDecimal(double value);

// A duration: "0ms", "340ms", "1.2s", "59.999s", "1m", "11h23m20s",
// "2d3h". Negative values print as "-" followed by the magnitude.
std::string FormatDurationMs(int64_t ms);

}  // namespace brake
