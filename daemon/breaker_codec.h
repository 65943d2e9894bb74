// Breaker codec: PROTOCOL.md's BREAKER object <-> breaker::BreakerSpec.
//
// Parsing validates types, bounds and field names (a misspelt rule is
// refused, not ignored) and names the offending field, e.g.
// "breaker.slow.ratio: must be a number between 0 and 1". Stateless.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "breaker/breaker_spec.h"
#include "common/status.h"

namespace brake {

Result<breaker::BreakerSpec> ParseBreaker(const nlohmann::json& j,
                                          const std::string& field);
nlohmann::json BreakerToJson(const breaker::BreakerSpec& spec);

}  // namespace brake
