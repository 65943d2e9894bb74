// The `top` op and the counters `metrics` gained with it (per-user series,
// breaker trips, limit hits), through Dispatcher::Handle with explicit clocks.
#include <catch2/catch.hpp>
#include <cstdlib>
#include <optional>
#include <sstream>
#include <string>

#include "tests/daemon/dispatcher_harness.h"

namespace brake {
namespace {

const json kRpm2 = {{"name", "rpm"},
                    {"resource", "requests"},
                    {"algorithm", "fixed_window"},
                    {"limit", 2},
                    {"window_ms", 60000}};

json Acquire(const std::string& user, const std::string& task,
             json extra = json::object()) {
  json r = {{"op", "acquire"}, {"user", user}, {"task", task}};
  r.update(extra);
  return r;
}

json TopOf(const std::string& by, std::optional<int> limit = std::nullopt) {
  json r = {{"op", "top"}, {"by", by}};
  if (limit) r["limit"] = *limit;
  return r;
}

// The value of the sample `name` (labels included) in a metrics reply.
std::optional<double> Metric(Harness& h, const std::string& name) {
  std::istringstream in(
      h.Ok(json{{"op", "metrics"}})["text"].get<std::string>());
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(name + " ", 0) == 0) {
      return std::strtod(line.c_str() + name.size() + 1, nullptr);
    }
  }
  return std::nullopt;
}

// alice: 2 grants (100 tokens each, priced) and 1 denial in t1; bob: 1 grant
// in t2 on resource openai.
void SomeTraffic(Harness& h) {
  h.Ok(json{{"op", "policy.set"},
            {"scope", "user:*"},
            {"limits", json::array({kRpm2})}});
  h.Ok(json{{"op", "prices.set"},
            {"model", "m"},
            {"input_usd_per_mtok", 1000},
            {"output_usd_per_mtok", 1000}});
  for (int i = 0; i < 3; ++i) {
    h.Ok(Acquire("alice", "t1", {{"tokens", 100}, {"model", "m"}}));
  }
  h.Ok(Acquire("bob", "t2", {{"tokens", 5}, {"resource", "openai"}}));
}

TEST_CASE("top: rows of users, tasks and resources, busiest first",
          "[top][dispatcher]") {
  Harness h;
  SomeTraffic(h);
  json users = h.Ok(TopOf("user"), kUser);
  CHECK(users["by"] == "user");
  REQUIRE(users["rows"].size() == 2);
  const json& alice = users["rows"][0];
  CHECK(alice["subject"] == "alice");
  CHECK(alice["grants"] == 2);
  CHECK(alice["denials"] == 1);
  CHECK(alice["tokens"] == 200);
  CHECK(alice["usd"].get<double>() == Approx(0.2));  // 100 tokens at 1000/M
  CHECK(alice["uncounted_max"] == 0);
  CHECK(users["rows"][1]["subject"] == "bob");
  CHECK(users["rows"][1]["grants"] == 1);

  json tasks = h.Ok(TopOf("task", 1));
  REQUIRE(tasks["rows"].size() == 1);
  CHECK(tasks["rows"][0]["subject"] == "t1");

  json resources = h.Ok(TopOf("resource"));
  REQUIRE(resources["rows"].size() == 1);
  CHECK(resources["rows"][0]["subject"] == "openai");
  CHECK(resources["rows"][0]["tokens"] == 5);

  SECTION("errors are not counted") {
    h.Call(Acquire("alice", "t2"));  // forbidden: bob's task
    CHECK(h.Ok(TopOf("user"))["rows"][0]["denials"] == 1);
  }
}

TEST_CASE("top: with uid_users a peer sees only its users and their tasks",
          "[top][dispatcher]") {
  Config config;
  config.uid_users[1000] = {"alice"};
  Harness h(config);
  h.Ok(Acquire("bob", "t2"));
  h.Ok(Acquire("alice", "t1"), kUser);
  h.Ok(Acquire("alice", "t3"), kUser);

  json users = h.Ok(TopOf("user"), kUser);
  REQUIRE(users["rows"].size() == 1);
  CHECK(users["rows"][0]["subject"] == "alice");
  json tasks = h.Ok(TopOf("task"), kUser);
  REQUIRE(tasks["rows"].size() == 2);
  CHECK(tasks["rows"][0]["subject"] == "t1");
  CHECK(tasks["rows"][1]["subject"] == "t3");
  CheckError(h.Call(TopOf("resource"), kUser), "forbidden", "by:");
  // Admins see everything.
  CHECK(h.Ok(TopOf("user"))["rows"].size() == 2);
  CHECK(h.Ok(TopOf("resource"))["rows"].empty());
}

TEST_CASE("top: the tracker keeps at most top_max_subjects per kind",
          "[top][dispatcher]") {
  Config config;
  config.top_max_subjects = 2;
  Harness h(config);
  // Space-saving keeps whoever has more than 1/capacity of all acquires:
  // 30 of 50.
  for (int i = 0; i < 30; ++i) h.Ok(Acquire("busy", "tb"));
  for (int i = 0; i < 20; ++i) {
    h.Ok(Acquire("u" + std::to_string(i), "t" + std::to_string(i)));
  }
  json users = h.Ok(TopOf("user", 1000));
  REQUIRE(users["rows"].size() == 2);
  CHECK(users["rows"][0]["subject"] == "busy");
  CHECK(users["rows"][0]["grants"] == 30);
  CHECK(h.Ok(TopOf("task", 1000))["rows"].size() == 2);
}

TEST_CASE("metrics: per-user series for the metrics_top_users busiest",
          "[top][dispatcher][metrics]") {
  Config config;
  config.metrics_top_users = 1;
  Harness h(config);
  SomeTraffic(h);
  CHECK(Metric(h, "brake_user_grants_total{user=\"alice\"}") == 2.0);
  CHECK(Metric(h, "brake_user_denials_total{user=\"alice\"}") == 1.0);
  CHECK(Metric(h, "brake_user_granted_tokens_total{user=\"alice\"}") == 200.0);
  CHECK_FALSE(Metric(h, "brake_user_grants_total{user=\"bob\"}"));
  h.config().metrics_top_users = 0;  // reloadable
  CHECK_FALSE(Metric(h, "brake_user_grants_total{user=\"alice\"}"));
}

TEST_CASE("metrics: breaker trips by cause", "[dispatcher][metrics]") {
  Harness h;
  h.Ok(json{{"op", "policy.set"},
            {"scope", "task:*"},
            {"breaker", {{"loop", {{"repeats", 2}, {"window_ms", 60000}}}}}});
  CHECK(Metric(h, "brake_breaker_trips_total{cause=\"loop\"}") == 0.0);
  json looped = Acquire("alice", "t1", {{"fingerprint", "same"}});
  h.Ok(looped);
  h.Ok(looped);  // the second sighting trips the task's breaker
  CHECK(h.Ok(looped)["reason"] == "breaker_open");
  CHECK(Metric(h, "brake_breaker_trips_total{cause=\"loop\"}") == 1.0);

  h.Ok(json{{"op", "breaker.trip"}, {"scope", "user:bob"}});
  h.Ok(json{{"op", "breaker.trip"}, {"scope", "user:bob"}});  // already open
  CHECK(Metric(h, "brake_breaker_trips_total{cause=\"manual\"}") == 1.0);
  CHECK(Metric(h, "brake_breaker_trips_total{cause=\"errors\"}") == 0.0);
}

TEST_CASE("metrics: JSON nested too deep counts as a max_depth hit",
          "[dispatcher][metrics]") {
  Harness h;
  CheckError(h.Call(std::string(40, '[') + std::string(40, ']')), "bad_json",
             "request:");
  CHECK(Metric(h, "brake_limit_hits_total{limit=\"max_depth\"}") == 1.0);
  CHECK(Metric(h, "brake_limit_hits_total{limit=\"max_line_bytes\"}") == 0.0);
}

}  // namespace
}  // namespace brake
