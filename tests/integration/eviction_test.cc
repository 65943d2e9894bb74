// Idle subjects leave the daemon's memory and come back from the database on
// their next use with every budget intact; a restart loads subjects the same
// way, on demand.
#include <catch2/catch.hpp>
#include <string>
#include <vector>

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

// Sends `n` acquires for new users (u<i>, task t<i>) in one write; returns
// their leases.
std::vector<std::string> AcquireNewSubjects(Client& c, int n) {
  std::string lines;
  for (int i = 0; i < n; ++i) {
    lines += json{{"op", "acquire"}, {"id", i}, {"user", "u" + std::to_string(i)},
                  {"task", "t" + std::to_string(i)}}.dump() + "\n";
  }
  c.SendRaw(lines);
  std::vector<std::string> leases;
  for (int i = 0; i < n; ++i) {
    auto line = c.ReadLine();
    REQUIRE(line);
    json reply = json::parse(*line);
    INFO(reply.dump());
    REQUIRE(reply["granted"] == true);
    leases.push_back(reply["lease"]);
  }
  return leases;
}

TEST_CASE("max_subjects bounds the subjects in memory", "[integration]") {
  // 500 users and their tasks, plus global: 1,001 subjects, each held in
  // memory by an open lease.
  RunningDaemon d(json{{"max_subjects", 1000}, {"durability", "batched"}});
  Client c = d.daemon.Connect();
  std::vector<std::string> leases = AcquireNewSubjects(c, 500);
  CHECK(Metric(c, "brake_subjects") == 1001);

  // A new subject is refused, naming the setting; known ones go on.
  json refused = c.Call({{"op", "acquire"}, {"user", "late"}, {"task", "x"}});
  RequireError(refused, "unavailable", "max_subjects");
  CHECK(Metric(c, "brake_limit_hits_total{limit=\"max_subjects\"}") == 1);
  CHECK(Acquire(c, "u7", "t7")["granted"] == true);

  // Settled, they may go although subject_idle_ms (1 h) has not passed:
  // above 90% of the cap, anything idle is evicted.
  for (const std::string& lease : leases) {
    CallOk(c, {{"op", "cancel"}, {"lease", lease}});
  }
  const int64_t deadline = MonoMs() + 15000;
  while (Metric(c, "brake_subjects") > 900 && MonoMs() < deadline) {
    c.Call({{"op", "ping"}});
  }
  CHECK(Metric(c, "brake_subjects") <= 900);
  CHECK(Acquire(c, "late", "x")["granted"] == true);
}

}  // namespace
}  // namespace brake::integration
