// Engine: hierarchical all-or-nothing checks, shadow limits, parent chains
// and how limits change. Explicit clock values throughout. Settlement is in
// engine_settle_test.cc, storage batches and restore in
// engine_state_test.cc.
#include "budget/engine.h"

#include <catch2/catch.hpp>
#include <cstdint>
#include <string>
#include <vector>

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
  CHECK(d.reason == Reason::kReserved);  // the first lease holds 800
  CHECK(d.scope == "task:t1");
  CHECK(d.limit == "t_tokens");
  CHECK(d.held == 800);

  CHECK(UsageOf(e, "global", "global", "g_rpm", kT0).used == 1);
  CHECK(UsageOf(e, "user:alice", "user:alice", "u_tokens", kT0).held == 800);
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
    CHECK(Charged(UsageOf(e, "user:alice", "user:alice", "daily", kT0)) == 1);
    CHECK(Charged(UsageOf(e, "user:bob", "user:bob", "daily", kT0)) == 1);
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
    CHECK(d.reason == Reason::kReserved);  // l1 holds 600 of it, not spent
    CHECK(d.held == 600);
    CHECK(d.retry_after_us <= kTtlUs);
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
  CHECK(Charged(UsageOf(e, "user:alice", "user:alice", "daily", kT0)) == 2);

  // A real refusal still reports the shadow ones it saw.
  AcquireOutcome third = Acquire(e, Req("alice", "t1", 45), kT0);
  CHECK_FALSE(third.granted);
  CHECK(third.denial.limit == "tok");
  CHECK(third.shadow == std::vector<std::string>{"user:alice/daily"});
  CHECK(Charged(UsageOf(e, "user:alice", "user:alice", "daily", kT0)) == 2);
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
  CHECK(Charged(UsageOf(e, "user:alice", "user:alice", "x", kT0)) == 1);
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
    CHECK(Charged(UsageOf(e, "user:alice", "user:alice",
                          "q" + std::to_string(i), kT0)) == 5);
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
