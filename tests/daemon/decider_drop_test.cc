// Decider::DropFresh: the breakers of evicted subjects leave memory (and
// storage) once they hold nothing a new breaker would not.
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "budget/engine.h"
#include "daemon/decider.h"
#include "daemon/policy_codec.h"

namespace brake {
namespace {

constexpr int64_t kDropT0 = 1'700'000'000'000'000;
constexpr int64_t kDropSecUs = 1'000'000;

void NoLease(const Lease&, std::string*) {}

// Brings back what `req` needs that was evicted, from `stored` (as the
// daemon's storage thread would).
void LoadFor(Engine& engine, const AcquireRequest& req, const Batch& stored,
             int64_t now_us) {
  SubjectRows rows;
  rows.scopes = engine.MissingFor(req);
  rows.tasks = stored.tasks_put;
  rows.limiters = RowsOf(stored.limiters_put);
  rows.spend = RowsOf(stored.spend_put);
  engine.RestoreSubjects(rows, now_us);
  REQUIRE(engine.MissingFor(req).empty());
}

AcquireRequest Req(const std::string& task) {
  AcquireRequest req;
  req.user = "alice";
  req.task = task;
  req.fingerprint = "search(cats)";
  return req;
}

TEST_CASE("decider: an evicted task's fresh breaker is dropped",
          "[decider]") {
  Engine engine("L", 60 * kDropSecUs);
  Decider decider(&engine);
  auto policy = ParsePolicyText(
      R"({"limits":[{"name":"n","resource":"requests","algorithm":"quota",
          "limit":100,"period":"total"}],
          "breaker":{"loop":{"repeats":3,"window_ms":1000}}})");
  REQUIRE(policy.ok());
  decider.SetPolicy("task:*", *policy);
  const AcquireRequest req = Req("t1");
  auto granted = decider.Acquire(req, 1, kDropT0);
  REQUIRE(granted.ok());
  REQUIRE(granted->granted);
  REQUIRE(decider.Cancel(granted->lease, kDropT0).ok());
  CHECK(decider.breaker_count() == 1);
  Batch first;
  engine.Drain(&first, NoLease);
  decider.Drain(&first);
  CHECK(first.breakers_put.size() == 1);

  // In memory: kept, fresh or not.
  CHECK(decider.DropFresh(kDropT0 + 5 * kDropSecUs, 100) == 0);
  REQUIRE(engine.EvictIdle(kDropT0 + 5 * kDropSecUs, kDropSecUs, 1000) >= 1);
  CHECK_FALSE(engine.IsResident("task:t1"));

  SECTION("dropped once its loop window has passed") {
    CHECK(decider.DropFresh(kDropT0 + 5 * kDropSecUs, 100) == 1);
    CHECK(decider.breaker_count() == 0);
    CHECK(decider.dirty());
    Batch second;
    decider.Drain(&second);
    CHECK(second.breakers_deleted == std::vector<std::string>{"task:t1"});
    // The next use makes a new one from the policy.
    LoadFor(engine, req, first, kDropT0 + 6 * kDropSecUs);
    auto again = decider.Acquire(req, 1, kDropT0 + 6 * kDropSecUs);
    REQUIRE(again.ok());
    CHECK(again->granted);
    CHECK(decider.breaker_count() == 1);
  }
  SECTION("kept while its window still counts a sighting") {
    LoadFor(engine, Req("t2"), first, kDropT0 + 5 * kDropSecUs);
    auto late = decider.Acquire(Req("t2"), 1, kDropT0 + 5 * kDropSecUs);
    REQUIRE(late.ok());
    REQUIRE(decider.Cancel(late->lease, kDropT0 + 5 * kDropSecUs).ok());
    Batch b;
    engine.Drain(&b, NoLease);
    decider.Drain(&b);
    REQUIRE(engine.EvictIdle(kDropT0 + 5 * kDropSecUs + 1, 0, 1000) >= 1);
    CHECK(decider.DropFresh(kDropT0 + 5 * kDropSecUs + 500'000, 100) == 1);  // t1 only
    CHECK(decider.breaker_count() == 1);
    CHECK(decider.DropFresh(kDropT0 + 6 * kDropSecUs + 1, 100) == 1);  // now t2
    CHECK(decider.breaker_count() == 0);
  }
}

}  // namespace
}  // namespace brake
