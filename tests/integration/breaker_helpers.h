// What tests/integration/breaker*_test.cc share: setting a breaker,
// committing with an outcome, and reading a breaker's state back from
// status replies.
#pragma once

#include <catch2/catch.hpp>
#include <optional>
#include <string>

#include "tests/integration/expect.h"
#include "tests/integration/harness.h"

namespace brake::integration {

// policy.set of a scope with a breaker only (no limits).
inline void SetBreaker(Client& c, const std::string& scope,
                       const char* breaker) {
  CallOk(c, {{"op", "policy.set"},
             {"scope", scope},
             {"breaker", json::parse(breaker)}});
}

// Commits `lease` with `extra` (tokens, latency_ms, outcome, ...).
inline json Commit(Client& c, const std::string& lease,
                   json extra = json::object()) {
  json request = {{"op", "commit"}, {"lease", lease}};
  request.update(extra);
  return CallOk(c, request);
}

// Acquires (must be granted) and commits at once with `commit`.
inline void CallThrough(Client& c, const std::string& user,
                        const std::string& task, const json& acquire,
                        const json& commit) {
  Commit(c, AcquireLease(c, user, task, acquire), commit);
}

// Requires `reply` to be a breaker_open denial by `scope` with `cause`;
// returns its retry_after_ms (-1 when null).
inline int64_t RequireBreakerDenial(const json& reply, const std::string& cause,
                                    const std::string& scope) {
  INFO("reply: " << reply.dump());
  REQUIRE(reply.value("granted", true) == false);
  CHECK(reply["reason"] == "breaker_open");
  CHECK(reply["cause"] == cause);
  CHECK(reply["scope"] == scope);
  CHECK(reply["limit"] == "breaker");
  REQUIRE(reply.contains("retry_after_ms"));
  if (reply["retry_after_ms"].is_null()) return -1;
  REQUIRE(reply["retry_after_ms"].is_number_integer());
  return reply["retry_after_ms"].get<int64_t>();
}

// The entry for `scope` in a reply's "breakers", or null.
inline json BreakerOf(const json& reply, const std::string& scope) {
  if (!reply.contains("breakers") || !reply["breakers"].is_array()) {
    return nullptr;
  }
  for (const json& b : reply["breakers"]) {
    if (b.value("scope", "") == scope) return b;
  }
  return nullptr;
}

// The state of `scope`'s breaker as status of `subject` (e.g.
// {"resource":"R"}) shows it; "" when status lists no such breaker.
inline std::string StateOf(Client& c, const json& subject,
                           const std::string& scope) {
  json request = {{"op", "status"}};
  request.update(subject);
  json b = BreakerOf(CallOk(c, request), scope);
  return b.is_object() ? b.value("state", "") : "";
}

// Polls status until `scope`'s breaker has left "open" (is half_open).
inline void AwaitHalfOpen(Client& c, const json& subject,
                          const std::string& scope, int64_t timeout_ms = 3000) {
  std::string state;
  const bool left = PollUntil(
      [&] {
        state = StateOf(c, subject, scope);
        return state != "open";
      },
      timeout_ms);
  INFO("state: " << state);
  REQUIRE(left);
  REQUIRE(state == "half_open");
}

}  // namespace brake::integration
