// Engine: hierarchical all-or-nothing checks, leases, settlement, accounting,
// storage batches and restore. Explicit clock values throughout.
#include "budget/engine.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "budget/calendar.h"
#include "daemon/lease_codec.h"
#include "daemon/policy_codec.h"
#include "tests/budget/engine_helpers.h"

namespace brake {
namespace {

using namespace engine_test;


TEST_CASE("engine: a denial charges nothing anywhere", "[engine]") {
  Engine e("L", kTtlUs);
  e.SetPolicy("global", MakePolicy({WindowSpec("g_rpm", 100, 60'000)}));
  e.SetPolicy("user:*",
              MakePolicy({QuotaSpec("u_tokens", Resource::kTokens, 10'000)}));
  e.SetPolicy("task:t1",
              MakePolicy({QuotaSpec("t_tokens", Resource::kTokens, 1000)}));

  Grant(e, Req("alice", "t1", 800), kT0);
  HeldDenial d = Deny(e, Req("alice", "t1", 800), kT0);
  CHECK(d.reason == Reason::kQuotaExhausted);
  CHECK(d.scope == "task:t1");
  CHECK(d.limit == "t_tokens");
  CHECK(d.retry_after_us == 14 * kUsPerHour);  // until midnight UTC

  CHECK(UsageOf(e, "global", "global", "g_rpm", kT0).used == 1);
  CHECK(UsageOf(e, "user:alice", "user:alice", "u_tokens", kT0).used == 800);
  StatusReport user = e.Report("user:alice", kT0);
  CHECK(SameTotals(user.reserved, Totals{1, 800, 0}));
  CHECK(SameTotals(e.Report("global", kT0).reserved, Totals{1, 800, 0}));

  // Exactly what is left at the user level still fits: the denial took none.
  Grant(e, Req("alice", "t2", 9200), kT0);
  HeldDenial full = Deny(e, Req("alice", "t3", 1), kT0);
  CHECK(full.scope == "user:alice");
  CHECK(e.open_leases() == 2);
}

TEST_CASE("engine: defaults apply per concrete subject", "[engine]") {
  Engine e("L", kTtlUs);
  e.SetPolicy("user:*",
              MakePolicy({QuotaSpec("daily", Resource::kRequests, 1)}));

  SECTION("user:* gives every user a bucket of their own") {
    Grant(e, Req("alice", "a1"), kT0);
    HeldDenial d = Deny(e, Req("alice", "a2"), kT0);
    CHECK(d.scope == "user:alice");
    CHECK(d.limit == "daily");
    Grant(e, Req("bob", "b1"), kT0);
    CHECK(UsageOf(e, "user:alice", "user:alice", "daily", kT0).used == 1);
    CHECK(UsageOf(e, "user:bob", "user:bob", "daily", kT0).used == 1);
  }
  SECTION("a specific policy overrides the default") {
    e.SetPolicy("user:vip",
                MakePolicy({QuotaSpec("daily", Resource::kRequests, 3)}));
    for (int i = 0; i < 3; ++i) Grant(e, Req("vip", "v" + std::to_string(i)), kT0);
    CHECK(Deny(e, Req("vip", "v9"), kT0).scope == "user:vip");
    Grant(e, Req("alice", "a1"), kT0);
    CHECK(Deny(e, Req("alice", "a2"), kT0).scope == "user:alice");
  }
  SECTION("an empty specific policy exempts the subject from the default") {
    e.SetPolicy("user:root", MakePolicy({}));
    for (int i = 0; i < 5; ++i) Grant(e, Req("root", "r"), kT0);
  }
  SECTION("task:* and resource:* work the same way") {
    e.SetPolicy("task:*", MakePolicy({ConcurrencySpec("inflight", 1)}));
    e.SetPolicy("resource:*", MakePolicy({WindowSpec("rpm", 1, 60'000)}));
    e.SetPolicy("user:*", MakePolicy({}));
    Grant(e, WithResource(Req("alice", "t1"), "db"), kT0);
    HeldDenial d = Deny(e, WithResource(Req("alice", "t1"), "api"), kT0);
    CHECK(d.scope == "task:t1");
    CHECK(d.reason == Reason::kConcurrency);
    CHECK(d.retry_after_us == kNever);
    d = Deny(e, WithResource(Req("alice", "t2"), "db"), kT0);
    CHECK(d.scope == "resource:db");
    Grant(e, WithResource(Req("alice", "t2"), "api"), kT0);
  }
}

TEST_CASE("engine: tasks belong to the user that first acquired them",
          "[engine]") {
  Engine e("L", kTtlUs);
  Grant(e, Req("alice", "t1"), kT0);
  auto r = e.Acquire(Req("bob", "t1"), kT0);
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().code() == ErrorCode::kForbidden);
  CHECK(r.status().message().rfind("task:", 0) == 0);
  CHECK(e.open_leases() == 1);
  Grant(e, Req("alice", "t1"), kT0);  // the owner still may
}

TEST_CASE("engine: parent chains", "[engine]") {
  Engine e("L", kTtlUs);
  e.SetPolicy("task:root", MakePolicy({QuotaSpec("cap", Resource::kTokens,
                                                 1000, Period::kTotal)}));
  std::string l0 = Grant(e, Req("alice", "root", 100), kT0);
  CHECK(Commit(e, l0, 100, kT0).charged_tokens == 100);

  SECTION("ancestor limits apply and spend rolls up") {
    std::string l1 = Grant(e, WithParent(Req("alice", "child", 600), "root"), kT0);
    HeldDenial d =
        Deny(e, WithParent(Req("alice", "child2", 400), "root"), kT0);
    CHECK(d.scope == "task:root");
    CHECK(d.reason == Reason::kQuotaExhausted);
    CHECK(d.retry_after_us == kNever);  // a total quota never resets
    CHECK(e.task_count() == 2);         // the denied child was not recorded

    Commit(e, l1, 500, kT0);
    CHECK(e.Report("task:child", kT0).spend.tokens == 500);
    CHECK(e.Report("task:root", kT0).spend.tokens == 600);
    CHECK(UsageOf(e, "task:root", "task:root", "cap", kT0).used == 600);
    // The child's status lists the limits it inherits from its ancestors.
    CHECK(UsageOf(e, "task:child", "task:root", "cap", kT0).used == 600);

    // A grandchild charges every ancestor; later acquires of a known task
    // keep its recorded parent.
    std::string l2 =
        Grant(e, WithParent(Req("alice", "grandchild", 400), "child"), kT0);
    CHECK(Deny(e, Req("alice", "grandchild", 1), kT0).scope == "task:root");
    CHECK(e.Report("task:child", kT0).reserved.tokens == 400);
    CHECK(e.Report("task:root", kT0).reserved.tokens == 400);
    Commit(e, l2, 400, kT0);
    CHECK(e.Report("task:root", kT0).spend.tokens == 1000);
    CHECK(e.Report("task:child", kT0).spend.tokens == 900);
    CHECK(e.Report("task:grandchild", kT0).spend.tokens == 400);
    CHECK(e.Report("user:alice", kT0).spend.tokens == 1000);
  }
  SECTION("the parent must exist") {
    auto r = e.Acquire(WithParent(Req("alice", "c"), "nope"), kT0);
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().code() == ErrorCode::kBadRequest);
    CHECK(r.status().message().rfind("parent:", 0) == 0);
  }
  SECTION("the parent must be the same user's") {
    auto r = e.Acquire(WithParent(Req("bob", "c"), "root"), kT0);
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().code() == ErrorCode::kForbidden);
    CHECK(r.status().message().rfind("parent:", 0) == 0);
  }
  SECTION("a task cannot be its own parent") {
    auto r = e.Acquire(WithParent(Req("alice", "c"), "c"), kT0);
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().code() == ErrorCode::kBadRequest);
    CHECK(r.status().message().rfind("parent:", 0) == 0);
  }
  SECTION("trees are at most 32 ancestors deep") {
    std::string parent = "root";
    for (int i = 1; i <= 32; ++i) {
      std::string task = "d" + std::to_string(i);
      Grant(e, WithParent(Req("alice", task), parent), kT0);
      parent = task;
    }
    // d32 has 32 ancestors; its child would have 33.
    auto r = e.Acquire(WithParent(Req("alice", "d33"), "d32"), kT0);
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().code() == ErrorCode::kBadRequest);
    CHECK(r.status().message().rfind("parent:", 0) == 0);
  }
  CHECK(e.task_count() >= 1);
}

TEST_CASE("engine: a denial names the binding limit", "[engine]") {
  Engine e("L", kTtlUs);
  e.SetPolicy("global", MakePolicy({BucketSpec("g", 1, 1000, 1)}));
  e.SetPolicy("user:*", MakePolicy({BucketSpec("u", 1, 5000, 1)}));
  e.SetPolicy("task:*", MakePolicy({BucketSpec("t", 1, 2000, 1)}));
  Grant(e, Req("alice", "t1"), kT0);

  SECTION("the one that frees last") {
    HeldDenial d = Deny(e, Req("alice", "t1"), kT0);
    CHECK(d.reason == Reason::kRateLimited);
    CHECK(d.scope == "user:alice");
    CHECK(d.limit == "u");
    CHECK(d.retry_after_us == 5 * kSecondUs);
    // Retrying when it said: every limit admits.
    Grant(e, Req("alice", "t1"), kT0 + 5 * kSecondUs);
  }
  SECTION("too_large wins over any refusal") {
    e.SetPolicy("global", MakePolicy({BucketSpec("g", 1, 1000, 1),
                                      QuotaSpec("all", Resource::kRequests, 1,
                                                Period::kTotal)}));
    e.SetPolicy("resource:*",
                MakePolicy({QuotaSpec("tok", Resource::kTokens, 100)}));
    // global/all is exhausted forever (retry never) and listed first.
    const int64_t later = kT0 + 10 * kSecondUs;
    Grant(e, Req("alice", "t1"), later);
    HeldDenial d = Deny(e, WithResource(Req("alice", "t1", 200), "db"), later);
    CHECK(d.reason == Reason::kTooLarge);
    CHECK(d.scope == "resource:db");
    CHECK(d.limit == "tok");
    CHECK(d.retry_after_us == kNever);
  }
}

TEST_CASE("engine: shadow limits never deny but are reported and charged",
          "[engine]") {
  Engine e("L", kTtlUs);
  e.SetPolicy("user:*", MakePolicy({Shadow(QuotaSpec(
                                        "daily", Resource::kRequests, 1)),
                                    QuotaSpec("tok", Resource::kTokens, 50)}));
  AcquireOutcome first = Acquire(e, Req("alice", "t1", 10), kT0);
  REQUIRE(first.granted);
  CHECK(first.shadow.empty());
  CHECK_FALSE(first.remaining.requests.has_value());  // only a shadow limit
  CHECK(first.remaining.tokens == 40);

  AcquireOutcome second = Acquire(e, Req("alice", "t1", 10), kT0);
  REQUIRE(second.granted);
  CHECK(second.shadow == std::vector<std::string>{"user:alice/daily"});
  CHECK(UsageOf(e, "user:alice", "user:alice", "daily", kT0).used == 2);

  // A real refusal still reports the shadow ones it saw.
  AcquireOutcome third = Acquire(e, Req("alice", "t1", 45), kT0);
  CHECK_FALSE(third.granted);
  CHECK(third.denial.limit == "tok");
  CHECK(third.shadow == std::vector<std::string>{"user:alice/daily"});
  CHECK(UsageOf(e, "user:alice", "user:alice", "daily", kT0).used == 2);
}

TEST_CASE("engine: commit refunds or charges extra", "[engine]") {
  Engine e("L", kTtlUs);
  e.SetPolicy("user:*",
              MakePolicy({QuotaSpec("tok", Resource::kTokens, 1000)}));
  std::string l1 = Grant(e, Req("alice", "t1", 1000), kT0);
  CHECK(UsageOf(e, "user:alice", "user:alice", "tok", kT0).used == 1000);

  SECTION("refund") {
    Settlement s = Commit(e, l1, 300, kT0 + 1);
    CHECK(s.charged_tokens == 300);
    CHECK_FALSE(s.duplicate);
    CHECK(UsageOf(e, "user:alice", "user:alice", "tok", kT0).used == 300);
    StatusReport r = e.Report("user:alice", kT0 + 1);
    CHECK(SameTotals(r.spend, Totals{1, 300, 0}));
    CHECK(SameTotals(r.reserved, Totals{}));
    Grant(e, Req("alice", "t1", 700), kT0 + 2);
  }
  SECTION("extra charge drives the budget below zero") {
    Commit(e, l1, 1500, kT0 + 1);
    LimitUsage u = UsageOf(e, "user:alice", "user:alice", "tok", kT0 + 1);
    CHECK(u.used == 1500);
    CHECK(u.remaining == -500);
    HeldDenial d = Deny(e, Req("alice", "t1", 0), kT0 + 2);
    CHECK(d.reason == Reason::kQuotaExhausted);
    CHECK(e.Report("user:alice", kT0 + 1).spend.tokens == 1500);
  }
  SECTION("input + output stand for tokens") {
    Settlement s = Commit(e, l1, std::nullopt, kT0 + 1, 200, 50);
    CHECK(s.charged_tokens == 250);
  }
  SECTION("no usage given: settled at the reservation") {
    CHECK(Commit(e, l1, std::nullopt, kT0 + 1).charged_tokens == 1000);
  }
}

TEST_CASE("engine: prices, estimates and cost caps", "[engine]") {
  // 1 usd per million input tokens, 4 usd per million output tokens.
  const Price price{1 * kNanoUsdPerUsd, 4 * kNanoUsdPerUsd};
  CHECK(EstimateUsdNano(price, 1000) == 4'000'000);
  CHECK(CostUsdNano(price, 1000, 500) == 3'000'000);
  CHECK(EstimateUsdNano(Price{1, 1}, 1) == 1);  // rounded up
  CHECK(CostUsdNano(Price{1, 1}, 1, 1) == 2);
  CHECK(EstimateUsdNano(Price{1, 2}, 0) == 0);
  CHECK(EstimateUsdNano(Price{1'000'000 * kNanoUsdPerUsd, 0},
                        INT64_MAX) == INT64_MAX);  // saturates
  CHECK(SaturatingAdd(INT64_MAX, 1) == INT64_MAX);

  Engine e("L", kTtlUs);
  e.SetPrice("m", price);
  e.SetPolicy("user:*",
              MakePolicy({QuotaSpec("daily", Resource::kUsd, 10'000'000)}));
  std::string l1 = Grant(e, WithModel(Req("alice", "t1", 2000), "m"), kT0);
  CHECK(e.Report("user:alice", kT0).reserved.usd_nano == 8'000'000);

  HeldDenial d = Deny(e, WithModel(Req("alice", "t1", 1000), "m"), kT0);
  CHECK(d.reason == Reason::kCostCap);
  CHECK(d.scope == "user:alice");
  CHECK(d.retry_after_us == 14 * kUsPerHour);

  SECTION("a known split is priced exactly") {
    Settlement s = Commit(e, l1, std::nullopt, kT0, 1000, 500);
    CHECK(s.charged_tokens == 1500);
    CHECK(s.charged_usd_nano == 3'000'000);
    CHECK(UsageOf(e, "user:alice", "user:alice", "daily", kT0).used ==
          3'000'000);
    CHECK(e.Report("user:alice", kT0).spend.usd_nano == 3'000'000);
    Grant(e, WithModel(Req("alice", "t1", 1000), "m"), kT0);
  }
  SECTION("tokens without a split at the dearer rate") {
    Settlement s = Commit(e, l1, 1000, kT0);
    CHECK(s.charged_usd_nano == 4'000'000);
  }
  SECTION("tokens beyond the split at the dearer rate") {
    Settlement s = Commit(e, l1, 2000, kT0, 1000, 500);
    CHECK(s.charged_tokens == 2000);
    CHECK(s.charged_usd_nano == 3'000'000 + 2'000'000);
  }
  SECTION("an unpriced model is a bad request") {
    auto r = e.Acquire(WithModel(Req("alice", "t1", 1), "other"), kT0);
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().code() == ErrorCode::kBadRequest);
    CHECK(r.status().message().rfind("model:", 0) == 0);
  }
  SECTION("without a model nothing is reserved in usd") {
    std::string l2 = Grant(e, Req("alice", "t1", 1000), kT0);
    CHECK(Commit(e, l2, 1000, kT0).charged_usd_nano == 0);
  }
}

TEST_CASE("engine: duplicate and unknown settlements", "[engine]") {
  Engine e("L", kTtlUs);
  e.SetPolicy("user:*",
              MakePolicy({QuotaSpec("tok", Resource::kTokens, 10'000)}));
  std::string lease = Grant(e, Req("alice", "t1", 1000), kT0);
  Settlement first = Commit(e, lease, 700, kT0);
  CHECK_FALSE(first.duplicate);

  Settlement again = Commit(e, lease, 9000, kT0 + 1);
  CHECK(again.duplicate);
  CHECK(again.charged_tokens == 700);
  CHECK(UsageOf(e, "user:alice", "user:alice", "tok", kT0).used == 700);
  CHECK(e.Report("user:alice", kT0).spend.tokens == 700);

  auto cancel = e.Cancel(lease, kT0 + 2);
  REQUIRE(cancel.ok());
  CHECK(*cancel);  // a duplicate: changes nothing
  CHECK(UsageOf(e, "user:alice", "user:alice", "tok", kT0).used == 700);

  CommitRequest unknown;
  unknown.lease = "nope";
  auto c = e.Commit(unknown, kT0);
  REQUIRE_FALSE(c.ok());
  CHECK(c.status().code() == ErrorCode::kUnknownLease);
  CHECK(c.status().message().rfind("lease:", 0) == 0);
  auto x = e.Cancel("nope", kT0);
  REQUIRE_FALSE(x.ok());
  CHECK(x.status().code() == ErrorCode::kUnknownLease);

  // Duplicates are remembered for one lease TTL after settling.
  auto late = e.Cancel(lease, kT0 + kTtlUs);
  REQUIRE(late.ok());
  std::string other = Grant(e, Req("alice", "t1"), kT0 + kTtlUs + 2);
  Commit(e, other, 1, kT0 + kTtlUs + 2);  // forgets what is older
  CHECK_FALSE(e.Cancel(lease, kT0 + kTtlUs + 2).ok());
}

TEST_CASE("engine: cancel releases everything", "[engine]") {
  Engine e("L", kTtlUs);
  e.SetPolicy("user:*",
              MakePolicy({QuotaSpec("tok", Resource::kTokens, 1000),
                          WindowSpec("rpm", 1, 60'000),
                          ConcurrencySpec("inflight", 1),
                          LogSpec("tpm", Resource::kTokens, 1000, 60'000),
                          BucketSpec("rps", 1, 1000, 1)}));
  std::string lease = Grant(e, Req("alice", "t1", 1000), kT0);
  (void)DrainAll(e);
  auto r = e.Cancel(lease, kT0 + 10);
  REQUIRE(r.ok());
  CHECK_FALSE(*r);
  for (const char* name : {"tok", "rpm", "inflight", "tpm", "rps"}) {
    CAPTURE(name);
    CHECK(UsageOf(e, "user:alice", "user:alice", name, kT0 + 10).used == 0);
  }
  StatusReport rep = e.Report("user:alice", kT0 + 10);
  CHECK(SameTotals(rep.spend, Totals{}));
  CHECK(SameTotals(rep.reserved, Totals{}));
  CHECK(e.open_leases() == 0);
  Batch b = DrainAll(e);
  CHECK(b.ledger_append.empty());
  CHECK(b.leases_deleted == std::vector<std::string>{lease});
  CHECK(b.spend_put.empty());
  Grant(e, Req("alice", "t1", 1000), kT0 + 10);
}

TEST_CASE("engine: an expired lease settles at its estimate", "[engine]") {
  Engine e("L", kTtlUs);
  e.SetPrice("m", Price{kNanoUsdPerUsd, 2 * kNanoUsdPerUsd});
  e.SetPolicy("user:*",
              MakePolicy({QuotaSpec("tok", Resource::kTokens, 1000),
                          ConcurrencySpec("inflight", 1)}));
  std::string lease =
      Grant(e, WithModel(WithResource(Req("alice", "t1", 500), "db"), "m"), kT0);
  (void)DrainAll(e);
  CHECK(e.NextExpiryUs() == kT0 + kTtlUs);
  CHECK(e.ExpireLeases(kT0 + kTtlUs - 1) == 0);
  CHECK(e.open_leases() == 1);
  CHECK(e.ExpireLeases(kT0 + kTtlUs) == 1);
  CHECK(e.open_leases() == 0);
  CHECK(e.NextExpiryUs() == kNever);

  StatusReport r = e.Report("user:alice", kT0 + kTtlUs);
  CHECK(SameTotals(r.spend, Totals{1, 500, 1'000'000}));
  CHECK(SameTotals(r.reserved, Totals{}));
  CHECK(UsageOf(e, "user:alice", "user:alice", "tok", kT0 + kTtlUs).used == 500);
  CHECK(UsageOf(e, "user:alice", "user:alice", "inflight", kT0 + kTtlUs).used ==
        0);

  Batch b = DrainAll(e);
  REQUIRE(b.ledger_append.size() == 1);
  const LedgerRow& row = b.ledger_append[0];
  CHECK(row.expired);
  CHECK(row.outcome == "expired");
  CHECK(row.time_ms == (kT0 + kTtlUs) / 1000);
  CHECK(row.user == "alice");
  CHECK(row.task == "t1");
  CHECK(row.resource == "db");
  CHECK(row.model == "m");
  CHECK(row.requests == 1);
  CHECK(row.tokens == 500);
  CHECK(row.usd_nano == 1'000'000);
  CHECK(row.latency_ms == -1);
  CHECK(b.leases_deleted == std::vector<std::string>{lease});

  // A commit that comes too late answers the expiry's settlement.
  Settlement late = Commit(e, lease, 10, kT0 + kTtlUs + 1);
  CHECK(late.duplicate);
  CHECK(late.charged_tokens == 500);
  Grant(e, Req("alice", "t1"), kT0 + kTtlUs + 1);
}

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
  CHECK_FALSE(e.Drain(&empty, EncodeForTest));
  CHECK(empty.empty());

  Policy policy = MakePolicy({QuotaSpec("tok", Resource::kTokens, 1000)});
  e.SetPolicy("user:*", policy);
  e.SetPrice("m", Price{1000, 2000});
  std::string lease = Grant(
      e, WithModel(WithResource(Req("alice", "t1", 100), "db"), "m"), kT0);
  CHECK(lease.rfind("L-", 0) == 0);
  CHECK(e.dirty());

  Batch b;
  REQUIRE(e.Drain(&b, EncodeForTest));
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
  CHECK_FALSE(e.Drain(&again, EncodeForTest));
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
  REQUIRE(e.Drain(&settled, EncodeForTest));
  CHECK(settled.policies_deleted == std::vector<std::string>{"user:*"});
  CHECK(settled.policies_put.empty());
  CHECK(settled.tasks_put.empty());
  REQUIRE(settled.limiters_put.size() == 1);
  CHECK(settled.limiters_put[0].state[1] == 80);
  std::vector<std::string> spend_scopes;
  for (const SpendRow& row : settled.spend_put) {
    spend_scopes.push_back(row.scope);
    CHECK(row.requests == 1);
    CHECK(row.tokens == 80);
    // 60 * 1000 and 20 * 2000 nano per Mtok, each rounded up to 1 nano.
    CHECK(row.usd_nano == 2);
  }
  std::sort(spend_scopes.begin(), spend_scopes.end());
  CHECK(spend_scopes == std::vector<std::string>{"global", "resource:db",
                                                 "task:t1", "user:alice"});
  CHECK(settled.leases_put.empty());
  CHECK(settled.leases_deleted == std::vector<std::string>{lease});
  REQUIRE(settled.ledger_append.size() == 1);
  const LedgerRow& row = settled.ledger_append[0];
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
  CHECK_FALSE(e.Drain(&last, EncodeForTest));
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
  REQUIRE(a.Drain(&b, EncodeForTest));
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

TEST_CASE("engine: a limit that changes algorithm starts afresh",
          "[engine]") {
  Engine e("L", kTtlUs);
  e.SetPolicy("user:*",
              MakePolicy({QuotaSpec("x", Resource::kRequests, 100)}));
  std::string old_lease = Grant(e, Req("alice", "t1"), kT0);

  // Same name, now a concurrency limit: the lease granted under the quota
  // holds no slot of it, and settling that lease must not free one.
  e.SetPolicy("user:*", MakePolicy({ConcurrencySpec("x", 1)}));
  std::string held = Grant(e, Req("alice", "t2"), kT0);
  CHECK(Deny(e, Req("alice", "t3"), kT0).reason == Reason::kConcurrency);
  Commit(e, old_lease, std::nullopt, kT0);
  CHECK(UsageOf(e, "user:alice", "user:alice", "x", kT0).used == 1);
  CHECK(Deny(e, Req("alice", "t3"), kT0).reason == Reason::kConcurrency);
  REQUIRE(e.Cancel(held, kT0).ok());
  Grant(e, Req("alice", "t3"), kT0);

  // Back to a quota: counts start from zero, and the concurrency lease
  // settling later refunds nothing into it.
  e.SetPolicy("user:*",
              MakePolicy({QuotaSpec("x", Resource::kRequests, 100)}));
  std::string q = Grant(e, Req("alice", "t4"), kT0);
  CHECK(UsageOf(e, "user:alice", "user:alice", "x", kT0).used == 1);
  REQUIRE(e.Cancel(q, kT0).ok());
  CHECK(UsageOf(e, "user:alice", "user:alice", "x", kT0).used == 0);
}

TEST_CASE("engine: concurrency counts open leases", "[engine]") {
  Engine e("L", kTtlUs);
  e.SetPolicy("task:*", MakePolicy({ConcurrencySpec("inflight", 2)}));
  std::string l1 = Grant(e, Req("alice", "t"), kT0);
  std::string l2 = Grant(e, Req("alice", "t"), kT0);
  CHECK(UsageOf(e, "task:t", "task:t", "inflight", kT0).used == 2);
  HeldDenial d = Deny(e, Req("alice", "t"), kT0);
  CHECK(d.reason == Reason::kConcurrency);
  CHECK(d.limit == "inflight");
  CHECK(d.retry_after_us == kNever);

  SECTION("released by commit") {
    Commit(e, l1, std::nullopt, kT0);
    Grant(e, Req("alice", "t"), kT0);
  }
  SECTION("released by cancel") {
    REQUIRE(e.Cancel(l2, kT0).ok());
    Grant(e, Req("alice", "t"), kT0);
  }
  SECTION("released by expiry") {
    CHECK(e.ExpireLeases(kT0 + kTtlUs) == 2);
    CHECK(UsageOf(e, "task:t", "task:t", "inflight", kT0 + kTtlUs).used == 0);
    Grant(e, Req("alice", "t"), kT0 + kTtlUs);
    Grant(e, Req("alice", "t"), kT0 + kTtlUs);
  }
  SECTION("a duplicate settlement releases nothing more") {
    Commit(e, l1, std::nullopt, kT0);
    Commit(e, l1, std::nullopt, kT0);
    REQUIRE(e.Cancel(l1, kT0).ok());
    Grant(e, Req("alice", "t"), kT0);
    Deny(e, Req("alice", "t"), kT0);
  }
  SECTION("rebuilt from restored leases") {
    Batch b = DrainAll(e);
    Engine fresh("B", kTtlUs);
    RestoreInto(fresh, b, kT0 + 1);
    CHECK(UsageOf(fresh, "task:t", "task:t", "inflight", kT0 + 1).used == 2);
    Deny(fresh, Req("alice", "t"), kT0 + 1);
    Commit(fresh, l1, std::nullopt, kT0 + 1);
    Grant(fresh, Req("alice", "t"), kT0 + 1);
    Deny(fresh, Req("alice", "t"), kT0 + 1);
  }
  SECTION("rebuilt from leases alone, without limiter rows") {
    Batch b = DrainAll(e);
    b.limiters_put.clear();  // concurrency state is not persisted
    Engine fresh("B", kTtlUs);
    RestoreInto(fresh, b, kT0 + 1);
    CHECK(UsageOf(fresh, "task:t", "task:t", "inflight", kT0 + 1).used == 2);
    Deny(fresh, Req("alice", "t"), kT0 + 1);
  }
}

TEST_CASE("engine: every limit of a long policy is checked and charged",
          "[engine]") {
  // More limits than a subject keeps pointers to (Engine::kCachedLimiters):
  // the later ones are looked up on each acquire.
  Engine e("L", kTtlUs);
  std::vector<LimitSpec> limits;
  for (int i = 1; i <= 5; ++i) {
    limits.push_back(
        QuotaSpec("q" + std::to_string(i), Resource::kRequests, 10 - i));
  }
  e.SetPolicy("user:*", MakePolicy(limits));
  for (int n = 0; n < 5; ++n) Grant(e, Req("alice", "t1"), kT0);
  HeldDenial d = Deny(e, Req("alice", "t1"), kT0);
  CHECK(d.limit == "q5");
  for (int i = 1; i <= 5; ++i) {
    INFO(i);
    CHECK(UsageOf(e, "user:alice", "user:alice", "q" + std::to_string(i), kT0)
              .used == 5);
  }
  // A new policy reaches subjects already resolved, first limits and last.
  limits[0].limit = 5;
  limits[4].limit = 100;
  e.SetPolicy("user:*", MakePolicy(limits));
  CHECK(Deny(e, Req("alice", "t1"), kT0).limit == "q1");
  limits[0].limit = 100;
  limits[3].limit = 100;
  e.SetPolicy("user:*", MakePolicy(limits));
  Grant(e, Req("alice", "t1"), kT0);
  Grant(e, Req("alice", "t1"), kT0);
  CHECK(Deny(e, Req("alice", "t1"), kT0).limit == "q3");  // 7 of 7
}

}  // namespace
}  // namespace brake
