// Engine: reset, storage batches (Drain) and restore. Explicit clock values
// throughout.
#include "budget/engine.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdint>
#include <string>
#include <vector>

#include "daemon/lease_codec.h"
#include "tests/budget/engine_helpers.h"

namespace brake {
namespace {

using namespace engine_test;

TEST_CASE("engine: reset clears counters and spend", "[engine]") {
  Engine e("L", kTtlUs);
  e.SetPolicy("user:*",
              MakePolicy({QuotaSpec("daily", Resource::kRequests, 1)}));
  Commit(e, Grant(e, Req("alice", "a"), kT0), std::nullopt, kT0);
  Commit(e, Grant(e, Req("bob", "b"), kT0), std::nullopt, kT0);
  (void)DrainAll(e);

  SECTION("one subject") {
    e.Reset("user:alice", kT0);
    CHECK(e.Report("user:alice", kT0).spend.requests == 0);
    CHECK(e.Report("user:bob", kT0).spend.requests == 1);
    CHECK(e.Report("task:a", kT0).spend.requests == 1);  // other scopes keep
    Batch b = DrainAll(e);
    CHECK(b.spend_deleted == std::vector<std::string>{"user:alice"});
    REQUIRE(b.limiters_put.size() == 1);
    CHECK(b.limiters_put[0].scope == "user:alice");
    Grant(e, Req("alice", "a"), kT0);
    Deny(e, Req("bob", "b"), kT0);
  }
  SECTION("every subject of a kind") {
    e.Reset("user:*", kT0);
    CHECK(e.Report("user:alice", kT0).spend.requests == 0);
    CHECK(e.Report("user:bob", kT0).spend.requests == 0);
    CHECK(e.Report("global", kT0).spend.requests == 2);
    Grant(e, Req("alice", "a"), kT0);
    Grant(e, Req("bob", "b"), kT0);
  }
  SECTION("global") {
    e.Reset("global", kT0);
    CHECK(e.Report("global", kT0).spend.requests == 0);
    CHECK(e.Report("user:alice", kT0).spend.requests == 1);
  }
  SECTION("open leases keep their concurrency slots") {
    e.SetPolicy("user:*", MakePolicy({}));
    e.SetPolicy("task:*", MakePolicy({ConcurrencySpec("inflight", 1)}));
    std::string open = Grant(e, Req("carol", "c"), kT0);
    e.Reset("task:c", kT0);
    e.Reset("task:*", kT0);
    CHECK(Deny(e, Req("carol", "c"), kT0).reason == Reason::kConcurrency);
    Commit(e, open, std::nullopt, kT0);
    Grant(e, Req("carol", "c"), kT0);
  }
}

TEST_CASE("engine: Drain turns changes into batch rows", "[engine]") {
  Engine e("L-", kTtlUs);
  CHECK_FALSE(e.dirty());
  Batch empty;
  CHECK_FALSE(e.Drain(&empty, AppendEncodedLease));
  CHECK(empty.empty());

  Policy policy = MakePolicy({QuotaSpec("tok", Resource::kTokens, 1000)});
  e.SetPolicy("user:*", policy);
  e.SetPrice("m", Price{1000, 2000});
  std::string lease = Grant(
      e, WithModel(WithResource(Req("alice", "t1", 100), "db"), "m"), kT0);
  CHECK(lease.rfind("L-", 0) == 0);
  CHECK(e.dirty());

  Batch b;
  REQUIRE(e.Drain(&b, AppendEncodedLease));
  CHECK_FALSE(e.dirty());
  REQUIRE(b.policies_put.size() == 1);
  CHECK(b.policies_put[0].scope == "user:*");
  CHECK(b.policies_put[0].json == policy.json);
  REQUIRE(b.prices_put.size() == 1);
  CHECK(b.prices_put[0].model == "m");
  CHECK(b.prices_put[0].input_nano_per_mtok == 1000);
  CHECK(b.prices_put[0].output_nano_per_mtok == 2000);
  REQUIRE(b.tasks_put.size() == 1);
  CHECK(b.tasks_put[0].task == "t1");
  CHECK(b.tasks_put[0].user == "alice");
  CHECK(b.tasks_put[0].parent.empty());
  CHECK(b.tasks_put[0].created_ms == kT0 / 1000);
  REQUIRE(b.limiters_put.size() == 1);
  CHECK(b.limiters_put[0].scope == "user:alice");
  CHECK(b.limiters_put[0].name == "tok");
  CHECK(b.limiters_put[0].algorithm == "quota");
  CHECK(b.limiters_put[0].state.size() == 2);
  CHECK(b.limiters_put[0].state[1] == 100);
  CHECK(b.spend_put.empty());
  REQUIRE(b.leases_put.size() == 1);
  CHECK(b.leases_put[0].id == lease);
  auto decoded = DecodeLease(b.leases_put[0].id, b.leases_put[0].json);
  REQUIRE(decoded.ok());
  CHECK(decoded->tokens == 100);
  CHECK(decoded->expires_at_us == kT0 + kTtlUs);
  CHECK(b.leases_deleted.empty());
  CHECK(b.ledger_append.empty());

  Batch again;
  CHECK_FALSE(e.Drain(&again, AppendEncodedLease));
  CHECK(again.empty());

  CommitRequest c;
  c.lease = lease;
  c.input_tokens = 60;
  c.output_tokens = 20;
  c.latency_ms = 812;
  c.outcome = "error";
  REQUIRE(e.Commit(c, kT0 + 5000).ok());
  REQUIRE(e.DeletePolicy("user:*"));
  CHECK_FALSE(e.DeletePolicy("user:*"));

  Batch settled;
  REQUIRE(e.Drain(&settled, AppendEncodedLease));
  CHECK(settled.policies_deleted == std::vector<std::string>{"user:*"});
  CHECK(settled.policies_put.empty());
  CHECK(settled.tasks_put.empty());
  REQUIRE(settled.limiters_put.size() == 1);
  CHECK(settled.limiters_put[0].state[1] == 80);
  std::vector<std::string> spend_scopes;
  for (const SpendView row : settled.spend_put) {
    spend_scopes.emplace_back(row.scope);
    CHECK(row.requests == 1);
    CHECK(row.tokens == 80);
    // 60 * 1000 and 20 * 2000 nano per Mtok, each rounded up to 1 nano.
    CHECK(row.usd_nano == 2);
  }
  std::sort(spend_scopes.begin(), spend_scopes.end());
  CHECK(spend_scopes == std::vector<std::string>{"global", "resource:db",
                                                 "task:t1", "user:alice"});
  CHECK(settled.leases_put.empty());
  CHECK(settled.leases_deleted == TextList{lease});
  REQUIRE(settled.ledger_append.size() == 1);
  const LedgerView row = settled.ledger_append[0];
  CHECK(row.time_ms == kT0 / 1000 + 5);
  CHECK(row.user == "alice");
  CHECK(row.task == "t1");
  CHECK(row.parent.empty());
  CHECK(row.resource == "db");
  CHECK(row.model == "m");
  CHECK(row.requests == 1);
  CHECK(row.tokens == 80);
  CHECK(row.input_tokens == 60);
  CHECK(row.output_tokens == 20);
  CHECK(row.usd_nano == 2);
  CHECK(row.latency_ms == 812);
  CHECK(row.outcome == "error");
  CHECK_FALSE(row.expired);

  Batch last;
  CHECK_FALSE(e.Drain(&last, AppendEncodedLease));
}

void CheckSameReport(Engine& a, Engine& b, const std::string& scope,
                     int64_t now_us) {
  CAPTURE(scope);
  StatusReport ra = a.Report(scope, now_us);
  StatusReport rb = b.Report(scope, now_us);
  CHECK(SameTotals(ra.spend, rb.spend));
  CHECK(SameTotals(ra.reserved, rb.reserved));
  REQUIRE(ra.limits.size() == rb.limits.size());
  for (size_t i = 0; i < ra.limits.size(); ++i) {
    CAPTURE(ra.limits[i].scope, ra.limits[i].spec.name);
    CHECK(ra.limits[i].scope == rb.limits[i].scope);
    CHECK(ra.limits[i].spec == rb.limits[i].spec);
    CHECK(ra.limits[i].usage.limit == rb.limits[i].usage.limit);
    CHECK(ra.limits[i].usage.used == rb.limits[i].usage.used);
    CHECK(ra.limits[i].usage.remaining == rb.limits[i].usage.remaining);
    CHECK(ra.limits[i].usage.resets_in_us == rb.limits[i].usage.resets_in_us);
  }
}

TEST_CASE("engine: Drain then restore gives the same decisions", "[engine]") {
  Engine a("A", kTtlUs);
  a.SetPrice("m", Price{kNanoUsdPerUsd, 3 * kNanoUsdPerUsd});
  a.SetPrice("*", Price{0, 0});  // calls naming no model, under the usd cap
  a.SetPolicy("global", MakePolicy({BucketSpec("rps", 100, 1000, 100)}));
  a.SetPolicy("user:*",
              MakePolicy({QuotaSpec("usd", Resource::kUsd, 50'000'000),
                          QuotaSpec("tok", Resource::kTokens, 20'000)}));
  a.SetPolicy("task:*", MakePolicy({ConcurrencySpec("inflight", 1)}));
  a.SetPolicy("resource:*",
              MakePolicy({LogSpec("tpm", Resource::kTokens, 5000, 60'000)}));

  Commit(a, Grant(a, WithModel(Req("alice", "root", 1000), "m"), kT0), 800,
         kT0 + 10, 500, 300);
  Commit(a,
         Grant(a, WithResource(WithParent(Req("alice", "child", 2000), "root"),
                               "db"),
               kT0 + 20),
         1500, kT0 + 30);
  std::string open =
      Grant(a, WithResource(Req("alice", "child", 1000), "db"), kT0 + 40);
  Grant(a, Req("bob", "solo", 10), kT0 + 50);  // left to expire

  Batch b;
  REQUIRE(a.Drain(&b, AppendEncodedLease));
  const int64_t now = kT0 + 100;
  Engine fresh("B", kTtlUs);
  RestoreInto(fresh, b, now);
  CHECK(fresh.open_leases() == 2);
  CHECK(fresh.task_count() == 3);
  CHECK(fresh.NextExpiryUs() == a.NextExpiryUs());

  for (const char* scope :
       {"global", "user:alice", "user:bob", "task:root", "task:child",
        "task:solo", "resource:db"}) {
    CheckSameReport(a, fresh, scope, now);
  }

  // Ownership and parents survive.
  auto stolen = fresh.Acquire(Req("bob", "root"), now);
  REQUIRE_FALSE(stolen.ok());
  CHECK(stolen.status().code() == ErrorCode::kForbidden);
  // The restored open lease still holds the task's concurrency slot...
  for (Engine* e : {&a, &fresh}) {
    HeldDenial d = Deny(*e, Req("alice", "child"), now);
    CHECK(d.reason == Reason::kConcurrency);
    CHECK(d.scope == "task:child");
  }
  // ...until it is committed, which settles like the original would.
  for (Engine* e : {&a, &fresh}) {
    Settlement s = Commit(*e, open, 400, now);
    CHECK(s.charged_tokens == 400);
  }
  for (const char* scope : {"user:alice", "task:root", "resource:db"}) {
    CheckSameReport(a, fresh, scope, now);
  }
  // The same sequence of requests gets the same answers.
  const AcquireRequest requests[] = {
      WithResource(Req("alice", "child", 2000), "db"),
      WithResource(Req("alice", "other", 2000), "db"),
      WithModel(Req("alice", "x", 15'000), "m"),
      Req("bob", "solo", 10),
      Req("carol", "c1"),
      Req("carol", "c2"),
  };
  for (const AcquireRequest& r : requests) {
    CAPTURE(r.user, r.task, r.tokens);
    AcquireOutcome oa = Acquire(a, r, now);
    AcquireOutcome ob = Acquire(fresh, r, now);
    CHECK(oa.granted == ob.granted);
    if (!oa.granted && !ob.granted) {
      CHECK(oa.denial.reason == ob.denial.reason);
      CHECK(oa.denial.scope == ob.denial.scope);
      CHECK(oa.denial.limit == ob.denial.limit);
      CHECK(oa.denial.retry_after_us == ob.denial.retry_after_us);
    }
  }
  // Leases of the earlier run expire in the new one.
  CHECK(fresh.ExpireLeases(kT0 + 50 + kTtlUs) == 1);
  CHECK(fresh.Report("user:bob", now).spend.tokens == 10);
}

}  // namespace
}  // namespace brake
