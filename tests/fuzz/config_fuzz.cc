// Fuzz target: ParseConfig on arbitrary text.
//
// The config file is written by an admin, yet a typo must give an error that
// names the setting, never a crash, an exception or a config outside the
// settings table's bounds. Checked on every input:
//   - a failure is bad_json or bad_request with a non-empty message;
//   - a success holds every setting within its bounds, every policy under a
//     valid scope and re-parsing from its canonical text to the same limits,
//     breaker and text, every price within its bounds; a config compared with
//     itself has no fixed setting changed.
#include <cstddef>
#include <cstdint>
#include <string>

#include "daemon/config.h"
#include "daemon/json_fields.h"
#include "daemon/policy_codec.h"
#include "tests/fuzz/fuzz_check.h"

namespace {

void CheckRange(int64_t v, int64_t min, int64_t max, const char* name) {
  FUZZ_CHECK(v >= min && v <= max,
             std::string(name) + " = " + std::to_string(v));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  auto config = brake::ParseConfig(text);
  if (!config.ok()) {
    const brake::Status& s = config.status();
    FUZZ_CHECK(s.code() == brake::ErrorCode::kBadJson ||
                   s.code() == brake::ErrorCode::kBadRequest,
               s.ToString());
    FUZZ_CHECK(!s.message().empty(), "an error without a message");
    return 0;
  }
  const brake::Config& c = *config;
  for (int64_t uid : c.admin_uids) CheckRange(uid, 0, 4294967294, "admin_uid");
  CheckRange(c.socket_mode, 0, 0777, "socket_mode");
  CheckRange(c.flush_interval_ms, 1, 10000, "flush_interval_ms");
  CheckRange(c.lease_ttl_ms, 1000, 604800000, "lease_ttl_ms");
  CheckRange(c.max_line_bytes, 1024, 16777216, "max_line_bytes");
  CheckRange(c.max_connections, 1, 1000000, "max_connections");
  CheckRange(c.max_waiters_per_scope, 1, 1000000, "max_waiters_per_scope");
  CheckRange(c.max_output_bytes, 65536, 1073741824, "max_output_bytes");
  for (const auto& [scope, policy] : c.policies) {
    FUZZ_CHECK(brake::ValidateScope(scope, "scope").ok(), scope);
    auto again = brake::ParsePolicyText(policy.json);
    FUZZ_CHECK(again.ok(), policy.json + ": " + again.status().ToString());
    FUZZ_CHECK(again->json == policy.json, policy.json);
    FUZZ_CHECK(again->limits == policy.limits, policy.json);
    FUZZ_CHECK(again->breaker_json == policy.breaker_json, policy.json);
  }
  for (const auto& [model, price] : c.prices) {
    FUZZ_CHECK(brake::ValidateName(model, "model").ok(), model);
    // usd per million tokens in [0, 1e6], kept as nano-usd.
    CheckRange(price.input_nano_per_mtok, 0, 1'000'000'000'000'000,
               "input_usd_per_mtok");
    CheckRange(price.output_nano_per_mtok, 0, 1'000'000'000'000'000,
               "output_usd_per_mtok");
  }
  FUZZ_CHECK(brake::FixedSettingsChanged(c, c).empty(),
             "a config differs from itself");
  return 0;
}
