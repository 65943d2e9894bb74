// Engine: the limiters a subject owns, their shared limits and how their
// changes reach storage.
#include <catch2/catch.hpp>
#include <string>
#include <utility>

#include "budget/engine.h"
#include "tests/budget/engine_helpers.h"

namespace brake {
namespace {

using namespace engine_test;

TEST_CASE("engine limiters: a limit dropped and set again keeps its count",
          "[engine]") {
  Engine e("L", kTtlUs);
  e.SetPolicy("task:*", MakePolicy({QuotaSpec("a", Resource::kRequests, 2)}));
  std::string open = Grant(e, Req("alice", "t1"), kT0);
  // The policy that made the limiter goes; its open lease settles against
  // the limiter, which still reads the limit it was made from.
  e.SetPolicy("task:*", MakePolicy({QuotaSpec("b", Resource::kRequests, 5)}));
  Commit(e, open, std::nullopt, kT0 + 1);
  CHECK(UsageOf(e, "task:t1", "task:t1", "b", kT0 + 2).used == 0);
  // "a" comes back: the one request it counted today still counts.
  e.SetPolicy("task:*", MakePolicy({QuotaSpec("a", Resource::kRequests, 2)}));
  CHECK(UsageOf(e, "task:t1", "task:t1", "a", kT0 + 3).used == 1);
  Grant(e, Req("alice", "t1"), kT0 + 4);
  HeldDenial d = Deny(e, Req("alice", "t1"), kT0 + 5);
  CHECK(d.scope == "task:t1");
  CHECK(d.limit == "a");
}

TEST_CASE("engine limiters: a changed limit is read by every subject",
          "[engine]") {
  Engine e("L", kTtlUs);
  e.SetPolicy("task:*", MakePolicy({QuotaSpec("q", Resource::kRequests, 1)}));
  Grant(e, Req("alice", "t1"), kT0);
  Grant(e, Req("alice", "t2"), kT0);
  Deny(e, Req("alice", "t1"), kT0 + 1);
  // Raised: both subjects' limiters take the new cap and keep their count.
  e.SetPolicy("task:*", MakePolicy({QuotaSpec("q", Resource::kRequests, 2)}));
  for (const char* task : {"t1", "t2"}) {
    LimitUsage u = UsageOf(e, std::string("task:") + task,
                           std::string("task:") + task, "q", kT0 + 2);
    CHECK(u.limit == 2);
    CHECK(Charged(u) == 1);
    Grant(e, Req("alice", task), kT0 + 3);
    Deny(e, Req("alice", task), kT0 + 4);
  }
}

TEST_CASE("engine limiters: Drain saves a changed subject's limiters once",
          "[engine]") {
  Engine e("L", kTtlUs);
  e.SetPolicy("task:*",
              MakePolicy({BucketSpec("rps", 10, 1000, 10),
                          QuotaSpec("day", Resource::kRequests, 100)}));
  Grant(e, Req("alice", "t1"), kT0);
  Grant(e, Req("alice", "t1"), kT0 + 1);
  std::string lease = Grant(e, Req("alice", "t1"), kT0 + 2);
  Batch b = DrainAll(e);
  REQUIRE(b.limiters_put.size() == 2);
  CHECK(b.limiters_put[0].scope == "task:t1");
  CHECK(b.limiters_put[0].name == "rps");
  CHECK(b.limiters_put[1].name == "day");
  CHECK(b.limiters_put[1].state[1] == 3);

  // A denial, a dry run (granted) and a status change no limiter.
  e.SetPolicy("resource:*",
              MakePolicy({QuotaSpec("r", Resource::kRequests, 0)}));
  (void)DrainAll(e);
  Deny(e, WithResource(Req("alice", "t1"), "db"), kT0 + 3);
  AcquireRequest dry = Req("alice", "t2");
  dry.dry_run = true;
  CHECK(Acquire(e, dry, kT0 + 4).granted);
  (void)e.Report("task:t1", kT0 + 5);
  CHECK(DrainAll(e).limiters_put.empty());

  // A settlement is a change: the commit refunds nothing here, but the
  // subject is saved again, with the state the commit left.
  Commit(e, lease, std::nullopt, kT0 + 6);
  Batch settled = DrainAll(e);
  REQUIRE(settled.limiters_put.size() == 2);
  CHECK(settled.limiters_put[1].state[1] == 3);
}

TEST_CASE("engine limiters: a restored charge outside the lease's scopes",
          "[engine]") {
  // No acquire makes one, but a stored lease is data: the charge's subject
  // is released, and saved, like the lease's own.
  Engine e("L", kTtlUs);
  e.SetPolicy("user:*", MakePolicy({ConcurrencySpec("c", 5)}));
  Lease lease;
  lease.SetText({"old-1", "alice", "t1", "", "", "", ""});
  lease.requests = 1;
  lease.granted_at_us = kT0;
  lease.expires_at_us = kT0 + kTtlUs;
  lease.OwnScopes({"global", "user:alice", "task:t1", "user:zed"}, 3);
  LeaseCharge charge;
  charge.scope = 3;  // user:zed, none of the lease's reserved scopes
  charge.limit = "c";
  charge.amount = 1;
  lease.charges.push_back(charge);
  e.RestoreLease(std::move(lease), kT0);
  CHECK(UsageOf(e, "user:zed", "user:zed", "c", kT0).used == 1);
  (void)DrainAll(e);

  auto cancelled = e.Cancel("old-1", kT0 + 1);
  REQUIRE(cancelled.ok());
  CHECK(UsageOf(e, "user:zed", "user:zed", "c", kT0 + 2).used == 0);
  Batch b = DrainAll(e);
  REQUIRE(b.limiters_put.size() == 1);
  CHECK(b.limiters_put[0].scope == "user:zed");
  CHECK(b.limiters_put[0].name == "c");
}

}  // namespace
}  // namespace brake
