// Engine: leases settled by commit, cancel and expiry; prices and cost caps;
// duplicate settlements. Explicit clock values throughout.
#include "budget/engine.h"
#include "common/sat_math.h"

#include <catch2/catch.hpp>
#include <cstdint>
#include <string>
#include <vector>

#include "tests/budget/engine_helpers.h"

namespace brake {
namespace {

using namespace engine_test;

TEST_CASE("engine: commit refunds or charges extra", "[engine]") {
  Engine e("L", kTtlUs);
  e.SetPolicy("user:*",
              MakePolicy({QuotaSpec("tok", Resource::kTokens, 1000)}));
  std::string l1 = Grant(e, Req("alice", "t1", 1000), kT0);
  CHECK(Charged(UsageOf(e, "user:alice", "user:alice", "tok", kT0)) == 1000);

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
  CHECK(sat::SatAdd(INT64_MAX, 1) == INT64_MAX);

  Engine e("L", kTtlUs);
  e.SetPrice("m", price);
  e.SetPolicy("user:*",
              MakePolicy({QuotaSpec("daily", Resource::kUsd, 10'000'000)}));
  std::string l1 = Grant(e, WithModel(Req("alice", "t1", 2000), "m"), kT0);
  CHECK(e.Report("user:alice", kT0).reserved.usd_nano == 8'000'000);

  HeldDenial d = Deny(e, WithModel(Req("alice", "t1", 1000), "m"), kT0);
  CHECK(d.reason == Reason::kReserved);  // l1 holds 8 of the 10 usd
  CHECK(d.scope == "user:alice");
  CHECK(d.held == 8'000'000);
  CHECK(d.retry_after_us <= kTtlUs);

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
  SECTION("without a model, tokens under a usd limit need a price for *") {
    auto refused = e.Acquire(Req("alice", "t1", 1000), kT0);
    REQUIRE_FALSE(refused.ok());
    CHECK(refused.status().code() == ErrorCode::kBadRequest);
    CHECK(refused.status().message().rfind("model:", 0) == 0);
    CHECK(refused.status().message().find("user:alice") != std::string::npos);
    CHECK(e.open_leases() == 1);  // only the lease opened above
    e.SetPrice("*", price);  // the unnamed model: priced like "m"
    std::string l2 = Grant(e, Req("alice", "t1", 250), kT0);
    CHECK(e.FindLease(l2)->model() == "*");
    CHECK(e.Report("user:alice", kT0).reserved.usd_nano == 8'000'000 + 1'000'000);
    CHECK(Commit(e, l2, 250, kT0).charged_usd_nano == 1'000'000);
  }
  SECTION("no tokens need no model; a commit of tokens then does") {
    std::string tool = Grant(e, Req("alice", "t1", 0), kT0);
    CommitRequest commit;
    commit.lease = tool;
    commit.tokens = 500;
    auto refused = e.Commit(commit, kT0);
    REQUIRE_FALSE(refused.ok());
    CHECK(refused.status().code() == ErrorCode::kBadRequest);
    CHECK(e.FindLease(tool) != nullptr);  // still open: nothing applied
    CHECK(Commit(e, tool, 0, kT0).charged_usd_nano == 0);
    e.SetPrice("*", price);
    std::string priced = Grant(e, Req("alice", "t2", 0), kT0);
    CHECK(Commit(e, priced, 500, kT0).charged_usd_nano == 2'000'000);
  }
  SECTION("a model named past a short string is priced at commit too") {
    // Looked up by a view into the lease: the name is longer than a
    // short string holds, and another model's price must not be taken.
    const std::string model = "claude-3-5-sonnet-20241022";
    e.SetPrice(model, Price{2 * kNanoUsdPerUsd, 8 * kNanoUsdPerUsd});
    e.SetPrice(model + "-x", price);
    std::string l2 = Grant(e, WithModel(Req("bob", "t2", 100), model), kT0);
    CHECK(e.Report("user:bob", kT0).reserved.usd_nano == 800'000);
    Settlement s = Commit(e, l2, std::nullopt, kT0, 100, 50);
    CHECK(s.charged_usd_nano == 200'000 + 400'000);
    CHECK(e.Report("user:bob", kT0).spend.usd_nano == 600'000);
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
  CHECK(b.leases_deleted == TextList{lease});
  CHECK(b.spend_put.empty());
  Grant(e, Req("alice", "t1", 1000), kT0 + 10);
}

TEST_CASE("engine: a grant's lease names its subjects by their keys",
          "[engine]") {
  Engine e("L", kTtlUs);
  e.SetPolicy("task:*", MakePolicy({BucketSpec("rps", 100, 1000, 100)}));
  const std::string task = "task-3f2a9c1e-5b7d-4e8f-9a0b-1c2d3e4f5a6b";
  Grant(e, Req("alice", "root"), kT0);
  const std::string id = Grant(
      e, WithResource(WithParent(Req("alice", task), "root"), "db"), kT0);
  const Lease* lease = e.FindLease(id);
  REQUIRE(lease != nullptr);
  CHECK(lease->user() == "alice");
  CHECK(lease->task() == task);
  CHECK(lease->parent() == "root");
  CHECK(lease->resource() == "db");
  // Its own text holds none of them: no block for a long task name.
  CHECK(lease->AllText().empty());

  SECTION("a later grant of the task keeps its recorded parent") {
    const Lease* again = e.FindLease(Grant(e, Req("alice", task), kT0 + 1));
    REQUIRE(again != nullptr);
    CHECK(again->parent() == "root");
    CHECK(again->resource().empty());
    CHECK(again->AllText().empty());
  }
  SECTION("its stored form and its ledger row name them") {
    Batch b = DrainAll(e);
    bool found = false;
    for (const LeasePuts::Row row : b.leases_put) {
      if (row.id != id) continue;
      found = true;
      auto decoded = DecodeLease(row.id, row.json);
      REQUIRE(decoded.ok());
      CHECK(decoded->user() == "alice");
      CHECK(decoded->task() == task);
      CHECK(decoded->parent() == "root");
      CHECK(decoded->resource() == "db");
    }
    CHECK(found);
    Commit(e, id, 0, kT0 + 2);
    b = DrainAll(e);
    REQUIRE(b.ledger_append.size() == 1);
    const LedgerView row = b.ledger_append[0];
    CHECK(row.user == "alice");
    CHECK(row.task == task);
    CHECK(row.parent == "root");
    CHECK(row.resource == "db");
  }
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
  const LedgerView row = b.ledger_append[0];
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
  CHECK(b.leases_deleted == TextList{lease});

  // A commit that comes too late answers the expiry's settlement.
  Settlement late = Commit(e, lease, 10, kT0 + kTtlUs + 1);
  CHECK(late.duplicate);
  CHECK(late.charged_tokens == 500);
  Grant(e, Req("alice", "t1"), kT0 + kTtlUs + 1);
}

}  // namespace
}  // namespace brake
