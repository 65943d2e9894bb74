// storage/multi_insert.h, through the ledger: rows appended 32 to a statement
// and the rest in statements of 16, 8, 4, 2 and 1, each once, and a failing
// row named wherever it stands.
#include <algorithm>
#include <catch2/catch.hpp>
#include <memory>
#include <string>
#include <vector>

#include "storage/multi_insert.h"
#include "storage/store.h"
#include "storage/test_support.h"

namespace brake {
namespace {

constexpr size_t kPer = storage::MultiInsert::kRows;

// Settlement `n` of `user`: its own lease and millisecond, n tokens.
LedgerRow Settlement(const std::string& user, int n) {
  LedgerRow row;
  row.time_ms = 1'000 + n;
  row.user = user;
  row.task = "t" + std::to_string(n);
  row.model = "m";
  row.requests = 1;
  row.tokens = n;
  row.outcome = "ok";
  row.lease = "0123456789ab-" + std::to_string(n);
  return row;
}

// Settlements [first, last) of `user`; number `boom` (if any) is "boom"'s
// instead, number `skip` (if any) left out.
LedgerRows Settlements(const std::string& user, int first, int last,
                       int boom = -1, int skip = -1) {
  LedgerRows rows;
  for (int n = first; n < last; ++n) {
    if (n != skip) rows.push_back(Settlement(n == boom ? "boom" : user, n));
  }
  return rows;
}

// {calls, tokens} of `user` in the ledger.
std::pair<int64_t, int64_t> Totals(Store& store, const std::string& user) {
  UsageQuery q;
  q.user = user;
  auto totals = store.QueryUsage(q);
  REQUIRE(totals.ok());
  REQUIRE(totals->size() == 1);
  return {(*totals)[0].calls, (*totals)[0].tokens};
}

// A fresh store in `dir`.
std::unique_ptr<Store> FreshStore(storage::TempDir& dir) {
  auto opened = Store::Open(dir.File("brake.db"));
  REQUIRE(opened.ok());
  return std::move(*opened);
}

// 0 + 1 + ... + (n - 1)
int64_t SumBelow(int64_t n) { return n * (n - 1) / 2; }

// A fresh store in `dir` whose ledger refuses user "boom" with
// RAISE(`raise`, 'injected'), and a batch of 40 settlements whose number
// `boom` (by default the 18th, in the first statement of 32; 32 to 39 are
// in the statement of 8 that follows) is boom's.
std::unique_ptr<Store> StoreRefusingBoom(storage::TempDir& dir,
                                         const std::string& raise, Batch* b,
                                         int boom = 17) {
  const std::string path = dir.File("brake.db");
  FreshStore(dir);  // made, and closed again
  REQUIRE(storage::ExecRawSql(path,
                              "CREATE TRIGGER boom BEFORE INSERT ON ledger "
                              "WHEN NEW.user = 'boom' BEGIN SELECT RAISE(" +
                                  raise + ", 'injected'); END;")
              .ok());
  auto opened = Store::Open(path);
  REQUIRE(opened.ok());
  b->ledger_append =
      Settlements("alice", 0, static_cast<int>(kPer + 8), boom);
  return std::move(*opened);
}

TEST_CASE("Ledger rows go in 32 to a statement and the rest in halves "
          "each once",
          "[storage]") {
  storage::TempDir dir;
  auto opened = FreshStore(dir);
  Store& store = *opened;
  // Two statements of 32 and one each of 4 and 2; then every smaller size.
  const int n = GENERATE(static_cast<int>(2 * kPer + 6),
                         static_cast<int>(2 * kPer + kPer - 1), 1);
  Batch b;
  b.ledger_append = Settlements("alice", 0, n);
  REQUIRE(store.Apply(b).ok());
  CHECK(Totals(store, "alice") == std::make_pair<int64_t, int64_t>(
                                      n, SumBelow(n)));
  // A retried batch: every row there already, none counted twice.
  REQUIRE(store.Apply(b).ok());
  CHECK(Totals(store, "alice").first == n);
  // Half old, half new, in one statement of 32 and more.
  Batch overlap;
  overlap.ledger_append = Settlements("alice", std::max(0, n - 20), n + 20);
  REQUIRE(store.Apply(overlap).ok());
  CHECK(Totals(store, "alice") == std::make_pair<int64_t, int64_t>(
                                      n + 20, SumBelow(n + 20)));
  // Every row's columns landed where they belong: one group per task.
  UsageQuery by_task;
  by_task.user = "alice";
  by_task.by = "task";
  auto groups = store.QueryUsage(by_task);
  REQUIRE(groups.ok());
  CHECK(groups->size() == static_cast<size_t>(n + 20));
}

TEST_CASE("A failing ledger row inside a statement of many is named and its "
          "batch leaves nothing",
          "[storage]") {
  storage::TempDir dir;
  Batch b;
  // In the statement of 32, and in the statement of 8 after it.
  const int boom = GENERATE(17, static_cast<int>(kPer + 3));
  auto opened = StoreRefusingBoom(dir, "ABORT", &b, boom);
  Store& store = *opened;
  b.spend_put = {{"user:alice", 1, 2, 3}};
  const Status status = store.Apply(b);
  CHECK(status.code() == ErrorCode::kUnavailable);
  CHECK_THAT(status.message(),
             Catch::Contains("append ledger row (boom,t" +
                             std::to_string(boom) + ") failed") &&
                 Catch::Contains("injected"));
  CHECK(Totals(store, "alice").first == 0);
  auto snapshot = store.Load();
  REQUIRE(snapshot.ok());
  CHECK(snapshot->spend.empty());
  // The connection stays usable: without the bad row the batch commits.
  b.ledger_append = Settlements("alice", 0, static_cast<int>(kPer + 8),
                                /*boom=*/-1, /*skip=*/boom);
  REQUIRE(store.Apply(b).ok());
  CHECK(Totals(store, "alice").first == static_cast<int64_t>(kPer + 7));
}

// RAISE(ROLLBACK) ends the whole transaction, as SQLite does itself after
// some I/O errors: writing the statement's rows one at a time then would
// commit each on its own.
TEST_CASE("A row that ends the transaction inside a statement of 32 leaves "
          "no row of its batch committed",
          "[storage]") {
  storage::TempDir dir;
  Batch b;
  auto opened = StoreRefusingBoom(dir, "ROLLBACK", &b);
  Store& store = *opened;
  const Status status = store.Apply(b);
  CHECK(status.code() == ErrorCode::kUnavailable);
  CHECK_THAT(status.message(), Catch::Contains("injected"));
  CHECK(Totals(store, "alice").first == 0);
}

TEST_CASE("Limiter and spend rows go in 32 to a statement and the later of "
          "one key wins",
          "[storage]") {
  storage::TempDir dir;
  auto opened = FreshStore(dir);
  Store& store = *opened;
  const int n = static_cast<int>(kPer + 8);
  Batch b;
  std::vector<LimiterRow> limiters;
  std::vector<SpendRow> spend;
  for (int i = 0; i < n; ++i) {
    const std::string scope = "task:t" + std::to_string(i);
    // Each limiter's state is its own: a state bound to the wrong row, or
    // encoded into text another row overwrote, shows.
    limiters.push_back({scope, "rpm", "token_bucket", {i, i * 10}});
    spend.push_back({scope, i, i * 2, i * 3});
  }
  // The same keys again within the first statement: the later rows win.
  limiters[20] = {"task:t3", "rpm", "token_bucket", {-3}};
  for (const LimiterRow& row : limiters) b.limiters_put.push_back(row);
  spend[20] = {"task:t3", 7, 8, 9};
  for (const SpendRow& row : spend) b.spend_put.push_back(row);
  REQUIRE(store.Apply(b).ok());
  auto loaded = store.Load();
  REQUIRE(loaded.ok());
  REQUIRE(loaded->limiters.size() == static_cast<size_t>(n - 1));
  REQUIRE(loaded->spend.size() == static_cast<size_t>(n - 1));
  for (const LimiterRow& row : loaded->limiters) {
    const int i = std::stoi(row.scope.substr(6));
    INFO(row.scope);
    CHECK(row.state == (i == 3 ? std::vector<int64_t>{-3}
                               : std::vector<int64_t>{i, i * 10}));
  }
  for (const SpendRow& row : loaded->spend) {
    const int i = std::stoi(row.scope.substr(6));
    INFO(row.scope);
    CHECK(row.requests == (i == 3 ? 7 : i));
    CHECK(row.usd_nano == (i == 3 ? 9 : i * 3));
  }
}

}  // namespace
}  // namespace brake
