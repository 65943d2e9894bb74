// Money over the wire, leases across a restart: leases open at
// kill -9 are committed after it with the ledger agreeing with status, and
// a lease left open expires at its estimate.
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "tests/integration/expect.h"
#include "tests/integration/harness.h"
#include "tests/integration/money.h"

namespace brake::integration {
namespace {

TEST_CASE(
    "leases open at kill -9 are committed after the restart, and the ledger "
    "then equals status spend",
    "[integration][money]") {
  RunningDaemon d(json{{"durability", "strict"}});
  std::vector<std::string> leases;
  {
    Client c = d.daemon.Connect();
    SetPrice(c, "m", 3.0, 15.0);
    SetPrice(c, "n", 0.25, 1.25);
    // A call that names no model is priced as "*" under a usd cap (free
    // here): its lease keeps that price across the restart.
    SetPrice(c, "*", 0, 0);
    SetUsdCap(c, "user:alice", 1.0);
    std::string settled =
        AcquireLease(c, "alice", "root", {{"model", "m"}, {"tokens", 2'000}});
    CallOk(c, {{"op", "commit"},
               {"lease", settled},
               {"input_tokens", 1'500},
               {"output_tokens", 100}});
    leases.push_back(
        AcquireLease(c, "alice", "root", {{"model", "m"}, {"tokens", 4'000}}));
    leases.push_back(AcquireLease(c, "alice", "sub",
                                  {{"parent", "root"},
                                   {"model", "n"},
                                   {"tokens", 10'000},
                                   {"resource", "openai"}}));
    leases.push_back(AcquireLease(c, "alice", "sub", {{"tokens", 77}}));
    d.daemon.Kill9();
  }
  REQUIRE(d.daemon.Start());
  Client c = d.daemon.Connect();
  json before = CallOk(c, {{"op", "status"}, {"user", "alice"}});
  CHECK(before["reserved"]["requests"] == 3);
  CHECK(before["reserved"]["tokens"] == 4'000 + 10'000 + 77);
  CHECK(Nano(before["reserved"]["usd"]) == 4'000 * 15'000 + 10'000 * 1'250);

  // Refund, extra charge, plain tokens.
  json r0 = CallOk(c, {{"op", "commit"},
                       {"lease", leases[0]},
                       {"input_tokens", 1'000},
                       {"output_tokens", 500}});
  CHECK(Nano(r0["charged_usd"]) == 1'000 * 3'000 + 500 * 15'000);
  json r1 = CallOk(c, {{"op", "commit"},
                       {"lease", leases[1]},
                       {"input_tokens", 20'000},
                       {"output_tokens", 4'000},
                       {"outcome", "error"}});
  CHECK(Nano(r1["charged_usd"]) == 20'000 * 250 + 4'000 * 1'250);
  json r2 = CallOk(c, {{"op", "commit"}, {"lease", leases[2]}, {"tokens", 70}});
  CHECK(r2["charged_tokens"] == 70);

  json status = CallOk(c, {{"op", "status"}, {"user", "alice"}});
  CHECK(status["reserved"]["requests"] == 0);
  CHECK(status["spend"]["requests"] == 4);
  CHECK(status["spend"]["tokens"] == 1'600 + 1'500 + 24'000 + 70);
  const int64_t spend_nano = 1'500 * 3'000 + 100 * 15'000 + 1'000 * 3'000 +
                             500 * 15'000 + 20'000 * 250 + 4'000 * 1'250;
  CHECK(Nano(status["spend"]["usd"]) == spend_nano);

  json total = UsageTotal(c, "alice");
  CHECK(total["calls"] == 4);
  CHECK(total["requests"] == status["spend"]["requests"]);
  CHECK(total["tokens"] == status["spend"]["tokens"]);
  CHECK(Nano(total["usd"]) == Nano(status["spend"]["usd"]));
  CHECK(total["expired"] == 0);
  // The subtree still rolls up after the restart.
  json root = CallOk(c, {{"op", "status"}, {"task", "root"}});
  CHECK(root["spend"]["tokens"] == status["spend"]["tokens"]);

  // And the ledger still equals status after another kill -9.
  d.daemon.Kill9();
  REQUIRE(d.daemon.Start());
  Client again = d.daemon.Connect();
  json status2 = CallOk(again, {{"op", "status"}, {"user", "alice"}});
  CHECK(status2["spend"] == status["spend"]);
  json total2 = UsageTotal(again, "alice");
  CHECK(total2["tokens"] == status2["spend"]["tokens"]);
  CHECK(Nano(total2["usd"]) == Nano(status2["spend"]["usd"]));
}

TEST_CASE(
    "a lease left unsettled past lease_ttl_ms is settled at its "
    "estimate and recorded as expired",
    "[integration][money]") {
  RunningDaemon d(json{{"lease_ttl_ms", 1000}});
  Client c = d.daemon.Connect();
  SetPrice(c, "m", 1.0, 2.0);
  const int64_t granted_at = MonoMs();
  std::string lease =
      AcquireLease(c, "alice", "t1", {{"model", "m"}, {"tokens", 250}});
  const bool settled = PollUntil(
      [&] {
        json s = CallOk(c, {{"op", "status"}, {"user", "alice"}});
        return s["reserved"]["requests"] == 0;
      },
      3000);
  const int64_t elapsed = MonoMs() - granted_at;
  REQUIRE(settled);
  CHECK(elapsed >= 950);
  CHECK(elapsed <= 1600);
  json s = CallOk(c, {{"op", "status"}, {"user", "alice"}});
  CHECK(s["spend"]["requests"] == 1);
  CHECK(s["spend"]["tokens"] == 250);
  CHECK(Nano(s["spend"]["usd"]) == 500'000);
  CHECK(Nano(s["reserved"]["usd"]) == 0);
  json total = UsageTotal(c, "alice");
  CHECK(total["calls"] == 1);
  CHECK(total["expired"] == 1);
  CHECK(total["tokens"] == 250);
  CHECK(Nano(total["usd"]) == 500'000);
  json by_task = CallOk(c, {{"op", "usage"}, {"user", "alice"}});
  REQUIRE(by_task["rows"].size() == 1);
  CHECK(by_task["rows"][0]["expired"] == 1);
}

TEST_CASE(
    "a lease open at kill -9 and not committed expires after the restart, and "
    "the ledger still equals status",
    "[integration][money]") {
  RunningDaemon d(json{{"durability", "strict"}, {"lease_ttl_ms", 1000}});
  std::string committed;
  {
    Client c = d.daemon.Connect();
    SetPrice(c, "m", 1.0, 4.0);
    committed =
        AcquireLease(c, "alice", "t1", {{"model", "m"}, {"tokens", 100}});
    AcquireLease(c, "alice", "t2", {{"model", "m"}, {"tokens", 300}});
    d.daemon.Kill9();
  }
  REQUIRE(d.daemon.Start());
  Client c = d.daemon.Connect();
  json r = CallOk(c, {{"op", "commit"},
                      {"lease", committed},
                      {"input_tokens", 50},
                      {"output_tokens", 10}});
  CHECK(Nano(r["charged_usd"]) == 50 * 1'000 + 10 * 4'000);
  REQUIRE(PollUntil(
      [&] {
        return CallOk(c, {{"op", "status"},
                          {"user", "alice"}})["reserved"]["requests"] == 0;
      },
      3000));
  json status = CallOk(c, {{"op", "status"}, {"user", "alice"}});
  CHECK(status["spend"]["requests"] == 2);
  CHECK(status["spend"]["tokens"] == 60 + 300);
  CHECK(Nano(status["spend"]["usd"]) == 90'000 + 300 * 4'000);
  json total = UsageTotal(c, "alice");
  CHECK(total["calls"] == 2);
  CHECK(total["expired"] == 1);
  CHECK(total["requests"] == status["spend"]["requests"]);
  CHECK(total["tokens"] == status["spend"]["tokens"]);
  CHECK(Nano(total["usd"]) == Nano(status["spend"]["usd"]));
}

}  // namespace
}  // namespace brake::integration
