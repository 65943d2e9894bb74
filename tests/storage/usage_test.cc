#include <catch2/catch.hpp>
#include <memory>
#include <string>
#include <vector>

#include "storage/store.h"
#include "storage/test_support.h"

namespace brake {
namespace {

constexpr int64_t kDayMs = 86'400'000;
constexpr int64_t kDay0 = 19'723 * kDayMs;  // 2024-01-01T00:00:00Z

LedgerRow Row(int64_t time_ms, std::string user, std::string task,
              std::string model, int64_t tokens, int64_t usd_nano,
              bool expired = false) {
  LedgerRow row;
  row.time_ms = time_ms;
  row.user = std::move(user);
  row.task = std::move(task);
  row.model = std::move(model);
  row.requests = 1;
  row.tokens = tokens;
  row.input_tokens = tokens / 2;
  row.output_tokens = tokens - tokens / 2;
  row.usd_nano = usd_nano;
  row.outcome = "ok";
  row.expired = expired;
  return row;
}

UsageQuery Q(std::string user, std::string task = "", int64_t since_ms = 0,
             std::string by = "") {
  UsageQuery q;
  q.user = std::move(user);
  q.task = std::move(task);
  q.since_ms = since_ms;
  q.by = std::move(by);
  return q;
}

// "key:calls/requests/tokens/in/out/usd/expired"
std::vector<std::string> Strs(const std::vector<UsageTotal>& totals) {
  std::vector<std::string> out;
  for (const UsageTotal& t : totals) {
    out.push_back(t.key + ":" + std::to_string(t.calls) + "/" +
                  std::to_string(t.requests) + "/" + std::to_string(t.tokens) +
                  "/" + std::to_string(t.input_tokens) + "/" +
                  std::to_string(t.output_tokens) + "/" +
                  std::to_string(t.usd_nano) + "/" + std::to_string(t.expired));
  }
  return out;
}

using Rows = std::vector<std::string>;

TEST_CASE("A ledger row sent again counts once and other leases of the "
          "same millisecond count", "[storage]") {
  storage::TempDir dir;
  Result<std::unique_ptr<Store>> opened = Store::Open(dir.File("brake.db"));
  REQUIRE(opened.ok());
  Store& store = **opened;
  Batch b;
  for (const char* lease : {"p-1", "p-2"}) {
    LedgerRow row = Row(kDay0, "alice", "t1", "big", 10, 100);
    row.lease = lease;
    b.ledger_append.push_back(row);
  }
  REQUIRE(store.Apply(b).ok());
  REQUIRE(store.Apply(b).ok());  // a retried batch: the same rows again
  auto totals = store.QueryUsage(Q("alice"));
  REQUIRE(totals.ok());
  CHECK(Strs(*totals) == Rows{":2/2/20/10/10/200/0"});
}

TEST_CASE("The ledger records which settlements were estimated, and a "
          "restart keeps it", "[storage]") {
  storage::TempDir dir;
  const std::string path = dir.File("brake.db");
  {
    Result<std::unique_ptr<Store>> opened = Store::Open(path);
    REQUIRE(opened.ok());
    Batch b;
    for (int i = 0; i < 5; ++i) {
      LedgerRow row = Row(kDay0 + i, "alice", i < 2 ? "cut" : "whole", "m", 10, 100);
      row.lease = "e-" + std::to_string(i);
      row.estimated = i < 2;
      b.ledger_append.push_back(row);
    }
    REQUIRE((*opened)->Apply(b).ok());
  }
  Result<std::unique_ptr<Store>> reopened = Store::Open(path);
  REQUIRE(reopened.ok());
  auto totals = (*reopened)->QueryUsage(Q("alice", "", 0, "task"));
  REQUIRE(totals.ok());
  REQUIRE(totals->size() == 2);
  CHECK((*totals)[0].key == "cut");
  CHECK((*totals)[0].estimated == 2);
  CHECK((*totals)[1].key == "whole");
  CHECK((*totals)[1].estimated == 0);
}

TEST_CASE("Store::QueryUsage sums the ledger by group", "[storage]") {
  storage::TempDir dir;
  Result<std::unique_ptr<Store>> opened = Store::Open(dir.File("brake.db"));
  REQUIRE(opened.ok());
  Store& store = **opened;
  Batch b;
  b.ledger_append = {
      Row(kDay0 - 1, "alice", "t1", "big", 10, 100),  // 2023-12-31, last ms
      Row(kDay0, "alice", "t1", "big", 20, 200),
      Row(kDay0 + 5, "alice", "t2", "small", 30, 300, /*expired=*/true),
      Row(kDay0 + kDayMs + 7, "alice", "t2", "big", 40, 400),
      Row(kDay0, "bob", "t1", "big", 1000, 1000),  // another user
  };
  REQUIRE(store.Apply(b).ok());

  auto query = [&](UsageQuery q) {
    auto result = store.QueryUsage(q);
    INFO(result.status().ToString());
    REQUIRE(result.ok());
    return Strs(*result);
  };

  CHECK(query(Q("alice")) == Rows{":4/4/100/50/50/1000/1"});
  CHECK(query(Q("alice", "", 0, "task")) ==
        Rows{"t1:2/2/30/15/15/300/0", "t2:2/2/70/35/35/700/1"});
  CHECK(query(Q("alice", "", 0, "model")) ==
        Rows{"big:3/3/70/35/35/700/0", "small:1/1/30/15/15/300/1"});
  CHECK(query(Q("alice", "", 0, "day")) ==
        Rows{"2023-12-31:1/1/10/5/5/100/0", "2024-01-01:2/2/50/25/25/500/1",
             "2024-01-02:1/1/40/20/20/400/0"});
  SECTION("since is inclusive") {
    CHECK(
        query(Q("alice", "", kDay0, "day")) ==
        Rows{"2024-01-01:2/2/50/25/25/500/1", "2024-01-02:1/1/40/20/20/400/0"});
    CHECK(query(Q("alice", "", kDay0 + 6)) == Rows{":1/1/40/20/20/400/0"});
  }
  SECTION("task filter") {
    CHECK(query(Q("alice", "t2", 0, "model")) ==
          Rows{"big:1/1/40/20/20/400/0", "small:1/1/30/15/15/300/1"});
    CHECK(query(Q("bob", "t2")) == Rows{":0/0/0/0/0/0/0"});
  }
  SECTION("no rows: one zero total, or no groups") {
    CHECK(query(Q("nobody")) == Rows{":0/0/0/0/0/0/0"});
    CHECK(query(Q("nobody", "", 0, "task")).empty());
  }
  SECTION("days before 1970 floor correctly") {
    Batch old;
    old.ledger_append = {Row(-1, "old", "t", "m", 1, 1),
                         Row(0, "old", "t", "m", 1, 1)};
    REQUIRE(store.Apply(old).ok());
    CHECK(query(Q("old", "", -kDayMs, "day")) ==
          Rows{"1969-12-31:1/1/1/0/1/1/0", "1970-01-01:1/1/1/0/1/1/0"});
  }
  SECTION("bad arguments") {
    auto no_user = store.QueryUsage(UsageQuery());
    CHECK(no_user.status().code() == ErrorCode::kBadRequest);
    auto bad_by = store.QueryUsage(Q("alice", "", 0, "week"));
    CHECK(bad_by.status().code() == ErrorCode::kBadRequest);
    CHECK_THAT(bad_by.status().message(), Catch::StartsWith("by:"));
  }
}

}  // namespace
}  // namespace brake
