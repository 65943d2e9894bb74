// Engine residency: idle subjects are evicted from memory and, loaded back
// from what Drain stored, decide exactly as if they had never left.
#include <catch2/catch.hpp>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "budget/engine.h"
#include "budget/scope_filter.h"
#include "tests/budget/engine_helpers.h"

namespace brake {
namespace {

using namespace engine_test;

constexpr int64_t kIdleUs = 60 * kSecondUs;
constexpr size_t kScanAll = 1 << 20;

void ConfigureResidencyPolicies(Engine& e) {
  e.SetPolicy("user:*", MakePolicy({QuotaSpec("tok", Resource::kTokens, 1000),
                                    BucketSpec("rps", 10, 1000, 10)}));
  e.SetPolicy("task:*", MakePolicy({ConcurrencySpec("inflight", 2)}));
}

TEST_CASE("engine residency: an idle subject leaves memory and comes back "
          "intact", "[engine][subjects]") {
  Engine e("L", kTtlUs);
  ConfigureResidencyPolicies(e);
  FakeStore store;
  Commit(e, Grant(e, Req("alice", "t1", 600), kT0), 600, kT0 + 10);
  store.Apply(e);
  CHECK(e.resident_subjects() == 3);  // global, user:alice, task:t1

  // Not yet idle: nothing leaves.
  CHECK(e.EvictIdle(kT0 + kIdleUs - 1, kIdleUs, kScanAll) == 0);
  const int64_t later = kT0 + 10 + kIdleUs + 1;
  CHECK(e.EvictIdle(later, kIdleUs, kScanAll) == 2);
  CHECK(e.resident_subjects() == 1);  // global never leaves
  CHECK(e.task_count() == 0);
  CHECK(e.evictions() == 2);

  // Deciding now would forget alice's spend: the engine refuses and names
  // what must be loaded.
  std::vector<std::string> missing = e.MissingFor(Req("alice", "t1", 500));
  CHECK(missing == std::vector<std::string>{"user:alice", "task:t1"});
  auto refused = e.Acquire(Req("alice", "t1", 500), later);
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.status().code() == ErrorCode::kUnavailable);
  CHECK(e.MissingForScope("user:alice") ==
        std::vector<std::string>{"user:alice"});

  e.RestoreSubjects(store.Load(missing), later);
  CHECK(e.MissingFor(Req("alice", "t1", 500)).empty());
  CHECK(e.SpendOf("user:alice").tokens == 600);
  // 600 of 1000 tokens spent: 500 more exceed the quota, 400 fit.
  CHECK(Deny(e, Req("alice", "t1", 500), later).reason ==
        Reason::kQuotaExhausted);
  Grant(e, Req("alice", "t1", 400), later);
  // The task still belongs to alice.
  auto stolen = e.Acquire(Req("bob", "t1", 1), later);
  REQUIRE_FALSE(stolen.ok());
  CHECK(stolen.status().code() == ErrorCode::kForbidden);
}

TEST_CASE("engine residency: what stays in memory", "[engine][subjects]") {
  Engine e("L", kTtlUs);
  ConfigureResidencyPolicies(e);
  FakeStore store;
  const int64_t later = kT0 + 2 * kIdleUs;

  SECTION("a subject with an open lease") {
    std::string lease = Grant(e, Req("alice", "t1", 10), kT0);
    store.Apply(e);
    CHECK(e.EvictIdle(later, kIdleUs, kScanAll) == 0);
    Commit(e, lease, 10, later);
    store.Apply(e);
    CHECK(e.EvictIdle(later + kIdleUs + 1, kIdleUs, kScanAll) == 2);
  }
  SECTION("a subject with changes not yet drained") {
    Commit(e, Grant(e, Req("alice", "t1", 10), kT0), 10, kT0);
    CHECK(e.EvictIdle(later, kIdleUs, kScanAll) == 0);
    store.Apply(e);
    CHECK(e.EvictIdle(later, kIdleUs, kScanAll) == 2);
  }
  SECTION("a subject used since") {
    Commit(e, Grant(e, Req("alice", "t1", 10), kT0), 10, kT0);
    Deny(e, Req("alice", "t1", 5000), later - 1);  // a denial is a use too
    store.Apply(e);
    CHECK(e.EvictIdle(later, kIdleUs, kScanAll) == 0);
  }
  SECTION("a reset is a use") {
    Commit(e, Grant(e, Req("alice", "t1", 10), kT0), 10, kT0);
    store.Apply(e);
    e.Reset("user:alice", later - 1);
    store.Apply(e);
    CHECK(e.EvictIdle(later, kIdleUs, kScanAll) == 1);  // task:t1 only
  }
}

TEST_CASE("engine residency: a new task's record keeps its subject in "
          "memory until drained", "[engine][subjects]") {
  // No limits and a cancelled lease: the task record is the only change.
  Engine e("L", kTtlUs);
  FakeStore store;
  const int64_t later = kT0 + 2 * kIdleUs;
  REQUIRE(e.Cancel(Grant(e, Req("alice", "t1", 10), kT0), kT0).ok());
  CHECK(e.task_count() == 1);
  CHECK(e.EvictIdle(later, kIdleUs, kScanAll) == 1);  // user:alice only
  CHECK(e.IsResident("task:t1"));
  CHECK(e.TaskOwner("t1") == "alice");
  store.Apply(e);
  REQUIRE(store.tasks.count("t1") == 1);
  CHECK(store.tasks["t1"].user == "alice");
  CHECK(e.EvictIdle(later, kIdleUs, kScanAll) == 1);  // now task:t1
  CHECK(e.task_count() == 0);
  CHECK(e.TaskOwner("t1").empty());
  // Back from the store, the task still belongs to alice.
  e.RestoreSubjects(store.Load(e.MissingFor(Req("bob", "t1", 1))), later);
  CHECK(e.task_count() == 1);
  CHECK(e.TaskOwner("t1") == "alice");
  auto stolen = e.Acquire(Req("bob", "t1", 1), later);
  REQUIRE_FALSE(stolen.ok());
  CHECK(stolen.status().code() == ErrorCode::kForbidden);
}

TEST_CASE("engine residency: a task's user leaves memory while the task "
          "stays", "[engine][subjects]") {
  // A known task keeps pointers to its own subject and its user's: they
  // must not outlive the user's eviction.
  Engine e("L", kTtlUs);
  ConfigureResidencyPolicies(e);
  FakeStore store;
  const int64_t later = kT0 + 2 * kIdleUs;
  // The second acquire of a known task is the one that keeps the pointers.
  Commit(e, Grant(e, Req("alice", "t1", 4), kT0), 4, kT0);
  Commit(e, Grant(e, Req("alice", "t1", 6), kT0), 6, kT0);
  store.Apply(e);
  e.Reset("task:t1", later - 1);  // the task is used since; its user is not
  store.Apply(e);
  REQUIRE(e.EvictIdle(later, kIdleUs, kScanAll) == 1);
  REQUIRE(e.IsResident("task:t1"));
  REQUIRE_FALSE(e.IsResident("user:alice"));
  // Another user comes first, likely in the memory alice's subject had.
  std::string bobs = Grant(e, Req("bob", "b1", 5), later);
  std::vector<std::string> missing = e.MissingFor(Req("alice", "t1", 1));
  CHECK(missing == std::vector<std::string>{"user:alice"});
  // The task's record alone does not let the decision skip that check.
  auto refused = e.Acquire(Req("alice", "t1", 1), later);
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.status().code() == ErrorCode::kUnavailable);
  e.RestoreSubjects(store.Load(missing), later);
  // 10 of alice's 1000 tokens were spent before she left.
  CHECK(Deny(e, Req("alice", "t1", 991), later).scope == "user:alice");
  Commit(e, Grant(e, Req("alice", "t1", 990), later), 990, later);
  CHECK(e.SpendOf("user:alice").tokens == 1000);
  CHECK(e.SpendOf("task:t1").tokens == 990);  // the reset cleared its 10
  Commit(e, bobs, 5, later);
  CHECK(e.SpendOf("user:bob").tokens == 5);
}

TEST_CASE("engine residency: loaded rows never overwrite newer memory",
          "[engine][subjects]") {
  Engine e("L", kTtlUs);
  ConfigureResidencyPolicies(e);
  FakeStore store;
  Commit(e, Grant(e, Req("alice", "t1", 100), kT0), 100, kT0);
  store.Apply(e);
  SubjectRows stale = store.Load({"user:alice", "task:t1"});
  Commit(e, Grant(e, Req("alice", "t1", 200), kT0 + 1), 200, kT0 + 1);
  e.RestoreSubjects(stale, kT0 + 2);  // a load that raced the grant
  CHECK(e.SpendOf("user:alice").tokens == 300);
}

TEST_CASE("engine residency: an evicted ancestor is loaded before a child "
          "decides", "[engine][subjects]") {
  Engine e("L", kTtlUs);
  ConfigureResidencyPolicies(e);
  e.SetPolicy("task:root", MakePolicy({QuotaSpec("tok", Resource::kTokens,
                                                  100)}));
  FakeStore store;
  Commit(e, Grant(e, Req("alice", "root", 80), kT0), 80, kT0);
  store.Apply(e);
  const int64_t later = kT0 + kIdleUs + 1;
  REQUIRE(e.EvictIdle(later, kIdleUs, kScanAll) == 2);
  // A new child names the evicted parent: the parent must come back first.
  AcquireRequest child = WithParent(Req("alice", "child", 30), "root");
  CHECK(e.MissingFor(child) ==
        std::vector<std::string>{"user:alice", "task:root"});
  e.RestoreSubjects(store.Load(e.MissingFor(child)), later);
  // The parent's quota (80 of 100 spent) covers the child.
  HeldDenial d = Deny(e, child, later);
  CHECK(d.scope == "task:root");
  Grant(e, WithParent(Req("alice", "child", 20), "root"), later);
}

TEST_CASE("engine residency: a kind reset reaches stored subjects",
          "[engine][subjects]") {
  Engine e("L", kTtlUs);
  ConfigureResidencyPolicies(e);
  FakeStore store;
  Commit(e, Grant(e, Req("alice", "a1", 900), kT0), 900, kT0);
  Commit(e, Grant(e, Req("bob", "b1", 900), kT0), 900, kT0);
  store.Apply(e);
  const int64_t later = kT0 + kIdleUs + 1;
  REQUIRE(e.EvictIdle(later, kIdleUs, kScanAll) == 4);
  const uint64_t resets = e.kind_resets();
  e.Reset("user:*", later);
  CHECK(e.kind_resets() == resets + 1);
  CHECK(e.kind_reset_pending());
  store.Apply(e);
  CHECK_FALSE(e.kind_reset_pending());
  CHECK(store.spend.count("user:alice") == 0);
  CHECK(store.spend.count("task:a1") == 1);  // other kinds keep theirs
  e.RestoreSubjects(store.Load(e.MissingFor(Req("alice", "a1", 900))), later);
  Grant(e, Req("alice", "a1", 900), later);  // the quota starts afresh
}

TEST_CASE("scope filter: no false negatives, few false positives",
          "[engine][subjects]") {
  ScopeFilter f(10'000);
  for (int i = 0; i < 10'000; ++i) f.Add("task:t" + std::to_string(i));
  for (int i = 0; i < 10'000; ++i) {
    REQUIRE(f.MaybeContains("task:t" + std::to_string(i)));
  }
  int false_positives = 0;
  for (int i = 0; i < 100'000; ++i) {
    false_positives += f.MaybeContains("task:other" + std::to_string(i));
  }
  CHECK(false_positives < 1000);  // under 1%
  CHECK_FALSE(ScopeFilter().MaybeContains("user:alice"));
}

TEST_CASE("scope filter: grows from small, keeping few false positives",
          "[engine][subjects]") {
  ScopeFilter f;  // sized for 4,096
  const size_t start = f.bytes();
  CHECK(start <= 8 * 1024);
  for (int i = 0; i < 500'000; ++i) f.Add("task:t" + std::to_string(i));
  CHECK(f.layers() > 1);
  for (int i = 0; i < 500'000; i += 7) {
    REQUIRE(f.MaybeContains("task:", "t" + std::to_string(i)));
  }
  int false_positives = 0;
  for (int i = 0; i < 100'000; ++i) {
    false_positives += f.MaybeContains("task:other" + std::to_string(i));
  }
  CHECK(false_positives < 3000);  // under 3% over all layers
  CHECK(f.bytes() < 500'000 * 5);  // a few bytes per entry
}

}  // namespace
}  // namespace brake
