// Happy paths of every op, through a real braked's socket.
#include <catch2/catch.hpp>
#include <set>
#include <string>
#include <vector>

#include "tests/integration/expect.h"
#include "tests/integration/harness.h"

namespace brake::integration {
namespace {

const json kQuotaAndBucket = json::parse(R"([
  {"name":"q","resource":"requests","algorithm":"quota","limit":5,
   "period":"total"},
  {"name":"rps","resource":"requests","algorithm":"token_bucket","rate":100,
   "per_ms":1000,"burst":100}
])");

TEST_CASE("ping answers ok, the version and the id", "[integration]") {
  RunningDaemon d;
  Client c = d.daemon.Connect();
  json reply = CallOk(c, {{"op", "ping"}, {"id", 7}});
  CHECK(reply["id"] == 7);
  REQUIRE(reply["version"].is_string());
  CHECK_FALSE(reply["version"].get<std::string>().empty());

  json by_string = CallOk(c, {{"op", "ping"}, {"id", "abc"}});
  CHECK(by_string["id"] == "abc");
  json no_id = CallOk(c, {{"op", "ping"}});
  CHECK_FALSE(no_id.contains("id"));
}

TEST_CASE("acquire, commit and cancel settle into status", "[integration]") {
  RunningDaemon d;
  Client c = d.daemon.Connect();
  CallOk(c, {{"op", "policy.set"},
             {"scope", "user:alice"},
             {"limits", kQuotaAndBucket}});

  json granted = Acquire(c, "alice", "t1", {{"tokens", 100}, {"id", 1}});
  CHECK(granted["id"] == 1);
  REQUIRE(granted["granted"] == true);
  REQUIRE(granted["lease"].is_string());
  CHECK(granted.contains("waited_ms"));
  CHECK(granted["remaining"]["requests"] == 4);
  const std::string lease1 = granted["lease"];

  SECTION("an open lease is reserved, not spent") {
    json status = CallOk(c, {{"op", "status"}, {"user", "alice"}});
    CHECK(status["scope"] == "user:alice");
    CHECK(status["reserved"]["requests"] == 1);
    CHECK(status["reserved"]["tokens"] == 100);
    CHECK(status["spend"]["requests"] == 0);
    CHECK(status["spend"]["tokens"] == 0);
    json q = FindLimit(status, "q");
    REQUIRE(q.is_object());
    CHECK(q["used"] == 0);
    CHECK(q["held"] == 1);
    CHECK(q["remaining"] == 4);
    CHECK(q["scope"] == "user:alice");
    CHECK(q["algorithm"] == "quota");
    CHECK(q["resource"] == "requests");
  }

  SECTION("commit charges the actual tokens; a second commit is a duplicate") {
    json commit = CallOk(c, {{"op", "commit"},
                             {"lease", lease1},
                             {"tokens", 150},
                             {"latency_ms", 12},
                             {"outcome", "ok"}});
    CHECK(commit["charged_tokens"] == 150);
    CHECK(commit["charged_usd"] == 0.0);
    CHECK_FALSE(commit.contains("duplicate"));

    json again =
        CallOk(c, {{"op", "commit"}, {"lease", lease1}, {"tokens", 999}});
    CHECK(again["duplicate"] == true);
    CHECK(again["charged_tokens"] == 150);

    json status = CallOk(c, {{"op", "status"}, {"user", "alice"}});
    CHECK(status["spend"]["requests"] == 1);
    CHECK(status["spend"]["tokens"] == 150);
    CHECK(status["reserved"]["requests"] == 0);
    CHECK(status["reserved"]["tokens"] == 0);
    CHECK(FindLimit(status, "q")["used"] == 1);

    json task = CallOk(c, {{"op", "status"}, {"task", "t1"}});
    CHECK(task["scope"] == "task:t1");
    CHECK(task["spend"]["tokens"] == 150);
    // The user's limits apply to the task and are listed with their scope.
    json q = FindLimit(task, "q");
    REQUIRE(q.is_object());
    CHECK(q["scope"] == "user:alice");
  }

  SECTION("cancel releases the reservation as if the call never happened") {
    json cancel = CallOk(c, {{"op", "cancel"}, {"lease", lease1}});
    CHECK_FALSE(cancel.contains("duplicate"));
    json status = CallOk(c, {{"op", "status"}, {"user", "alice"}});
    CHECK(status["reserved"]["requests"] == 0);
    CHECK(status["spend"]["requests"] == 0);
    CHECK(FindLimit(status, "q")["used"] == 0);
    json again = CallOk(c, {{"op", "cancel"}, {"lease", lease1}});
    CHECK(again["duplicate"] == true);
  }

  SECTION("the quota denies once held or used up, with reason, scope and "
          "limit") {
    std::vector<std::string> leases = {lease1};
    for (int i = 0; i < 4; ++i) leases.push_back(AcquireLease(c, "alice", "t1"));
    json held = Acquire(c, "alice", "t1");
    CHECK(held["reason"] == "reserved");  // five open leases hold it
    CHECK(held["held"] == 5);
    for (const std::string& l : leases) {
      CallOk(c, {{"op", "commit"}, {"lease", l}, {"tokens", 100}});
    }
    json denied = Acquire(c, "alice", "t1", {{"id", "last"}});
    CHECK(denied["id"] == "last");
    CHECK(denied["granted"] == false);
    CHECK(denied["reason"] == "quota_exhausted");  // five settled spend it
    CHECK(denied["scope"] == "user:alice");
    CHECK(denied["limit"] == "q");
    CHECK(denied.contains("retry_after_ms"));
    CHECK_FALSE(denied.contains("lease"));
    // A denial charges nothing.
    json status = CallOk(c, {{"op", "status"}, {"user", "alice"}});
    CHECK(FindLimit(status, "q")["used"] == 5);
    CHECK(FindLimit(status, "q")["held"] == 0);
    CHECK(status["reserved"]["requests"] == 0);
  }
}

TEST_CASE("policy.set, get, list and delete", "[integration]") {
  RunningDaemon d;
  Client c = d.daemon.Connect();
  json set = CallOk(c, {{"op", "policy.set"},
                        {"scope", "user:alice"},
                        {"limits", kQuotaAndBucket}});
  CHECK(set["scope"] == "user:alice");
  REQUIRE(set["policy"]["limits"].size() == 2);

  json get = CallOk(c, {{"op", "policy.get"}, {"scope", "user:alice"}});
  CHECK(get["scope"] == "user:alice");
  CHECK(get["policy"] == set["policy"]);
  CHECK(get["policy"]["limits"][0]["name"] == "q");
  CHECK(get["policy"]["limits"][1]["algorithm"] == "token_bucket");
  CHECK(get["policy"]["limits"][1]["burst"] == 100);

  CallOk(c, {{"op", "policy.set"},
             {"scope", "user:*"},
             {"limits", json::parse(R"([{"name":"inflight",
               "resource":"requests","algorithm":"concurrency","limit":8}])")}});
  json list = CallOk(c, {{"op", "policy.list"}});
  REQUIRE(list["policies"].is_array());
  REQUIRE(list["policies"].size() == 2);
  std::set<std::string> scopes;
  for (const json& p : list["policies"]) scopes.insert(p["scope"]);
  CHECK(scopes == std::set<std::string>{"user:*", "user:alice"});

  // The default applies to users without a policy of their own.
  json bob = CallOk(c, {{"op", "status"}, {"user", "bob"}});
  REQUIRE(FindLimit(bob, "inflight").is_object());
  CHECK(FindLimit(bob, "inflight")["scope"] == "user:bob");

  json missing = CallOk(c, {{"op", "policy.get"}, {"scope", "task:none"}});
  CHECK(missing["policy"].is_null());

  json deleted = CallOk(c, {{"op", "policy.delete"}, {"scope", "user:alice"}});
  CHECK(deleted["deleted"] == true);
  json again = CallOk(c, {{"op", "policy.delete"}, {"scope", "user:alice"}});
  CHECK(again["deleted"] == false);
  CHECK(CallOk(c, {{"op", "policy.get"}, {"scope", "user:alice"}})["policy"]
            .is_null());
  CHECK(CallOk(c, {{"op", "policy.list"}})["policies"].size() == 1);
}

TEST_CASE("reset clears the counters and spend of a scope", "[integration]") {
  RunningDaemon d;
  Client c = d.daemon.Connect();
  CallOk(c, {{"op", "policy.set"},
             {"scope", "user:alice"},
             {"limits", kQuotaAndBucket}});
  for (int i = 0; i < 5; ++i) {
    std::string lease = AcquireLease(c, "alice", "t1");
    CallOk(c, {{"op", "commit"}, {"lease", lease}, {"tokens", 10}});
  }
  CHECK(Acquire(c, "alice", "t1")["granted"] == false);

  json reset = CallOk(c, {{"op", "reset"}, {"scope", "user:alice"}});
  CHECK(reset["scope"] == "user:alice");
  json status = CallOk(c, {{"op", "status"}, {"user", "alice"}});
  CHECK(FindLimit(status, "q")["used"] == 0);
  CHECK(status["spend"]["requests"] == 0);
  CHECK(status["spend"]["tokens"] == 0);
  AcquireLease(c, "alice", "t1");
}

TEST_CASE("prices.set prices a model's acquires and commits", "[integration]") {
  RunningDaemon d;
  Client c = d.daemon.Connect();
  SetPrice(c, "gpt-4o", 2.5, 10);
  std::string lease =
      AcquireLease(c, "alice", "t1", {{"model", "gpt-4o"}, {"tokens", 1000}});
  json reserved = CallOk(c, {{"op", "status"}, {"user", "alice"}});
  CHECK(reserved["reserved"]["usd"].get<double>() > 0.0);

  json commit = CallOk(c, {{"op", "commit"},
                           {"lease", lease},
                           {"input_tokens", 1'000'000},
                           {"output_tokens", 100'000}});
  CHECK(commit["charged_tokens"] == 1'100'000);
  CHECK(commit["charged_usd"].get<double>() == Approx(2.5 + 1.0));
  json status = CallOk(c, {{"op", "status"}, {"user", "alice"}});
  CHECK(status["spend"]["usd"].get<double>() == Approx(3.5));
  CHECK(status["reserved"]["usd"].get<double>() == Approx(0.0));
}

TEST_CASE("metrics answers Prometheus text with live counters",
          "[integration]") {
  RunningDaemon d;
  Client c = d.daemon.Connect();
  std::string lease = AcquireLease(c, "alice", "t1");
  CallOk(c, {{"op", "commit"}, {"lease", lease}, {"tokens", 1}});
  c.Call({{"op", "no.such.op"}});

  json reply = CallOk(c, {{"op", "metrics"}});
  REQUIRE(reply["text"].is_string());
  const std::string text = reply["text"];
  CHECK_THAT(text, Catch::Matchers::Contains("# TYPE brake_requests_total"));
  CHECK(MetricValue(text, "brake_acquires_total{result=\"granted\"}") == 1.0);
  CHECK(MetricValue(text, "brake_commits_total") == 1.0);
  CHECK(MetricValue(text, "brake_errors_total") == 1.0);
  CHECK(MetricValue(text, "brake_requests_total") == 4.0);
  CHECK(MetricValue(text, "brake_connections") == 1.0);
  CHECK(MetricValue(text, "brake_leases_open") == 0.0);
}

TEST_CASE("tasks with a parent charge their spend to the parent",
          "[integration]") {
  RunningDaemon d;
  Client c = d.daemon.Connect();
  std::string parent = AcquireLease(c, "alice", "root");
  CallOk(c, {{"op", "commit"}, {"lease", parent}, {"tokens", 10}});
  std::string child = AcquireLease(c, "alice", "child", {{"parent", "root"}});
  CallOk(c, {{"op", "commit"}, {"lease", child}, {"tokens", 5}});
  CHECK(CallOk(c, {{"op", "status"}, {"task", "root"}})["spend"]["tokens"] ==
        15);
  CHECK(CallOk(c, {{"op", "status"}, {"task", "child"}})["spend"]["tokens"] ==
        5);
}

}  // namespace
}  // namespace brake::integration
