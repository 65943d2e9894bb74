// Strict durability: whatever the daemon acknowledged survives a clean
// restart (SIGTERM, start again on the same database) and a kill -9 right
// after the acknowledgement.
#include <signal.h>

#include <catch2/catch.hpp>
#include <functional>
#include <string>

#include "tests/integration/expect.h"
#include "tests/integration/harness.h"

namespace brake::integration {
namespace {

// Limits whose status has no clock in it, so snapshots compare equal
// across restarts.
const json kAliceLimits = json::parse(R"([
  {"name":"q","resource":"requests","algorithm":"quota","limit":10,
   "period":"total"},
  {"name":"tq","resource":"tokens","algorithm":"quota","limit":10000000,
   "period":"total"}
])");
const json kDefaultLimits = json::parse(R"([
  {"name":"inflight","resource":"requests","algorithm":"concurrency",
   "limit":8}
])");

json StateSnapshot(Client& c) {
  return {
      {"policies", CallOk(c, {{"op", "policy.list"}})["policies"]},
      {"alice", CallOk(c, {{"op", "status"}, {"user", "alice"}})},
      {"t1", CallOk(c, {{"op", "status"}, {"task", "t1"}})},
      {"t2", CallOk(c, {{"op", "status"}, {"task", "t2"}})},
  };
}

// Policies, a price, two tasks of alice (t2 a child of t1), three settled
// calls and one cancelled.
void BuildState(Client& c) {
  CallOk(c, {{"op", "policy.set"},
             {"scope", "user:alice"},
             {"limits", kAliceLimits}});
  CallOk(
      c,
      {{"op", "policy.set"}, {"scope", "user:*"}, {"limits", kDefaultLimits}});
  SetPrice(c, "m1", 1.0, 2.0);
  std::string a = AcquireLease(c, "alice", "t1", {{"tokens", 100}});
  CallOk(c, {{"op", "commit"}, {"lease", a}, {"tokens", 110}});
  std::string b = AcquireLease(
      c, "alice", "t2", {{"tokens", 1000}, {"parent", "t1"}, {"model", "m1"}});
  CallOk(c, {{"op", "commit"},
             {"lease", b},
             {"input_tokens", 500'000},
             {"output_tokens", 250'000}});
  std::string x = AcquireLease(c, "alice", "t1", {{"tokens", 5}});
  CallOk(c, {{"op", "cancel"}, {"lease", x}});
  std::string e = AcquireLease(c, "alice", "t2", {{"tokens", 7}});
  CallOk(c,
         {{"op", "commit"}, {"lease", e}, {"tokens", 7}, {"outcome", "error"}});
}

void CheckState(Client& c) {
  json alice = CallOk(c, {{"op", "status"}, {"user", "alice"}});
  CHECK(alice["spend"]["requests"] == 3);
  CHECK(alice["spend"]["tokens"] == 110 + 750'000 + 7);
  CHECK(alice["spend"]["usd"].get<double>() == Approx(0.5 + 0.5));
  CHECK(alice["reserved"]["requests"] == 0);
  CHECK(FindLimit(alice, "q")["used"] == 3);
  CHECK(FindLimit(alice, "tq")["used"] == 110 + 750'000 + 7);
  json t1 = CallOk(c, {{"op", "status"}, {"task", "t1"}});
  CHECK(t1["spend"]["tokens"] == 110 + 750'000 + 7);  // includes its child
  json t2 = CallOk(c, {{"op", "status"}, {"task", "t2"}});
  CHECK(t2["spend"]["tokens"] == 750'000 + 7);
  // Task owners: bob may not use alice's tasks.
  RequireError(c.Call({{"op", "acquire"}, {"user", "bob"}, {"task", "t1"}}),
               "forbidden", "task");
  RequireError(c.Call({{"op", "acquire"}, {"user", "bob"}, {"task", "t2"}}),
               "forbidden", "task");
  // The price is still set.
  AcquireLease(c, "alice", "t3", {{"model", "m1"}});
}

// Builds the state, takes it down with `stop`, starts again and compares.
void CheckSurvives(const std::function<void(Daemon&)>& stop) {
  RunningDaemon d;
  json before;
  {
    Client c = d.daemon.Connect();
    BuildState(c);
    before = StateSnapshot(c);
    stop(d.daemon);
  }
  REQUIRE_FALSE(d.daemon.running());
  REQUIRE(d.daemon.Start());
  Client c = d.daemon.Connect();
  CHECK(StateSnapshot(c) == before);
  CheckState(c);
}

TEST_CASE(
    "policies, prices, task owners, quotas and spend survive a clean "
    "restart",
    "[integration]") {
  CheckSurvives([](Daemon& d) { REQUIRE(d.Stop(SIGTERM) == 0); });
}

TEST_CASE("policies, prices, task owners, quotas and spend survive kill -9",
          "[integration]") {
  CheckSurvives([](Daemon& d) { d.Kill9(); });
}

TEST_CASE(
    "a commit acknowledged just before kill -9 is in status after the "
    "restart",
    "[integration]") {
  RunningDaemon d;
  {
    Client c = d.daemon.Connect();
    CallOk(c, {{"op", "policy.set"},
               {"scope", "user:alice"},
               {"limits", kAliceLimits}});
    std::string lease = AcquireLease(c, "alice", "t1", {{"tokens", 10}});
    json commit =
        CallOk(c, {{"op", "commit"}, {"lease", lease}, {"tokens", 4321}});
    REQUIRE(commit["charged_tokens"] == 4321);
    d.daemon.Kill9();  // the moment the acknowledgement arrived
  }
  REQUIRE(d.daemon.Start());
  Client c = d.daemon.Connect();
  json alice = CallOk(c, {{"op", "status"}, {"user", "alice"}});
  CHECK(alice["spend"]["requests"] == 1);
  CHECK(alice["spend"]["tokens"] == 4321);
  CHECK(alice["reserved"]["requests"] == 0);
  CHECK(FindLimit(alice, "q")["used"] == 1);
  CHECK(FindLimit(alice, "tq")["used"] == 4321);
}

TEST_CASE("the quota used before kill -9 still denies after it",
          "[integration]") {
  RunningDaemon d;
  {
    Client c = d.daemon.Connect();
    CallOk(c, {{"op", "policy.set"},
               {"scope", "user:alice"},
               {"limits", kAliceLimits}});
    for (int i = 0; i < 7; ++i) {
      std::string lease = AcquireLease(c, "alice", "t1");
      CallOk(c, {{"op", "commit"}, {"lease", lease}, {"tokens", 1}});
    }
    d.daemon.Kill9();
  }
  REQUIRE(d.daemon.Start());
  Client c = d.daemon.Connect();
  for (int i = 0; i < 3; ++i) {
    CallOk(c, {{"op", "commit"}, {"lease", AcquireLease(c, "alice", "t1")},
               {"tokens", 1}});
  }
  json denied = Acquire(c, "alice", "t1");
  CHECK(denied["granted"] == false);
  CHECK(denied["reason"] == "quota_exhausted");
  CHECK(denied["limit"] == "q");
}

TEST_CASE("an acknowledged grant survives kill -9 as an open lease",
          "[integration]") {
  RunningDaemon d;
  std::string lease;
  {
    Client c = d.daemon.Connect();
    lease = AcquireLease(c, "alice", "t1", {{"tokens", 300}});
    d.daemon.Kill9();
  }
  REQUIRE(d.daemon.Start());
  Client c = d.daemon.Connect();
  json alice = CallOk(c, {{"op", "status"}, {"user", "alice"}});
  CHECK(alice["reserved"]["requests"] == 1);
  CHECK(alice["reserved"]["tokens"] == 300);
  json commit =
      CallOk(c, {{"op", "commit"}, {"lease", lease}, {"tokens", 250}});
  CHECK(commit["charged_tokens"] == 250);
  alice = CallOk(c, {{"op", "status"}, {"user", "alice"}});
  CHECK(alice["reserved"]["requests"] == 0);
  CHECK(alice["spend"]["tokens"] == 250);
}

TEST_CASE("a commit acknowledged before kill -9 stays a duplicate after it",
          "[integration]") {
  RunningDaemon d;
  std::string lease;
  {
    Client c = d.daemon.Connect();
    lease = AcquireLease(c, "alice", "t1", {{"tokens", 10}});
    CallOk(c, {{"op", "commit"}, {"lease", lease}, {"tokens", 20}});
    d.daemon.Kill9();
  }
  REQUIRE(d.daemon.Start());
  Client c = d.daemon.Connect();
  json again = c.Call({{"op", "commit"}, {"lease", lease}, {"tokens", 20}});
  INFO("second commit after restart: " << again.dump());
  // Either answer keeps the spend counted once.
  if (again.value("ok", false)) {
    CHECK(again["duplicate"] == true);
  } else {
    CHECK(ErrorCodeOf(again) == "unknown_lease");
  }
  CHECK(CallOk(c, {{"op", "status"}, {"user", "alice"}})["spend"]["tokens"] ==
        20);
}

TEST_CASE("policy.delete and reset acknowledged before kill -9 stay done",
          "[integration]") {
  RunningDaemon d;
  {
    Client c = d.daemon.Connect();
    CallOk(c, {{"op", "policy.set"},
               {"scope", "user:alice"},
               {"limits", kAliceLimits}});
    CallOk(c, {{"op", "policy.set"},
               {"scope", "user:bob"},
               {"limits", kAliceLimits}});
    for (int i = 0; i < 4; ++i) {
      std::string lease = AcquireLease(c, "alice", "t1");
      CallOk(c, {{"op", "commit"}, {"lease", lease}, {"tokens", 9}});
    }
    CallOk(c, {{"op", "reset"}, {"scope", "user:alice"}});
    CallOk(c, {{"op", "policy.delete"}, {"scope", "user:bob"}});
    d.daemon.Kill9();
  }
  REQUIRE(d.daemon.Start());
  Client c = d.daemon.Connect();
  json alice = CallOk(c, {{"op", "status"}, {"user", "alice"}});
  CHECK(FindLimit(alice, "q")["used"] == 0);
  CHECK(alice["spend"]["requests"] == 0);
  CHECK(alice["spend"]["tokens"] == 0);
  CHECK(CallOk(c, {{"op", "policy.get"}, {"scope", "user:bob"}})["policy"]
            .is_null());
  CHECK(CallOk(c, {{"op", "policy.list"}})["policies"].size() == 1);
}

TEST_CASE("state survives several restarts in a row", "[integration]") {
  RunningDaemon d;
  for (int round = 0; round < 3; ++round) {
    {
      Client c = d.daemon.Connect();
      if (round == 0) {
        CallOk(c, {{"op", "policy.set"},
                   {"scope", "user:alice"},
                   {"limits", kAliceLimits}});
      }
      std::string lease = AcquireLease(c, "alice", "t1");
      CallOk(c, {{"op", "commit"}, {"lease", lease}, {"tokens", 100}});
    }
    if (round % 2 == 0) {
      d.daemon.Kill9();
      REQUIRE(d.daemon.Start());
    } else {
      REQUIRE(d.daemon.Restart());
    }
  }
  Client c = d.daemon.Connect();
  json alice = CallOk(c, {{"op", "status"}, {"user", "alice"}});
  CHECK(alice["spend"]["requests"] == 3);
  CHECK(alice["spend"]["tokens"] == 300);
  CHECK(FindLimit(alice, "q")["used"] == 3);
}

}  // namespace
}  // namespace brake::integration
