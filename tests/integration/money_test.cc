// Money over the wire: usd cost caps under a race of many
// connections, cap boundaries to the micro- and nano-dollar, task trees,
// settlement (refund, extra charge, duplicate), open leases across kill -9
// with the ledger agreeing with status, and lease expiry.
//
// Prices and amounts are chosen so every figure is exact: a price of
// 1 usd/Mtok is 1,000 nano-usd per token, 0.001 usd/Mtok is 1 nano-usd per
// token, and 15,625 tokens at 1 usd/Mtok cost 2^-6 usd (exact in binary).
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "tests/integration/expect.h"
#include "tests/integration/harness.h"
#include "tests/integration/money.h"

namespace brake::integration {
namespace {

// Refused by `scope`'s limit for `reason`.
void RequireRefused(const json& reply, const std::string& reason,
                    const std::string& scope, const std::string& limit) {
  INFO("reply: " << reply.dump());
  REQUIRE(reply["granted"] == false);
  CHECK(reply["reason"] == reason);
  CHECK(reply["scope"] == scope);
  CHECK(reply["limit"] == limit);
}

// Refused because the cap is spent.
void RequireCostCap(const json& reply, const std::string& scope,
                    const std::string& limit = "cap") {
  RequireRefused(reply, "cost_cap", scope, limit);
}

// Refused because open leases hold the cap, not because it is spent.
void RequireHeld(const json& reply, const std::string& scope,
                 const std::string& limit = "cap") {
  RequireRefused(reply, "reserved", scope, limit);
  CHECK(reply["held"].get<double>() > 0);
}

// One acquire dearer than the whole cap can never fit: too_large, with a
// null retry, naming the cap.
void RequireTooLarge(const json& reply, const std::string& scope,
                     const std::string& limit = "cap") {
  RequireRefused(reply, "too_large", scope, limit);
  CHECK(reply["retry_after_ms"].is_null());
}

TEST_CASE(
    "200 connections racing for a usd cap that fits k reservations: exactly "
    "k are granted, in each of 100 trials",
    "[integration][money]") {
  constexpr int kConnections = 200;
  constexpr int kTrials = 100;
  constexpr int64_t kTokens = 15'625;           // at 1 usd/Mtok: 2^-6 usd
  constexpr int64_t kNanoPerCall = 15'625'000;  // the same in nano-usd
  RunningDaemon d(json{{"durability", "strict"}});
  Client admin = d.daemon.Connect();
  SetPrice(admin, "m", 1.0, 1.0);
  std::vector<Client> clients;
  clients.reserve(kConnections);
  for (int i = 0; i < kConnections; ++i) clients.push_back(d.daemon.Connect());
  // Every connection answers before the first trial: all are accepted and
  // read by the daemon.
  for (Client& c : clients) CallOk(c, {{"op", "ping"}});

  const int64_t start = MonoMs();
  int64_t granted_total = 0;
  for (int trial = 0; trial < kTrials; ++trial) {
    // k from 1 to 199, spread over the trials.
    const int k = 1 + (trial * 37) % (kConnections - 1);
    const std::string user = "race" + std::to_string(trial);
    // Even trials cap the user; odd ones a parent task whose children race.
    const bool on_parent = trial % 2 == 1;
    const std::string parent = user + "-P";
    const std::string scope = on_parent ? "task:" + parent : "user:" + user;
    if (on_parent) {
      std::string open = AcquireLease(admin, user, parent, {{"tokens", 0}});
      CallOk(admin, {{"op", "commit"}, {"lease", open}, {"tokens", 0}});
    }
    SetUsdCap(admin, scope, static_cast<double>(k) / 64.0);
    std::vector<std::string> lines;
    lines.reserve(kConnections);
    for (int i = 0; i < kConnections; ++i) {
      json request = {
          {"id", i},      {"op", "acquire"},
          {"user", user}, {"task", user + "-" + std::to_string(i % 8)},
          {"model", "m"}, {"tokens", kTokens}};
      if (on_parent) request["parent"] = parent;
      lines.push_back(request.dump());
    }
    // Released together: every line written in one tight loop, then every
    // answer read.
    for (int i = 0; i < kConnections; ++i) clients[i].SendLine(lines[i]);
    int granted = 0;
    int held = 0;  // refused: the k granted hold the cap
    for (int i = 0; i < kConnections; ++i) {
      json reply = json::parse(clients[i].ReadLine().value());
      INFO("trial " << trial << " k " << k << " reply " << reply.dump());
      REQUIRE(reply["ok"] == true);
      REQUIRE(reply["id"] == i);
      if (reply["granted"] == true) {
        ++granted;
      } else if (reply["reason"] == "reserved" && reply["scope"] == scope &&
                 reply["limit"] == "cap") {
        ++held;
      }
    }
    INFO("trial " << trial << " user " << user);
    REQUIRE(granted == k);
    REQUIRE(held == kConnections - k);
    json status = on_parent
                      ? CallOk(admin, {{"op", "status"}, {"task", parent}})
                      : CallOk(admin, {{"op", "status"}, {"user", user}});
    REQUIRE(status["reserved"]["requests"] == k);
    REQUIRE(Nano(status["reserved"]["usd"]) == k * kNanoPerCall);
    REQUIRE(Nano(FindLimit(status, "cap")["remaining"]) == 0);
    granted_total += granted;
  }
  const int64_t elapsed = MonoMs() - start;
  WARN("race: " << kTrials << " trials x " << kConnections << " connections in "
                << elapsed << " ms (" << granted_total << " grants)");
  CHECK(elapsed < 15000);
}

TEST_CASE("a usd cap hit exactly is granted, one micro-dollar over is not",
          "[integration][money]") {
  RunningDaemon d;
  Client c = d.daemon.Connect();
  SetPrice(c, "micro", 1.0, 0.5);     // dearer rate: 1,000 nano-usd a token
  SetPrice(c, "nano", 0.001, 0.001);  // 1 nano-usd a token
  SetUsdCap(c, "user:a", 0.5);
  SetUsdCap(c, "user:b", 0.5);
  SetUsdCap(c, "user:c", 0.5);

  SECTION("one acquire: over by one micro-dollar, then exactly") {
    RequireTooLarge(
        Acquire(c, "a", "t", {{"model", "micro"}, {"tokens", 500'001}}),
        "user:a");
    AcquireLease(c, "a", "t", {{"model", "micro"}, {"tokens", 500'000}});
    json status = CallOk(c, {{"op", "status"}, {"user", "a"}});
    CHECK(Nano(status["reserved"]["usd"]) == 500'000'000);
    CHECK(Nano(FindLimit(status, "cap")["remaining"]) == 0);
  }
  SECTION("two acquires filling the cap, then one micro-dollar more") {
    AcquireLease(c, "a", "t", {{"model", "micro"}, {"tokens", 250'000}});
    AcquireLease(c, "a", "t", {{"model", "micro"}, {"tokens", 250'000}});
    RequireHeld(Acquire(c, "a", "t", {{"model", "micro"}, {"tokens", 1}}),
                "user:a");
  }
  SECTION("nano-dollar steps") {
    RequireTooLarge(
        Acquire(c, "b", "t", {{"model", "nano"}, {"tokens", 500'000'001}}),
        "user:b");
    std::string lease =
        AcquireLease(c, "b", "t", {{"model", "nano"}, {"tokens", 499'999'999}});
    AcquireLease(c, "b", "t", {{"model", "nano"}, {"tokens", 1}});
    RequireHeld(Acquire(c, "b", "t", {{"model", "nano"}, {"tokens", 1}}),
                "user:b");
    // Settling one nano-dollar below the estimate frees exactly that.
    json commit = CallOk(c, {{"op", "commit"},
                             {"lease", lease},
                             {"input_tokens", 499'999'998},
                             {"output_tokens", 0}});
    CHECK(Nano(commit["charged_usd"]) == 499'999'998);
    AcquireLease(c, "b", "t", {{"model", "nano"}, {"tokens", 1}});
    RequireHeld(Acquire(c, "b", "t", {{"model", "nano"}, {"tokens", 1}}),
                "user:b");
  }
  SECTION("a settled spend exactly at the cap, and an extra charge beyond it") {
    std::string lease =
        AcquireLease(c, "c", "t", {{"model", "micro"}, {"tokens", 100}});
    // 400,000 input tokens at 1 usd/Mtok + 200,000 output at 0.5: 0.5 usd.
    json commit = CallOk(c, {{"op", "commit"},
                             {"lease", lease},
                             {"input_tokens", 400'000},
                             {"output_tokens", 200'000}});
    CHECK(Nano(commit["charged_usd"]) == 500'000'000);
    CHECK(commit["charged_tokens"] == 600'000);
    RequireCostCap(Acquire(c, "c", "t", {{"model", "micro"}, {"tokens", 1}}),
                   "user:c");
    // A cap used up exactly refuses even a call that costs nothing (the
    // quota admits an empty amount only while something is left).
    RequireCostCap(Acquire(c, "c", "t", {{"model", "micro"}, {"tokens", 0}}),
                   "user:c");
  }
}

TEST_CASE("task trees: a parent's cap covers its children, and owners are kept",
          "[integration][money]") {
  RunningDaemon d;
  Client c = d.daemon.Connect();
  SetPrice(c, "m", 1.0, 1.0);
  // The parent is opened (and owned by alice) by its first grant.
  std::string p =
      AcquireLease(c, "alice", "P", {{"model", "m"}, {"tokens", 0}});
  CallOk(c, {{"op", "commit"}, {"lease", p}, {"tokens", 0}});
  SetUsdCap(c, "task:P", 0.01, "pcap");  // 10,000 tokens

  std::string child = AcquireLease(
      c, "alice", "C", {{"parent", "P"}, {"model", "m"}, {"tokens", 6'000}});
  // A grandchild charges its grandparent as well.
  std::string grandchild = AcquireLease(
      c, "alice", "G", {{"parent", "C"}, {"model", "m"}, {"tokens", 4'000}});
  json parent_status = CallOk(c, {{"op", "status"}, {"task", "P"}});
  CHECK(Nano(parent_status["reserved"]["usd"]) == 10'000'000);
  CHECK(parent_status["reserved"]["requests"] == 2);

  // The parent's cap is held: the child and the grandchild are refused
  // with the parent's scope.
  RequireHeld(Acquire(c, "alice", "C", {{"model", "m"}, {"tokens", 1}}),
              "task:P", "pcap");
  RequireHeld(Acquire(c, "alice", "G", {{"model", "m"}, {"tokens", 1}}),
              "task:P", "pcap");
  // A new child of P is refused too, and records nothing.
  RequireHeld(Acquire(c, "alice", "C2",
                      {{"parent", "P"}, {"model", "m"}, {"tokens", 1}}),
              "task:P", "pcap");

  // Settlements roll up: the parent's status shows its subtree's spend.
  CallOk(c, {{"op", "commit"}, {"lease", child}, {"tokens", 5'000}});
  CallOk(c, {{"op", "commit"},
             {"lease", grandchild},
             {"input_tokens", 1'000},
             {"output_tokens", 500}});
  parent_status = CallOk(c, {{"op", "status"}, {"task", "P"}});
  CHECK(parent_status["spend"]["requests"] == 3);  // P's own zero-token call
  CHECK(parent_status["spend"]["tokens"] == 6'500);
  CHECK(Nano(parent_status["spend"]["usd"]) == 6'500'000);
  CHECK(parent_status["reserved"]["requests"] == 0);
  CHECK(Nano(FindLimit(parent_status, "pcap")["used"]) == 6'500'000);
  json child_status = CallOk(c, {{"op", "status"}, {"task", "C"}});
  CHECK(child_status["spend"]["tokens"] == 6'500);
  CHECK(child_status["spend"]["requests"] == 2);
  json grandchild_status = CallOk(c, {{"op", "status"}, {"task", "G"}});
  CHECK(grandchild_status["spend"]["tokens"] == 1'500);
  // The parent's cap lists as a limit of its children.
  CHECK(FindLimit(child_status, "pcap").is_object());
  // Refunds made room again under the parent's cap.
  AcquireLease(c, "alice", "C", {{"model", "m"}, {"tokens", 3'500}});
  RequireHeld(Acquire(c, "alice", "G", {{"model", "m"}, {"tokens", 1}}),
              "task:P", "pcap");

  // Owners: bob may not acquire on alice's tasks, nor open a child of one.
  RequireError(c.Call({{"op", "acquire"}, {"user", "bob"}, {"task", "C"}}),
               "forbidden", "task");
  RequireError(c.Call({{"op", "acquire"}, {"user", "bob"}, {"task", "P"}}),
               "forbidden", "task");
  RequireError(c.Call({{"op", "acquire"},
                       {"user", "bob"},
                       {"task", "B1"},
                       {"parent", "P"}}),
               "forbidden", "parent");
  // Refused attempts record nothing: B1 is still free for bob, as a root.
  AcquireLease(c, "bob", "B1");
  // And the refused C2 was never opened under alice.
  AcquireLease(c, "bob", "C2");
}

TEST_CASE(
    "settlement: refund and extra charge show in status and usage, and a "
    "duplicate commit answers the first result",
    "[integration][money]") {
  RunningDaemon d;
  Client c = d.daemon.Connect();
  SetPrice(c, "m", 1.0, 2.0);  // input 1,000 and output 2,000 nano-usd a token
  SetUsdCap(c, "user:alice", 0.01);

  // Reservation: 1,000 tokens at the dearer rate, 0.002 usd.
  std::string a =
      AcquireLease(c, "alice", "t1", {{"model", "m"}, {"tokens", 1'000}});
  json s = CallOk(c, {{"op", "status"}, {"user", "alice"}});
  CHECK(s["reserved"]["requests"] == 1);
  CHECK(s["reserved"]["tokens"] == 1'000);
  CHECK(Nano(s["reserved"]["usd"]) == 2'000'000);
  CHECK(s["spend"]["requests"] == 0);
  CHECK(Nano(s["spend"]["usd"]) == 0);
  CHECK(Nano(FindLimit(s, "cap")["used"]) == 0);  // settled: nothing yet
  CHECK(Nano(FindLimit(s, "cap")["held"]) == 2'000'000);

  // Refund: 300 in + 200 out cost 0.0007 usd.
  json first = CallOk(c, {{"op", "commit"},
                          {"lease", a},
                          {"input_tokens", 300},
                          {"output_tokens", 200},
                          {"latency_ms", 120}});
  CHECK(first["charged_tokens"] == 500);
  CHECK(Nano(first["charged_usd"]) == 700'000);
  CHECK_FALSE(first.contains("duplicate"));
  s = CallOk(c, {{"op", "status"}, {"user", "alice"}});
  CHECK(s["reserved"]["requests"] == 0);
  CHECK(s["reserved"]["tokens"] == 0);
  CHECK(Nano(s["reserved"]["usd"]) == 0);
  CHECK(s["spend"]["requests"] == 1);
  CHECK(s["spend"]["tokens"] == 500);
  CHECK(Nano(s["spend"]["usd"]) == 700'000);
  CHECK(Nano(FindLimit(s, "cap")["used"]) == 700'000);

  // Duplicate: the first result again, nothing changes.
  json again = CallOk(c, {{"op", "commit"},
                          {"lease", a},
                          {"input_tokens", 9'000},
                          {"output_tokens", 0}});
  CHECK(again["duplicate"] == true);
  CHECK(again["charged_tokens"] == 500);
  CHECK(Nano(again["charged_usd"]) == 700'000);
  CHECK(CallOk(c, {{"op", "status"}, {"user", "alice"}})["spend"] ==
        s["spend"]);

  // Extra charge: reserved 1,000 tokens (0.002), used 1,000 in + 2,000 out
  // (a total of 3,500 tokens, the 500 beyond the split at the dearer rate).
  std::string b =
      AcquireLease(c, "alice", "t2", {{"model", "m"}, {"tokens", 1'000}});
  json second = CallOk(c, {{"op", "commit"},
                           {"lease", b},
                           {"tokens", 3'500},
                           {"input_tokens", 1'000},
                           {"output_tokens", 2'000}});
  CHECK(second["charged_tokens"] == 3'500);
  CHECK(Nano(second["charged_usd"]) == 1'000'000 + 4'000'000 + 1'000'000);
  s = CallOk(c, {{"op", "status"}, {"user", "alice"}});
  CHECK(s["spend"]["requests"] == 2);
  CHECK(s["spend"]["tokens"] == 4'000);
  CHECK(Nano(s["spend"]["usd"]) == 6'700'000);
  CHECK(s["reserved"]["requests"] == 0);

  // The ledger: one total, and one row per task.
  json total = UsageTotal(c, "alice");
  CHECK(total["calls"] == 2);
  CHECK(total["requests"] == 2);
  CHECK(total["tokens"] == 4'000);
  CHECK(total["input_tokens"] == 1'300);
  CHECK(total["output_tokens"] == 2'200);
  CHECK(Nano(total["usd"]) == 6'700'000);
  CHECK(total["expired"] == 0);
  json by_task = CallOk(c, {{"op", "usage"}, {"user", "alice"}});
  INFO("usage by task: " << by_task.dump());
  REQUIRE(by_task["rows"].size() == 2);
  CHECK(by_task["rows"][0]["key"] == "t1");
  CHECK(Nano(by_task["rows"][0]["usd"]) == 700'000);
  CHECK(by_task["rows"][1]["key"] == "t2");
  CHECK(by_task["rows"][1]["tokens"] == 3'500);

  // An extra charge may drive the budget below zero; it then denies.
  std::string x =
      AcquireLease(c, "alice", "t3", {{"model", "m"}, {"tokens", 1'000}});
  CallOk(c, {{"op", "commit"},
             {"lease", x},
             {"input_tokens", 0},
             {"output_tokens", 2'000}});  // 0.004 usd: 0.0107 in all
  s = CallOk(c, {{"op", "status"}, {"user", "alice"}});
  CHECK(Nano(s["spend"]["usd"]) == 10'700'000);
  CHECK(Nano(FindLimit(s, "cap")["used"]) == 10'700'000);
  CHECK(Nano(FindLimit(s, "cap")["remaining"]) <= 0);
  RequireCostCap(Acquire(c, "alice", "t3", {{"model", "m"}, {"tokens", 1}}),
                 "user:alice");

  // A cancelled lease leaves no ledger row and no spend.
  SetUsdCap(c, "user:bob", 1.0);
  std::string y = AcquireLease(c, "bob", "tb", {{"model", "m"}, {"tokens", 5}});
  CallOk(c, {{"op", "cancel"}, {"lease", y}});
  json bob_total = UsageTotal(c, "bob");
  CHECK(bob_total["calls"] == 0);
  CHECK(CallOk(c, {{"op", "status"}, {"user", "bob"}})["spend"]["requests"] ==
        0);
}

}  // namespace
}  // namespace brake::integration
