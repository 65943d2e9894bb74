// request_fuzz's fixture: the config every input starts from (policies of
// every algorithm, breakers with every rule, prices, uid_users), parsed once,
// and which user each peer may act as.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>

#include "daemon/breaker_codec.h"
#include "daemon/config.h"
#include "daemon/dispatcher.h"
#include "daemon/policy_codec.h"
#include "tests/fuzz/fuzz_check.h"

namespace brake::fuzz {

inline constexpr uint32_t kMappedUid = 1000;    // may act as alice and bob
inline constexpr uint32_t kUnmappedUid = 1001;  // may act as nobody

// Policies of every algorithm and breakers with every rule, so that the
// fuzzer meets limiters and breakers without first having to set them.
inline constexpr char kConfigHead[] = R"({
  "lease_ttl_ms": 60000,
  "max_line_bytes": 1024,
  "policies": {
    "global": {"limits": [
      {"name": "rps", "resource": "requests", "algorithm": "token_bucket",
       "rate": 1000, "per_ms": 1000, "burst": 40}]},
    "user:*": {"limits": [
      {"name": "daily", "resource": "usd", "algorithm": "quota",
       "limit": 5, "period": "day"},
      {"name": "tpm", "resource": "tokens", "algorithm": "sliding_log",
       "limit": 100000, "window_ms": 60000}]},
    "user:carol": {"limits": [
      {"name": "tokens", "resource": "tokens", "algorithm": "token_bucket",
       "rate": 100, "per_ms": 1000, "burst": 1000, "pay_later": true},
      {"name": "ramp", "resource": "requests", "algorithm": "warmup",
       "rate": 50, "per_ms": 1000, "warmup_ms": 10000, "cold_factor": 3},
      {"name": "shadow", "resource": "requests", "algorithm": "fixed_window",
       "limit": 1, "window_ms": 1000, "shadow": true}]},
    "task:*": {
      "limits": [{"name": "inflight", "resource": "requests",
                  "algorithm": "concurrency", "limit": 4}],
      "breaker": {"loop": {"repeats": 3, "window_ms": 60000},
                  "spend_velocity": {"tokens": 20000, "window_ms": 60000},
                  "open_ms": 1000, "open_backoff": 2, "max_open_ms": 8000,
                  "half_open_probes": 2}},
    "resource:*": {
      "limits": [{"name": "rpm", "resource": "requests",
                  "algorithm": "fixed_window", "limit": 20,
                  "window_ms": 60000}],
      "breaker": {"errors": {"ratio": 0.5, "min_calls": 4,
                             "window_ms": 10000},
                  "slow": {"max_rt_ms": 2000, "ratio": 0.5, "min_calls": 4,
                           "window_ms": 10000},
                  "open_ms": 2000, "half_open_probes": 1}},
    "resource:slow": {
      "limits": [{"name": "shape", "resource": "requests",
                  "algorithm": "leaky_bucket", "rate": 10, "per_ms": 1000,
                  "queue": 5}],
      "breaker": {"errors": {"ratio": 0.5, "min_calls": 2,
                             "window_ms": 10000},
                  "open_ms": 500, "open_backoff": 3, "max_open_ms": 5000,
                  "half_open_probes": 2}}
  },
  "prices": {
    "gpt-4o": {"input_usd_per_mtok": 2.5, "output_usd_per_mtok": 10},
    "mini": {"input_usd_per_mtok": 0.15, "output_usd_per_mtok": 0.6}
  })";
// uid 1000 may act as alice and bob; every other non-admin uid as no one.
inline constexpr char kUidUsers[] =
    R"(, "uid_users": {"1000": ["alice", "bob"]})";

struct Fixture {
  // Shared by every input; the harness resets what an input may change.
  brake::Config config;
  // Each policy's breaker, parsed once (Decider::SetPolicy would parse its
  // JSON again for every input).
  std::map<std::string, std::optional<brake::breaker::BreakerSpec>> breakers;
  bool fail_open = false;  // as parsed
};

inline Fixture& GetFixture() {
  static Fixture fixture = [] {
    Fixture f;
    auto parsed =
        brake::ParseConfig(std::string(kConfigHead) + kUidUsers + "}");
    FUZZ_CHECK(parsed.ok(), parsed.status().ToString());
    f.config = std::move(*parsed);
    for (const auto& [scope, policy] : f.config.policies) {
      auto again = brake::ParsePolicyText(policy.json);
      FUZZ_CHECK(again.ok() && again->json == policy.json, policy.json);
      auto& spec = f.breakers[scope];
      if (!policy.breaker_json.empty()) {
        auto parsed = brake::ParseBreaker(
            nlohmann::json::parse(policy.breaker_json), "breaker");
        FUZZ_CHECK(parsed.ok(), policy.breaker_json);
        spec = *parsed;
      }
    }
    f.fail_open = f.config.fail_open;
    return f;
  }();
  return fixture;
}

inline bool MayActAs(const Fixture&, const brake::Peer& peer,
                     const std::string& user) {
  if (peer.admin) return true;
  return peer.uid == kMappedUid && (user == "alice" || user == "bob");
}

}  // namespace brake::fuzz
