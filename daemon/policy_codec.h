// Policy codec: PROTOCOL.md's LIMIT and policy objects <-> LimitSpec/Policy,
// and the persisted form of leases.
//
// Parsing validates everything (types, bounds, which fields an algorithm
// takes) and names the offending field, e.g. "limits[1].window_ms: is
// required". A parsed policy keeps a canonical JSON text (what policy.get
// answers and what storage keeps), so a restart re-parses exactly what was
// accepted. Stateless; any thread.
#pragma once

#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "budget/engine.h"
#include "budget/limit_spec.h"
#include "common/status.h"

namespace brake {

// One LIMIT object; `field` names it in messages ("limits[0]").
Result<LimitSpec> ParseLimit(const nlohmann::json& j, const std::string& field);
// {"limits":[LIMIT...],"breaker":{...}}; `field` prefixes messages ("" for a
// request, "policies.user:*" for the config file). Limit names must be
// unique within a policy; keys other than limits and breaker are refused.
Result<Policy> ParsePolicy(const nlohmann::json& j, const std::string& field);
// Parses a policy from its canonical text (as stored).
Result<Policy> ParsePolicyText(std::string_view text);
// Refuses what `policy` asks of a scope that cannot do it: a BREAKER `loop`
// rule anywhere but a task (only a task's breaker sees fingerprints).
// `field` prefixes the message ("" for policy.set).
Status CheckPolicyScope(const std::string& scope, const Policy& policy,
                        const std::string& field);

// Cluster mode: refuses a limit whose algorithm has no shared form unless
// it is marked local (or shadow).
Status CheckClusterPolicy(const Policy& policy, const std::string& field);

nlohmann::json LimitToJson(const LimitSpec& spec);


}  // namespace brake
