// Idle subjects leave the daemon's memory and come back from the database on
// their next use with every budget intact; a restart loads subjects the same
// way, on demand.
#include <catch2/catch.hpp>
#include <string>

#include "tests/integration/expect.h"
#include "tests/integration/harness.h"

namespace brake::integration {
namespace {

const json kQuota5 = json::parse(R"([
  {"name":"q","resource":"requests","algorithm":"quota","limit":5,
   "period":"total"}
])");

// Polls the metrics until every subject but "global" has left memory.
void WaitUntilOnlyGlobalResident(Client& c) {
  const int64_t deadline = MonoMs() + 15000;
  while (Metric(c, "brake_subjects") != 1 && MonoMs() < deadline) {
    c.Call({{"op", "ping"}});
  }
  REQUIRE(Metric(c, "brake_subjects") == 1);
}

void UseUp(Client& c, const std::string& user, const std::string& task,
           int n) {
  for (int i = 0; i < n; ++i) {
    CallOk(c, {{"op", "commit"}, {"lease", AcquireLease(c, user, task)}});
  }
}

TEST_CASE("an idle subject leaves memory and comes back with its budget",
          "[integration]") {
  RunningDaemon d(json{{"subject_idle_ms", 200}});
  Client c = d.daemon.Connect();
  CallOk(c, {{"op", "policy.set"}, {"scope", "user:*"}, {"limits", kQuota5}});
  UseUp(c, "alice", "t1", 3);
  WaitUntilOnlyGlobalResident(c);
  CHECK(Metric(c, "brake_subjects_evicted_total") >= 2);
  CHECK(Metric(c, "brake_tasks") == 0);

  // status loads alice back: her spend is there.
  json status = CallOk(c, {{"op", "status"}, {"user", "alice"}});
  CHECK(status["spend"]["requests"] == 3);
  // Two calls are left of five; then the quota denies.
  UseUp(c, "alice", "t1", 2);
  json denied = Acquire(c, "alice", "t1");
  CHECK(denied["granted"] == false);
  CHECK(denied["reason"] == "quota_exhausted");
  CHECK(Metric(c, "brake_subject_loads_total") >= 1);

  // The task still belongs to alice after it left memory.
  WaitUntilOnlyGlobalResident(c);
  RequireError(
      c.Call({{"op", "acquire"}, {"user", "bob"}, {"task", "t1"}}),
      "forbidden", "task");
}

TEST_CASE("pipelined requests for an evicted subject keep their order",
          "[integration]") {
  RunningDaemon d(json{{"subject_idle_ms", 200}});
  Client c = d.daemon.Connect();
  CallOk(c, {{"op", "policy.set"}, {"scope", "user:*"}, {"limits", kQuota5}});
  UseUp(c, "alice", "t1", 2);
  WaitUntilOnlyGlobalResident(c);
  // Four acquires in one write: the first waits for the load, the rest
  // queue behind it; three fit in the quota.
  std::string lines;
  for (int i = 0; i < 4; ++i) {
    lines += json{{"op", "acquire"}, {"id", i}, {"user", "alice"},
                  {"task", "t1"}}.dump() + "\n";
  }
  c.SendRaw(lines);
  for (int i = 0; i < 4; ++i) {
    auto line = c.ReadLine();
    REQUIRE(line);
    json reply = json::parse(*line);
    CHECK(reply["id"] == i);
    CHECK(reply["granted"] == (i < 3));
  }
}

TEST_CASE("a kind reset reaches subjects that are not in memory",
          "[integration]") {
  RunningDaemon d(json{{"subject_idle_ms", 200}});
  Client c = d.daemon.Connect();
  CallOk(c, {{"op", "policy.set"}, {"scope", "user:*"}, {"limits", kQuota5}});
  UseUp(c, "alice", "t1", 5);
  CHECK(Acquire(c, "alice", "t1")["granted"] == false);
  WaitUntilOnlyGlobalResident(c);
  CallOk(c, {{"op", "reset"}, {"scope", "user:*"}});
  UseUp(c, "alice", "t1", 5);
  CHECK(Acquire(c, "alice", "t1")["granted"] == false);
}

TEST_CASE("global and subject budgets survive a restart that loads lazily",
          "[integration]") {
  RunningDaemon d;
  {
    Client c = d.daemon.Connect();
    CallOk(c, {{"op", "policy.set"}, {"scope", "global"}, {"limits", kQuota5}});
    UseUp(c, "alice", "t1", 2);
    UseUp(c, "bob", "t2", 2);
  }
  d.daemon.Kill9();
  REQUIRE(d.daemon.Restart());
  Client c = d.daemon.Connect();
  CHECK(Metric(c, "brake_subjects") == 1);  // only global is in memory
  UseUp(c, "carol", "t3", 1);
  json denied = Acquire(c, "carol", "t3");
  CHECK(denied["reason"] == "quota_exhausted");
  CHECK(denied["scope"] == "global");
  json status = CallOk(c, {{"op", "status"}, {"task", "t2"}});
  CHECK(status["spend"]["requests"] == 2);
}

}  // namespace
}  // namespace brake::integration
