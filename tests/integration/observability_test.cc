// The `top` op and the metrics added with it, through a real braked: top's
// rows and validation, the wait histogram, breaker trips by cause and the
// counters of braked's own resource limits.
#include <catch2/catch.hpp>
#include <string>

#include "tests/integration/expect.h"
#include "tests/integration/harness.h"

namespace brake::integration {
namespace {

TEST_CASE("top answers the busiest users and tasks since start",
          "[integration][top]") {
  RunningDaemon d;
  Client c = d.daemon.Connect();
  SetPolicy(c, "user:*", R"([{"name":"q","resource":"requests",
      "algorithm":"quota","limit":3,"period":"total"}])");
  for (int i = 0; i < 5; ++i) Acquire(c, "alice", "a1", {{"tokens", 10}});
  AcquireLease(c, "bob", "b1", {{"tokens", 7}});
  AcquireLease(c, "carol", "c1");
  AcquireLease(c, "carol", "c2");

  json users = CallOk(c, {{"op", "top"}, {"by", "user"}});
  CHECK(users["by"] == "user");
  REQUIRE(users["rows"].size() == 3);
  const json& alice = users["rows"][0];
  CHECK(alice["subject"] == "alice");
  CHECK(alice["grants"] == 3);
  CHECK(alice["denials"] == 2);
  CHECK(alice["tokens"] == 30);
  CHECK(alice["waiters"] == 0);
  CHECK(users["rows"][1]["subject"] == "carol");
  CHECK(users["rows"][1]["grants"] == 2);
  CHECK(users["rows"][2]["subject"] == "bob");
  CHECK(users["rows"][2]["tokens"] == 7);

  json tasks = CallOk(c, {{"op", "top"}, {"by", "task"}, {"limit", 2}});
  REQUIRE(tasks["rows"].size() == 2);
  CHECK(tasks["rows"][0]["subject"] == "a1");
  CHECK(tasks["rows"][1]["subject"] == "b1");  // ties by name: b1 < c1 < c2

  SECTION("bad values are bad_request naming the field") {
    RequireError(c.Call({{"op", "top"}}), "bad_request", "by");
    RequireError(c.Call({{"op", "top"}, {"by", "model"}}), "bad_request", "by");
    RequireError(c.Call({{"op", "top"}, {"by", "user"}, {"limit", 0}}),
                 "bad_request", "limit");
    RequireError(c.Call({{"op", "top"}, {"by", "user"}, {"limit", 1001}}),
                 "bad_request", "limit");
    RequireError(c.Call({{"op", "top"}, {"by", "user"}, {"limit", "all"}}),
                 "bad_request", "limit");
    CHECK(CallOk(c, {{"op", "ping"}})["ok"] == true);  // still connected
  }
  SECTION("brakectl top's per-user metrics come from the same counts") {
    CHECK(Metric(c, "brake_user_grants_total{user=\"alice\"}") == 3);
    CHECK(Metric(c, "brake_user_denials_total{user=\"alice\"}") == 2);
  }
}

TEST_CASE("top counts the usd each grant reserved, on every path",
          "[integration][top]") {
  RunningDaemon d;
  Client c = d.daemon.Connect();
  SetPrice(c, "m1", 1.0, 2.0);
  // 1,000 tokens at the higher of the two prices: $0.002 reserved each.
  const json reserve = {{"model", "m1"}, {"tokens", 1000}};
  AcquireLease(c, "alice", "t1", reserve);  // the fast path
  json slow = reserve;
  slow["dry_run"] = false;  // a field the fast path leaves to the other
  AcquireLease(c, "alice", "t1", slow);
  json waiting = reserve;
  waiting["wait_ms"] = 5000;  // through the waiters, granted at once
  AcquireLease(c, "alice", "t1", waiting);
  const json rows = CallOk(c, {{"op", "top"}, {"by", "user"}})["rows"];
  REQUIRE(rows.size() == 1);
  CHECK(rows[0]["grants"] == 3);
  CHECK(rows[0]["tokens"] == 3000);
  CHECK(rows[0]["usd"].get<double>() == Approx(0.006));
}

TEST_CASE("brake_replies_held_total counts replies that waited for a commit",
          "[integration]") {
  SECTION("strict: every grant waits for its commit") {
    RunningDaemon d;  // strict by default
    Client c = d.daemon.Connect();
    const double before = Metric(c, "brake_replies_held_total");
    for (int i = 0; i < 5; ++i) AcquireLease(c, "alice", "t1");
    CHECK(Metric(c, "brake_replies_held_total") >= before + 5);
  }
  SECTION("batched: a reply that changes nothing never waits") {
    RunningDaemon d(json{{"durability", "batched"}});
    Client c = d.daemon.Connect();
    const double before = Metric(c, "brake_replies_held_total");
    for (int i = 0; i < 5; ++i) CallOk(c, {{"op", "ping"}});
    CHECK(Metric(c, "brake_replies_held_total") == before);
  }
}

TEST_CASE("brake_wait_seconds observes how long waiters waited",
          "[integration][metrics][waiting]") {
  RunningDaemon d;
  Client c = d.daemon.Connect();
  // One request per 200 ms: a second acquire waits about 200 ms.
  SetPolicy(c, "user:w", R"([{"name":"tb","resource":"requests",
      "algorithm":"token_bucket","rate":5,"per_ms":1000,"burst":1}])");
  AcquireLease(c, "w", "t1");
  CHECK(Metric(c, "brake_wait_seconds_count{result=\"granted\"}") == 0);
  json waited = Acquire(c, "w", "t1", {{"wait_ms", 5000}});
  REQUIRE(waited["granted"] == true);
  CHECK(waited["waited_ms"].get<int64_t>() >= 100);

  CHECK(Metric(c, "brake_wait_seconds_count{result=\"granted\"}") == 1);
  CHECK(Metric(c, "brake_wait_seconds_sum{result=\"granted\"}") >= 0.1);
  CHECK(
      Metric(c, "brake_wait_seconds_bucket{result=\"granted\",le=\"0.05\"}") ==
      0);
  CHECK(
      Metric(c, "brake_wait_seconds_bucket{result=\"granted\",le=\"+Inf\"}") ==
      1);
  // A grant further away than wait_ms is a timeout at once.
  json refused = Acquire(c, "w", "t1", {{"wait_ms", 10}});
  REQUIRE(refused["reason"] == "timeout");
  CHECK(Metric(c, "brake_wait_seconds_count{result=\"timeout\"}") == 1);
  // Acquires that may not wait are not observed.
  Acquire(c, "w", "t1");
  CHECK(Metric(c, "brake_wait_seconds_count{result=\"granted\"}") +
            Metric(c, "brake_wait_seconds_count{result=\"timeout\"}") ==
        2);
}

TEST_CASE("brake_breaker_trips_total counts a loop trip",
          "[integration][metrics][breaker]") {
  RunningDaemon d;
  Client c = d.daemon.Connect();
  CallOk(c, {{"op", "policy.set"},
             {"scope", "task:*"},
             {"breaker", {{"loop", {{"repeats", 3}, {"window_ms", 60000}}}}}});
  for (int i = 0; i < 3; ++i) {
    AcquireLease(c, "alice", "t1", {{"fingerprint", "f"}});
  }
  json refused = Acquire(c, "alice", "t1", {{"fingerprint", "f"}});
  REQUIRE(refused["cause"] == "loop");
  CHECK(Metric(c, "brake_breaker_trips_total{cause=\"loop\"}") == 1);
  CHECK(Metric(c, "brake_breaker_trips_total{cause=\"manual\"}") == 0);
  CHECK(Metric(c, "brake_breakers{state=\"open\"}") == 1);
}

TEST_CASE("brake_limit_hits_total counts braked's own limits",
          "[integration][metrics]") {
  RunningDaemon d(json{{"max_line_bytes", 1024}, {"max_connections", 2}});
  Client c = d.daemon.Connect();
  CHECK(Metric(c, "brake_limit_hits_total{limit=\"max_line_bytes\"}") == 0);

  SECTION("an over-long line") {
    Client longer = d.daemon.Connect();
    longer.SendLine(R"({"op":"ping","pad":")" + std::string(2000, 'x') +
                    R"("})");
    RequireError(json::parse(longer.ReadLine().value()), "line_too_long");
    CHECK(longer.WaitForEof());
    CHECK(Metric(c, "brake_limit_hits_total{limit=\"max_line_bytes\"}") == 1);
  }
  SECTION("JSON nested too deep") {
    c.SendLine(std::string(40, '[') + std::string(40, ']'));
    RequireError(json::parse(c.ReadLine().value()), "bad_json");
    CHECK(Metric(c, "brake_limit_hits_total{limit=\"max_depth\"}") == 1);
  }
  SECTION("a connection beyond max_connections") {
    Client second = d.daemon.Connect();
    Client third = d.daemon.Connect();
    RequireError(json::parse(third.ReadLine().value()), "too_many_connections");
    CHECK(Metric(c, "brake_limit_hits_total{limit=\"max_connections\"}") == 1);
  }
}

}  // namespace
}  // namespace brake::integration
