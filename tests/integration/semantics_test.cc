// Decision semantics over the wire: reasons, retry_after_ms, waiting
// acquires, shadow limits, all-or-nothing charging, lease expiry, breakers,
// config reload and connection limits.
#include <signal.h>

#include <catch2/catch.hpp>
#include <string>

#include "tests/integration/expect.h"
#include "tests/integration/harness.h"

namespace brake::integration {
namespace {

using Catch::Matchers::Contains;

json Limits(const char* text) { return json::parse(text); }

void SetPolicy(Client& c, const std::string& scope, const json& limits) {
  CallOk(c, {{"op", "policy.set"}, {"scope", scope}, {"limits", limits}});
}

TEST_CASE("a token bucket denial says when to retry, and that is enough",
          "[integration]") {
  RunningDaemon d;
  Client c = d.daemon.Connect();
  SetPolicy(c, "user:alice", Limits(R"([{"name":"rps","resource":"requests",
      "algorithm":"token_bucket","rate":10,"per_ms":1000,"burst":1}])"));
  AcquireLease(c, "alice", "t1");
  json denied = Acquire(c, "alice", "t1");
  REQUIRE(denied["granted"] == false);
  CHECK(denied["reason"] == "rate_limited");
  CHECK(denied["scope"] == "user:alice");
  CHECK(denied["limit"] == "rps");
  REQUIRE(denied["retry_after_ms"].is_number_integer());
  const int64_t retry_ms = denied["retry_after_ms"];
  CHECK(retry_ms > 0);
  CHECK(retry_ms <= 100);
  timespec ts{0, static_cast<long>(retry_ms) * 1'000'000};
  nanosleep(&ts, nullptr);
  AcquireLease(c, "alice", "t1");
}

TEST_CASE("a request larger than any capacity is too_large with a null retry",
          "[integration]") {
  RunningDaemon d;
  Client c = d.daemon.Connect();
  SetPolicy(c, "user:alice", Limits(R"([{"name":"rps","resource":"requests",
      "algorithm":"token_bucket","rate":10,"per_ms":1000,"burst":5}])"));
  json denied = Acquire(c, "alice", "t1", {{"requests", 6}});
  CHECK(denied["granted"] == false);
  CHECK(denied["reason"] == "too_large");
  CHECK(denied["retry_after_ms"].is_null());
}

TEST_CASE("a waiting acquire is granted once the limit admits it",
          "[integration]") {
  RunningDaemon d;
  Client c = d.daemon.Connect();
  SetPolicy(c, "user:alice", Limits(R"([{"name":"rps","resource":"requests",
      "algorithm":"token_bucket","rate":10,"per_ms":1000,"burst":1}])"));
  AcquireLease(c, "alice", "t1");
  const int64_t start = MonoMs();
  json waited = Acquire(c, "alice", "t1", {{"wait_ms", 1000}, {"id", "w"}});
  const int64_t elapsed = MonoMs() - start;
  CHECK(waited["id"] == "w");
  CHECK(waited["granted"] == true);
  CHECK(waited["waited_ms"].get<int64_t>() >= 50);
  CHECK(waited["waited_ms"].get<int64_t>() <= 200);
  CHECK(elapsed >= 50);
  CHECK(elapsed < 1000);
}

TEST_CASE("a waiting acquire that cannot be granted in time is refused",
          "[integration]") {
  RunningDaemon d;
  Client c = d.daemon.Connect();
  SetPolicy(c, "user:alice", Limits(R"([{"name":"slow","resource":"requests",
      "algorithm":"token_bucket","rate":1,"per_ms":10000,"burst":1}])"));
  AcquireLease(c, "alice", "t1");
  const int64_t start = MonoMs();
  json denied = Acquire(c, "alice", "t1", {{"wait_ms", 100}});
  const int64_t elapsed = MonoMs() - start;
  INFO("reply: " << denied.dump());
  CHECK(denied["granted"] == false);
  // Answered now (it could never make it) or after the wait, never later.
  const std::string reason = denied["reason"];
  CHECK((reason == "timeout" || reason == "rate_limited"));
  CHECK(elapsed < 1000);
}

TEST_CASE("a waiting acquire does not hold up replies behind it",
          "[integration]") {
  RunningDaemon d;
  Client c = d.daemon.Connect();
  SetPolicy(c, "user:alice", Limits(R"([{"name":"rps","resource":"requests",
      "algorithm":"token_bucket","rate":5,"per_ms":1000,"burst":1}])"));
  AcquireLease(c, "alice", "t1");
  c.SendRaw(json({{"op", "acquire"},
                  {"id", "slow"},
                  {"user", "alice"},
                  {"task", "t1"},
                  {"wait_ms", 2000}})
                .dump() +
            "\n" + json({{"op", "ping"}, {"id", "fast"}}).dump() + "\n");
  json first = json::parse(c.ReadLine().value());
  json second = json::parse(c.ReadLine().value());
  CHECK(first["id"] == "fast");
  CHECK(second["id"] == "slow");
  CHECK(second["granted"] == true);
}

TEST_CASE("concurrency limits open leases, and commit frees a slot",
          "[integration]") {
  RunningDaemon d;
  Client c = d.daemon.Connect();
  SetPolicy(c, "user:alice", Limits(R"([{"name":"inflight",
      "resource":"requests","algorithm":"concurrency","limit":2}])"));
  std::string a = AcquireLease(c, "alice", "t1");
  AcquireLease(c, "alice", "t1");
  json denied = Acquire(c, "alice", "t1");
  CHECK(denied["granted"] == false);
  CHECK(denied["reason"] == "concurrency");
  CallOk(c, {{"op", "commit"}, {"lease", a}, {"tokens", 1}});
  AcquireLease(c, "alice", "t1");
}

TEST_CASE("a usd quota refuses with cost_cap", "[integration]") {
  RunningDaemon d;
  Client c = d.daemon.Connect();
  SetPrice(c, "m", 10, 10);
  SetPolicy(c, "user:alice", Limits(R"([{"name":"budget","resource":"usd",
      "algorithm":"quota","limit":1.0,"period":"total"}])"));
  std::string lease =
      AcquireLease(c, "alice", "t1", {{"model", "m"}, {"tokens", 50'000}});
  CallOk(c, {{"op", "commit"},
             {"lease", lease},
             {"input_tokens", 90'000},
             {"output_tokens", 0}});
  json denied = Acquire(c, "alice", "t1", {{"model", "m"}, {"tokens", 50'000}});
  CHECK(denied["granted"] == false);
  CHECK(denied["reason"] == "cost_cap");
  CHECK(denied["limit"] == "budget");
}

TEST_CASE("a shadow limit never denies and is reported", "[integration]") {
  RunningDaemon d;
  Client c = d.daemon.Connect();
  SetPolicy(c, "user:alice", Limits(R"([{"name":"would","resource":"requests",
      "algorithm":"concurrency","limit":1,"shadow":true}])"));
  AcquireLease(c, "alice", "t1");
  json second = Acquire(c, "alice", "t1");
  CHECK(second["granted"] == true);
  REQUIRE(second["shadow"].is_array());
  CHECK(second["shadow"].dump().find("would") != std::string::npos);
}

TEST_CASE("a denial anywhere charges nothing everywhere", "[integration]") {
  RunningDaemon d;
  Client c = d.daemon.Connect();
  SetPolicy(c, "global", Limits(R"([{"name":"all","resource":"requests",
      "algorithm":"quota","limit":100,"period":"total"}])"));
  SetPolicy(c, "task:t1", Limits(R"([{"name":"one","resource":"requests",
      "algorithm":"quota","limit":1,"period":"total"}])"));
  AcquireLease(c, "alice", "t1");
  for (int i = 0; i < 5; ++i) {
    json denied = Acquire(c, "alice", "t1");
    CHECK(denied["granted"] == false);
    CHECK(denied["scope"] == "task:t1");
  }
  json status = CallOk(c, {{"op", "status"}, {"user", "alice"}});
  json global = FindLimit(status, "all");
  REQUIRE(global.is_object());
  CHECK(global["scope"] == "global");
  CHECK(global["used"] == 0);
  CHECK(global["held"] == 1);  // the one open lease
}

TEST_CASE("a lease left open past lease_ttl_ms is settled at its estimate",
          "[integration]") {
  RunningDaemon d(json{{"lease_ttl_ms", 1000}});
  Client c = d.daemon.Connect();
  std::string lease = AcquireLease(c, "alice", "t1", {{"tokens", 50}});
  const bool settled = PollUntil(
      [&] {
        json s = CallOk(c, {{"op", "status"}, {"user", "alice"}});
        return s["reserved"]["requests"] == 0;
      },
      3000);
  REQUIRE(settled);
  json status = CallOk(c, {{"op", "status"}, {"user", "alice"}});
  CHECK(status["spend"]["requests"] == 1);
  CHECK(status["spend"]["tokens"] == 50);
  // A late commit changes nothing.
  json late = c.Call({{"op", "commit"}, {"lease", lease}, {"tokens", 5}});
  INFO("late commit: " << late.dump());
  if (late.value("ok", false)) CHECK(late["duplicate"] == true);
  CHECK(CallOk(c, {{"op", "status"}, {"user", "alice"}})["spend"]["tokens"] ==
        50);
}

TEST_CASE("breaker.trip opens a scope's breaker, and breaker.reset closes it",
          "[integration]") {
  RunningDaemon d;
  Client c = d.daemon.Connect();
  AcquireLease(c, "alice", "t1");
  CallOk(c, {{"op", "breaker.trip"}, {"scope", "task:t1"}, {"open_ms", 60000}});
  json denied = Acquire(c, "alice", "t1");
  CHECK(denied["granted"] == false);
  CHECK(denied["reason"] == "breaker_open");
  CHECK(denied["cause"] == "manual");
  json status = CallOk(c, {{"op", "status"}, {"task", "t1"}});
  CHECK(status["breakers"].size() == 1);
  CallOk(c, {{"op", "breaker.reset"}, {"scope", "task:t1"}});
  AcquireLease(c, "alice", "t1");
}

TEST_CASE("SIGHUP reloads the config file", "[integration]") {
  json config = {
      {"max_line_bytes", 1024},
      {"policies", {{"user:*", {{"limits", Limits(R"([{"name":"first",
                      "resource":"requests","algorithm":"concurrency",
                      "limit":5}])")}}}}}};
  RunningDaemon d(config);
  Client c = d.daemon.Connect();
  REQUIRE(FindLimit(CallOk(c, {{"op", "status"}, {"user", "bob"}}), "first")
              .is_object());
  const std::string big =
      R"({"op":"ping","pad":")" + std::string(2000, 'x') + R"("})";

  config["max_line_bytes"] = 4096;
  config["policies"]["user:*"]["limits"][0]["name"] = "second";
  WriteFile(d.daemon.config_path(), config.dump());
  REQUIRE(kill(d.daemon.pid(), SIGHUP) == 0);
  REQUIRE(PollUntil(
      [&] {
        return d.daemon.log().find("SIGHUP: reloaded") != std::string::npos;
      },
      3000));
  json bob = CallOk(c, {{"op", "status"}, {"user", "bob"}});
  CHECK(FindLimit(bob, "second").is_object());
  CHECK(FindLimit(bob, "first").is_null());
  c.SendLine(big);
  CHECK(json::parse(c.ReadLine().value())["ok"] == true);

  SECTION("a broken config file keeps the running one") {
    WriteFile(d.daemon.config_path(), "{broken");
    REQUIRE(kill(d.daemon.pid(), SIGHUP) == 0);
    REQUIRE(PollUntil(
        [&] {
          return d.daemon.log().find("keeping the current config") !=
                 std::string::npos;
        },
        3000));
    CHECK(FindLimit(CallOk(c, {{"op", "status"}, {"user", "bob"}}), "second")
              .is_object());
    CHECK(d.daemon.Stop() == 0);
  }
}

TEST_CASE("connections beyond max_connections get an error and are closed",
          "[integration]") {
  RunningDaemon d(json{{"max_connections", 2}});
  Client a = d.daemon.Connect();
  // The readiness probe of Start() is closed, but the daemon counts a
  // connection until its handle is closed, a few loop turns later.
  REQUIRE(PollUntil(
      [&] {
        json m = CallOk(a, {{"op", "metrics"}});
        return MetricValue(m["text"], "brake_connections") == 1.0;
      },
      3000));
  Client b = d.daemon.Connect();
  CallOk(b, {{"op", "ping"}});
  Client extra = d.daemon.Connect();
  std::optional<std::string> line = extra.ReadLine();
  REQUIRE(line.has_value());
  json error = json::parse(*line);
  CHECK(error["ok"] == false);
  // Not among PROTOCOL.md's error codes; see the report.
  CHECK(ErrorCodeOf(error) == "too_many_connections");
  CHECK(extra.WaitForEof());
  CallOk(a, {{"op", "ping"}});
}

}  // namespace
}  // namespace brake::integration
