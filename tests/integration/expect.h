// Catch2 shorthands shared by the integration tests: calls that must succeed
// and replies that must be a given protocol error. Test thread only.
#pragma once

#include <catch2/catch.hpp>
#include <optional>
#include <string>

#include "tests/integration/harness.h"

namespace brake::integration {

// The error code of a reply, or "" when it has none.
inline std::string ErrorCodeOf(const json& reply) {
  if (!reply.is_object() || !reply.contains("error")) return "";
  const json& error = reply["error"];
  if (!error.is_object() || !error.contains("code") ||
      !error["code"].is_string()) {
    return "";
  }
  return error["code"].get<std::string>();
}

inline std::string ErrorMessageOf(const json& reply) {
  if (!reply.is_object() || !reply.contains("error")) return "";
  const json& error = reply["error"];
  if (!error.is_object() || !error.contains("message") ||
      !error["message"].is_string()) {
    return "";
  }
  return error["message"].get<std::string>();
}

// Sends `request`, requires "ok": true and returns the reply.
inline json CallOk(Client& client, const json& request) {
  json reply = client.Call(request);
  INFO("request: " << request.dump() << "\nreply: " << reply.dump());
  REQUIRE(reply.is_object());
  REQUIRE(reply.value("ok", false) == true);
  return reply;
}

// Sends an acquire that must be answered (granted or not) and returns it.
inline json Acquire(Client& client, const std::string& user,
                    const std::string& task, json extra = json::object()) {
  json request = {{"op", "acquire"}, {"user", user}, {"task", task}};
  request.update(extra);
  return CallOk(client, request);
}

// Sends an acquire that must be granted; returns its lease.
inline std::string AcquireLease(Client& client, const std::string& user,
                                const std::string& task,
                                json extra = json::object()) {
  json reply = Acquire(client, user, task, std::move(extra));
  INFO("reply: " << reply.dump());
  REQUIRE(reply.value("granted", false) == true);
  REQUIRE(reply.contains("lease"));
  REQUIRE(reply["lease"].is_string());
  return reply["lease"].get<std::string>();
}

// Requires `reply` to be {"ok": false, "error": {"code": code, ...}} whose
// message mentions `field` (when not empty).
inline void RequireError(const json& reply, const std::string& code,
                         const std::string& field = "") {
  INFO("reply: " << reply.dump());
  REQUIRE(reply.is_object());
  REQUIRE(reply.value("ok", true) == false);
  CHECK(ErrorCodeOf(reply) == code);
  CHECK_FALSE(ErrorMessageOf(reply).empty());
  if (!field.empty()) {
    CHECK_THAT(ErrorMessageOf(reply), Catch::Matchers::Contains(field));
  }
}

// The next line of `client` (a reply sent earlier, or a waiter's answer),
// within `timeout_ms`, as JSON.
inline json ReadJson(Client& client, int64_t timeout_ms = 5000) {
  std::optional<std::string> line = client.ReadLine(timeout_ms);
  REQUIRE(line.has_value());
  return json::parse(*line);
}

// Sets `scope`'s policy to the JSON array of limits `limits`.
inline void SetPolicy(Client& client, const std::string& scope,
                      const char* limits) {
  CallOk(client, {{"op", "policy.set"},
                  {"scope", scope},
                  {"limits", json::parse(limits)}});
}

// Sets `model`'s price, in usd per million input and output tokens.
inline void SetPrice(Client& client, const std::string& model, double in,
                     double out) {
  CallOk(client, {{"op", "prices.set"},
                  {"model", model},
                  {"input_usd_per_mtok", in},
                  {"output_usd_per_mtok", out}});
}

// The limit named `name` in a status reply's "limits", or null.
inline json FindLimit(const json& status, const std::string& name) {
  if (!status.contains("limits")) return nullptr;
  for (const json& limit : status["limits"]) {
    if (limit.value("name", "") == name) return limit;
  }
  return nullptr;
}

// The value of the Prometheus sample `name` (labels included) in a
// `metrics` reply; requires it to be there.
inline double Metric(Client& client, const std::string& name) {
  json m = CallOk(client, {{"op", "metrics"}});
  std::optional<double> v = MetricValue(m["text"], name);
  INFO("metric " << name);
  REQUIRE(v.has_value());
  return *v;
}

}  // namespace brake::integration
