// IntList: how limiter and breaker states (vectors of int64) are stored in a
// TEXT column: decimal integers separated by commas, e.g. "3,-1,1700000000".
//
// The empty vector is the empty string. Parsing is strict (no spaces, signs
// other than a leading '-', empty items or out-of-range values), because a
// state that does not read back exactly must not be served. Pure functions;
// any thread.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace brake::storage {

// Writes `values` to `out` (replacing its contents).
void EncodeIntList(std::span<const int64_t> values, std::string* out);

// The integers of `text`, or nullopt when `text` is not exactly what
// EncodeIntList would write for some vector (leading zeros and "-0" aside).
std::optional<std::vector<int64_t>> ParseIntList(std::string_view text);

}  // namespace brake::storage
