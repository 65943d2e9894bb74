// Fuzz target: the policy codec (ParsePolicy, ParsePolicyText, ParseLimit)
// and the persisted lease form (DecodeLease) on arbitrary text.
//
// Policies arrive from peers (policy.set) and from the config file; leases
// come back from the database, where damage must read as an error, never as
// a crash. Checked on every input:
//   - a policy that parses has a canonical text that re-parses to the same
//     limits, breaker and text (what policy.get answers and what a restart
//     reads back); each of its limits re-parses from LimitToJson to itself;
//     a failure is bad_request with a message;
//   - ParsePolicyText agrees with ParsePolicy on the parsed text;
//   - a lease that decodes encodes to text that decodes to the same lease,
//     and that encoding is stable; one that does not decode is unavailable.
#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "budget/lease.h"
#include "daemon/json_fields.h"
#include "daemon/lease_codec.h"
#include "daemon/policy_codec.h"
#include "tests/fuzz/fuzz_check.h"

namespace {

using nlohmann::json;

// Returns whether `j` parsed as a policy.
bool CheckPolicy(const json& j) {
  auto policy = brake::ParsePolicy(j, "");
  if (!policy.ok()) {
    FUZZ_CHECK(policy.status().code() == brake::ErrorCode::kBadRequest,
               policy.status().ToString());
    FUZZ_CHECK(!policy.status().message().empty(), "no message");
    return false;
  }
  auto again = brake::ParsePolicyText(policy->json);
  FUZZ_CHECK(again.ok(), policy->json + ": " + again.status().ToString());
  FUZZ_CHECK(again->json == policy->json,
             policy->json + " re-parsed as " + again->json);
  FUZZ_CHECK(again->limits == policy->limits, policy->json);
  FUZZ_CHECK(again->breaker_json == policy->breaker_json, policy->json);
  for (size_t i = 0; i < policy->limits.size(); ++i) {
    const brake::LimitSpec& spec = policy->limits[i];
    json limit = brake::LimitToJson(spec);
    auto back = brake::ParseLimit(limit, "limits[" + std::to_string(i) + "]");
    FUZZ_CHECK(back.ok(), limit.dump() + ": " + back.status().ToString());
    FUZZ_CHECK(*back == spec, limit.dump());
  }
  return true;
}

std::vector<std::string> Names(const brake::Lease& l) {
  return l.names != nullptr ? *l.names : std::vector<std::string>();
}

void CheckLease(std::string_view text) {
  // A row's id comes with it; format 1 carries its own.
  auto lease = brake::DecodeLease("fuzz-1", text);
  if (!lease.ok()) {
    FUZZ_CHECK(lease.status().code() == brake::ErrorCode::kUnavailable,
               lease.status().ToString());
    return;
  }
  const std::string encoded = brake::EncodeLease(*lease);
  auto again = brake::DecodeLease(lease->id(), encoded);
  FUZZ_CHECK(again.ok(), "an encoded lease does not decode: " + encoded);
  FUZZ_CHECK(brake::EncodeLease(*again) == encoded,
             "lease encoding is not stable: " + encoded);
  const brake::Lease& a = *lease;
  const brake::Lease& b = *again;
  FUZZ_CHECK(a.id() == b.id() && a.user() == b.user() && a.task() == b.task() &&
                 a.parent() == b.parent() && a.resource() == b.resource() &&
                 a.model() == b.model() && a.fingerprint() == b.fingerprint() &&
                 a.requests == b.requests && a.tokens == b.tokens &&
                 a.usd_nano == b.usd_nano &&
                 a.granted_at_us == b.granted_at_us &&
                 a.expires_at_us == b.expires_at_us && Names(a) == Names(b) &&
                 a.reserved == b.reserved &&
                 a.charges.size() == b.charges.size(),
             "lease changed in a round trip: " + encoded);
  for (size_t i = 0; i < a.charges.size(); ++i) {
    const brake::LeaseCharge& x = a.charges[i];
    const brake::LeaseCharge& y = b.charges[i];
    FUZZ_CHECK(a.ScopeOf(x) == b.ScopeOf(y) && x.limit == y.limit &&
                   x.resource == y.resource && x.amount == y.amount,
               "charge changed in a round trip: " + encoded);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  auto from_text = brake::ParsePolicyText(text);
  if (j.is_discarded()) {
    FUZZ_CHECK(!from_text.ok(), "invalid JSON parsed as a policy");
  } else {
    FUZZ_CHECK(from_text.ok() == CheckPolicy(j),
               "ParsePolicyText disagrees with ParsePolicy");
    // A bare LIMIT, or the LIMITs of an array, as a policy's items.
    const bool bare_limit = j.is_object() && !j.contains("limits") &&
                            !j.contains("breaker") && !j.empty();
    // Copying a deeply nested value recurses (nlohmann-json issue #5387), so
    // only shallow inputs are wrapped into a policy.
    if ((bare_limit || j.is_array()) && !brake::NestedDeeperThan(text, 32)) {
      json limits = json::array();
      if (j.is_object()) {
        limits.push_back(j);
      } else {
        limits = j;
      }
      json policy = json::object();
      policy["limits"] = std::move(limits);
      CheckPolicy(policy);
    }
  }
  CheckLease(text);
  return 0;
}
