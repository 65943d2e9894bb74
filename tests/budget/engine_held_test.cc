// Engine: room held by open leases is not spent. A cap that would fit the
// request were its open leases settled for nothing refuses `reserved`, with
// what they hold and a hint no later than the earliest lease expiry; only a
// cap whose spent part leaves no room refuses with its spent reason. Over
// user, task-tree, global and usd caps; explicit clock values throughout.
#include "budget/engine.h"

#include <catch2/catch.hpp>
#include <cstdint>
#include <string>

#include "tests/budget/engine_helpers.h"

namespace brake {
namespace {

using namespace engine_test;

// 1 usd per million tokens (either way): 1,000 tokens cost 0.001 usd.
constexpr Price kPrice{1 * kNanoUsdPerUsd, 1 * kNanoUsdPerUsd};

TEST_CASE("engine: a cap held by a lease refuses reserved, then grants "
          "once the lease settles", "[engine]") {
  struct Case {
    const char* name;
    std::string scope;       // where the cap is set
    Resource resource;
    int64_t limit;           // in the resource's units
    int64_t big, small;      // tokens the first and second acquire ask
    Reason spent;            // the cap's spent reason
  };
  const Case cases[] = {
      {"user tokens", "user:alice", Resource::kTokens, 1000, 900, 200,
       Reason::kQuotaExhausted},
      {"user usd", "user:alice", Resource::kUsd, kNanoUsdPerUsd / 1000, 900,
       200, Reason::kCostCap},
      {"task tree tokens", "task:root", Resource::kTokens, 1000, 900, 200,
       Reason::kQuotaExhausted},
      {"global usd", "global", Resource::kUsd, kNanoUsdPerUsd / 1000, 900, 200,
       Reason::kCostCap},
  };
  for (const Case& c : cases) {
    CAPTURE(c.name);
    Engine e("L", kTtlUs);
    e.SetPrice("m", kPrice);
    e.SetPolicy(c.scope,
                MakePolicy({QuotaSpec("cap", c.resource, c.limit, Period::kDay)}));
    // The root task first, then a sub-agent under it holds the big lease.
    Grant(e, WithModel(Req("alice", "root", 0), "m"), kT0);
    const std::string big =
        Grant(e, WithModel(WithParent(Req("alice", "sub", c.big), "root"), "m"),
              kT0 + 1);
    const AcquireRequest second =
        WithModel(Req("alice", "root", c.small), "m");

    AcquireOutcome out = Acquire(e, second, kT0 + 2);
    REQUIRE_FALSE(out.granted);
    CHECK(out.denial.reason == Reason::kReserved);
    CHECK(out.denial.scope == c.scope);
    CHECK(out.denial.limit == "cap");
    const int64_t held = c.resource == Resource::kUsd ? c.big * 1000 : c.big;
    CHECK(out.denial.held == held);
    CHECK(out.denial.retry_after_us > 0);
    CHECK(out.denial.retry_after_us <= kTtlUs);  // the earliest lease expiry
    // Status: settled apart from held.
    LimitUsage u = UsageOf(e, "task:root", c.scope, "cap", kT0 + 2);
    CHECK(u.used == 0);
    CHECK(u.held == held);

    SECTION("settled low: the same acquire is granted") {
      Commit(e, big, 100, kT0 + 3);
      Grant(e, second, kT0 + 4);
      u = UsageOf(e, "task:root", c.scope, "cap", kT0 + 4);
      CHECK(u.used == (c.resource == Resource::kUsd ? 100'000 : 100));
      CHECK(u.held == (c.resource == Resource::kUsd ? 200'000 : 200));
    }
    SECTION("settled high: spent, refused with the spent reason") {
      Commit(e, big, 900, kT0 + 3);
      HeldDenial d = Deny(e, second, kT0 + 4);
      CHECK(d.reason == c.spent);
      CHECK(d.retry_after_us > kTtlUs);  // the day's end, not a hint
    }
    SECTION("cancelled: the room comes back whole") {
      REQUIRE(e.Cancel(big, kT0 + 3).ok());
      Grant(e, second, kT0 + 4);
    }
    SECTION("expired: settled at its estimate, which spends it") {
      e.ExpireLeases(kT0 + 1 + kTtlUs);
      CHECK(Deny(e, second, kT0 + 2 + kTtlUs).reason == c.spent);
    }
  }
}

TEST_CASE("engine: a request over what is unspent is refused as spent at "
          "once", "[engine]") {
  Engine e("L", kTtlUs);
  e.SetPolicy("user:*",
              MakePolicy({QuotaSpec("tok", Resource::kTokens, 1000, Period::kDay)}));
  const std::string spent = Grant(e, Req("alice", "t", 300), kT0);
  Commit(e, spent, 300, kT0 + 1);
  Grant(e, Req("alice", "t", 600), kT0 + 2);  // held
  // 300 spent: 800 could never fit in the 700 unspent.
  HeldDenial d = Deny(e, Req("alice", "t", 800), kT0 + 3);
  CHECK(d.reason == Reason::kQuotaExhausted);
  CHECK(d.held == 600);
  // 500 fits in the unspent 700, not beside the 600 held.
  AcquireOutcome out = Acquire(e, Req("alice", "t", 500), kT0 + 3);
  CHECK(out.denial.reason == Reason::kReserved);
  REQUIRE(out.remaining.tokens);
  CHECK(*out.remaining.tokens == 100);  // neither spent nor held
  CHECK(out.remaining.tokens_capacity == 1000);
}

TEST_CASE("engine: the held hint is the recent time from grant to "
          "settlement, capped by the earliest lease expiry", "[engine]") {
  Engine e("L", kTtlUs);
  e.SetPolicy("user:*",
              MakePolicy({QuotaSpec("tok", Resource::kTokens, 1000, Period::kDay)}));
  // Leases that take 2 s from grant to commit.
  for (int i = 0; i < 3; ++i) {
    const int64_t at = kT0 + i * 10 * kSecondUs;
    Commit(e, Grant(e, Req("alice", "t", 100), at), 100, at + 2 * kSecondUs);
  }
  const int64_t now = kT0 + 100 * kSecondUs;
  Grant(e, Req("alice", "t", 700), now);
  CHECK(Deny(e, Req("alice", "t", 100), now + 1).retry_after_us ==
        2 * kSecondUs);
  // Close to its expiry, the lease's TTL bounds the hint.
  const HeldDenial late =
      Deny(e, Req("alice", "t", 100), now + kTtlUs - kSecondUs / 2);
  CHECK(late.reason == Reason::kReserved);
  CHECK(late.retry_after_us == kSecondUs / 2);
}

TEST_CASE("engine: a restored lease holds its room again", "[engine]") {
  Engine e("L", kTtlUs);
  e.SetPolicy("user:*",
              MakePolicy({QuotaSpec("tok", Resource::kTokens, 1000, Period::kDay)}));
  const std::string lease = Grant(e, Req("alice", "t", 900), kT0);
  Batch saved = DrainAll(e);

  Engine fresh("M", kTtlUs);
  RestoreInto(fresh, saved, kT0 + 1);
  CHECK(Deny(fresh, Req("alice", "t", 200), kT0 + 2).reason ==
        Reason::kReserved);
  CHECK(UsageOf(fresh, "user:alice", "user:alice", "tok", kT0 + 2).held == 900);
  Commit(fresh, lease, 100, kT0 + 3);
  Grant(fresh, Req("alice", "t", 200), kT0 + 4);
}

}  // namespace
}  // namespace brake
