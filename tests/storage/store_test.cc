#include "storage/store.h"

#include <signal.h>
#include <sys/resource.h>

#include <catch2/catch.hpp>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

#include "storage/test_support.h"

namespace brake {
namespace {

using storage::ExecRawSql;
using storage::QueryRawInt;
using storage::QueryRawText;
using storage::TempDir;

std::unique_ptr<Store> MustOpen(const std::string& path,
                                const StoreOptions& options = {}) {
  Result<std::unique_ptr<Store>> store = Store::Open(path, options);
  INFO(store.status().ToString());
  REQUIRE(store.ok());
  return std::move(*store);
}

Snapshot MustLoad(Store& store) {
  Result<Snapshot> snapshot = store.Load();
  INFO(snapshot.status().ToString());
  REQUIRE(snapshot.ok());
  return std::move(*snapshot);
}

void MustApply(Store& store, const Batch& batch) {
  Status status = store.Apply(batch);
  INFO(status.ToString());
  REQUIRE(status.ok());
}

std::string Join(const std::vector<int64_t>& values) {
  std::string out;
  for (int64_t v : values) out += std::to_string(v) + ";";
  return out;
}

// Rows flattened to strings, so that Catch prints a readable diff.
std::vector<std::string> Strs(const Snapshot& s, const std::string& kind) {
  std::vector<std::string> out;
  if (kind == "policies") {
    for (const auto& r : s.policies) out.push_back(r.scope + "=" + r.json);
  } else if (kind == "tasks") {
    for (const auto& r : s.tasks) {
      out.push_back(r.task + "|" + r.user + "|" + r.parent + "|" +
                    std::to_string(r.created_ms));
    }
  } else if (kind == "limiters") {
    for (const auto& r : s.limiters) {
      out.push_back(r.scope + "|" + r.name + "|" + r.algorithm + "|" +
                    Join(r.state));
    }
  } else if (kind == "spend") {
    for (const auto& r : s.spend) {
      out.push_back(r.scope + "|" + std::to_string(r.requests) + "|" +
                    std::to_string(r.tokens) + "|" +
                    std::to_string(r.usd_nano));
    }
  } else if (kind == "leases") {
    for (const auto& r : s.leases) out.push_back(r.id + "=" + r.json);
  } else if (kind == "breakers") {
    for (const auto& r : s.breakers)
      out.push_back(r.scope + "|" + Join(r.state));
  } else if (kind == "prices") {
    for (const auto& r : s.prices) {
      out.push_back(r.model + "|" + std::to_string(r.input_nano_per_mtok) +
                    "|" + std::to_string(r.output_nano_per_mtok));
    }
  }
  return out;
}

using Rows = std::vector<std::string>;

UsageQuery ForUser(std::string user) {
  UsageQuery q;
  q.user = std::move(user);
  return q;
}

LedgerRow Ledger(int64_t time_ms, std::string user, std::string task,
                 std::string model, int64_t tokens, int64_t usd_nano,
                 bool expired = false) {
  LedgerRow row;
  row.time_ms = time_ms;
  row.user = std::move(user);
  row.task = std::move(task);
  row.model = std::move(model);
  row.requests = 1;
  row.tokens = tokens;
  row.input_tokens = tokens / 4;
  row.output_tokens = tokens - tokens / 4;
  row.usd_nano = usd_nano;
  row.latency_ms = 120;
  row.outcome = expired ? "timeout" : "ok";
  row.expired = expired;
  return row;
}

Batch FullBatch() {
  Batch b;
  b.seq = 1;
  b.policies_put = {{"global", R"({"rpm":100})"}, {"user:alice", "{}"}};
  b.tasks_put = {{"t1", "alice", "", 1700000000000},
                 {"t2", "alice", "t1", 1700000001000}};
  b.limiters_put = {{"user:alice", "rpm", "token_bucket", {100, -3, INT64_MAX}},
                    {"user:alice", "tpm", "sliding_log", {}},
                    {"user:bob", "rpm", "fixed_window", {INT64_MIN}}};
  b.spend_put = {{"user:alice", 3, 3000, 1500000}, {"task:t1", 1, 10, 5}};
  b.leases_put.Add("L1", R"({"id":"L1","tokens":10})");
  b.breakers_put = {{"tool:search", {2, 0, 1700000000000}}};
  b.prices_put = {{"gpt-x", 2500000000, 10000000000}};
  b.ledger_append = {Ledger(1000, "alice", "t1", "gpt-x", 100, 50)};
  return b;
}

TEST_CASE("Store round-trips every kind through Apply, reopen and Load",
          "[storage]") {
  TempDir dir;
  REQUIRE(!dir.path().empty());
  const std::string path = dir.File("brake.db");
  {
    auto store = MustOpen(path);
    CHECK(MustLoad(*store).policies.empty());
    MustApply(*store, FullBatch());
  }
  auto store = MustOpen(path);
  const Snapshot s = MustLoad(*store);
  CHECK(Strs(s, "policies") == Rows{R"(global={"rpm":100})", "user:alice={}"});
  CHECK(Strs(s, "tasks") ==
        Rows{"t1|alice||1700000000000", "t2|alice|t1|1700000001000"});
  CHECK(Strs(s, "limiters") ==
        Rows{"user:alice|rpm|token_bucket|100;-3;9223372036854775807;",
             "user:alice|tpm|sliding_log|",
             "user:bob|rpm|fixed_window|-9223372036854775808;"});
  CHECK(Strs(s, "spend") ==
        Rows{"task:t1|1|10|5", "user:alice|3|3000|1500000"});
  CHECK(Strs(s, "leases") == Rows{R"(L1={"id":"L1","tokens":10})"});
  CHECK(Strs(s, "breakers") == Rows{"tool:search|2;0;1700000000000;"});
  CHECK(Strs(s, "prices") == Rows{"gpt-x|2500000000|10000000000"});
  // The ledger is not loaded, but it is there.
  Result<std::vector<UsageTotal>> usage = store->QueryUsage(ForUser("alice"));
  REQUIRE(usage.ok());
  REQUIRE(usage->size() == 1);
  CHECK((*usage)[0].tokens == 100);
  // The database was left in WAL mode.
  store.reset();
  Result<std::string> mode = QueryRawText(path, "PRAGMA journal_mode");
  REQUIRE(mode.ok());
  CHECK(*mode == "wal");
}

TEST_CASE("Store deletes rows and treats missing keys as no-ops", "[storage]") {
  TempDir dir;
  const std::string path = dir.File("brake.db");
  {
    auto store = MustOpen(path);
    MustApply(*store, FullBatch());
    Batch del;
    del.policies_deleted = {"global", "no-such-scope"};
    del.limiter_scopes_deleted = {"user:alice"};  // both of its limits
    del.spend_deleted = {"task:t1"};
    del.leases_deleted = {"L1", "L-missing"};
    del.breakers_deleted = {"tool:search"};
    MustApply(*store, del);
  }
  auto store = MustOpen(path);
  const Snapshot s = MustLoad(*store);
  CHECK(Strs(s, "policies") == Rows{"user:alice={}"});
  CHECK(Strs(s, "limiters") ==
        Rows{"user:bob|rpm|fixed_window|-9223372036854775808;"});
  CHECK(Strs(s, "spend") == Rows{"user:alice|3|3000|1500000"});
  CHECK(s.leases.empty());
  CHECK(s.breakers.empty());
  CHECK(s.tasks.size() == 2);
  CHECK(s.prices.size() == 1);
}

TEST_CASE("Store puts are upserts that replace the whole row", "[storage]") {
  TempDir dir;
  auto store = MustOpen(dir.File("brake.db"));
  MustApply(*store, FullBatch());
  Batch b;
  b.policies_put = {{"global", R"({"rpm":5})"}};
  b.tasks_put = {{"t2", "bob", "", 42}};
  b.limiters_put = {{"user:alice", "rpm", "leaky_bucket", {7}}};
  b.spend_put = {{"user:alice", 4, 4000, 2000000}};
  b.leases_put.Add("L1", "{}");
  b.breakers_put = {{"tool:search", {}}};
  b.prices_put = {{"gpt-x", 1, 2}};
  MustApply(*store, b);
  const Snapshot s = MustLoad(*store);
  CHECK(Strs(s, "policies") == Rows{R"(global={"rpm":5})", "user:alice={}"});
  CHECK(Strs(s, "tasks") == Rows{"t1|alice||1700000000000", "t2|bob||42"});
  CHECK(Strs(s, "limiters") ==
        Rows{"user:alice|rpm|leaky_bucket|7;", "user:alice|tpm|sliding_log|",
             "user:bob|rpm|fixed_window|-9223372036854775808;"});
  CHECK(Strs(s, "spend") ==
        Rows{"task:t1|1|10|5", "user:alice|4|4000|2000000"});
  CHECK(Strs(s, "leases") == Rows{"L1={}"});
  CHECK(Strs(s, "breakers") == Rows{"tool:search|"});
  CHECK(Strs(s, "prices") == Rows{"gpt-x|1|2"});
}

TEST_CASE("Store runs a kind's deletes before its puts", "[storage]") {
  TempDir dir;
  auto store = MustOpen(dir.File("brake.db"));
  Batch b;
  b.limiter_scopes_deleted = {"user:a"};
  b.limiters_put = {{"user:a", "rpm", "tb", {1}}};
  b.leases_deleted = {"L"};
  b.leases_put.Add("L", "{}");
  MustApply(*store, b);
  const Snapshot s = MustLoad(*store);
  CHECK(Strs(s, "limiters") == Rows{"user:a|rpm|tb|1;"});
  CHECK(Strs(s, "leases") == Rows{"L={}"});
  // An empty batch is a successful no-op.
  CHECK(store->Apply(Batch()).ok());
}

TEST_CASE("Store rolls back the whole batch when one row fails", "[storage]") {
  TempDir dir;
  const std::string path = dir.File("brake.db");
  {
    auto store = MustOpen(path);
    Batch base;
    base.policies_put = {{"global", "{}"}};
    base.ledger_append = {Ledger(1, "carol", "t0", "m", 7, 7)};
    MustApply(*store, base);
  }
  // Installed through a separate connection while no Store is open.
  REQUIRE(ExecRawSql(path,
                     "CREATE TRIGGER fail_boom BEFORE INSERT ON ledger "
                     "WHEN NEW.user = 'boom' "
                     "BEGIN SELECT RAISE(ABORT, 'injected failure'); END;")
              .ok());
  auto store = MustOpen(path);
  Batch failing = FullBatch();
  failing.policies_deleted = {"global"};
  failing.ledger_append.push_back(Ledger(2, "boom", "t9", "m", 1, 1));
  const Status status = store->Apply(failing);
  CHECK(status.code() == ErrorCode::kUnavailable);
  CHECK_THAT(status.message(),
             Catch::Contains("append ledger row (boom,t9) failed") &&
                 Catch::Contains("injected failure"));

  const Snapshot s = MustLoad(*store);
  CHECK(Strs(s, "policies") == Rows{"global={}"});
  CHECK(s.tasks.empty());
  CHECK(s.limiters.empty());
  CHECK(s.spend.empty());
  CHECK(s.leases.empty());
  CHECK(s.breakers.empty());
  CHECK(s.prices.empty());
  auto alice = store->QueryUsage(ForUser("alice"));
  REQUIRE(alice.ok());
  CHECK((*alice)[0].calls == 0);

  // The connection stays usable: the same batch minus the bad row commits.
  failing.ledger_append.pop_back();
  MustApply(*store, failing);
  CHECK(MustLoad(*store).limiters.size() == 3);
}

TEST_CASE("Store makes a new database in pages of kPageBytes and keeps an older one's",
          "[storage]") {
  TempDir dir;
  const std::string fresh = dir.File("fresh.db");
  {
    auto store = MustOpen(fresh);
    MustApply(*store, FullBatch());
    // The WAL holds as many bytes between checkpoints in any page size.
    CHECK(*store->checkpoint_pages() ==
          Store::kWalCheckpointBytes / Store::kPageBytes);
  }
  CHECK(*QueryRawInt(fresh, "PRAGMA page_size") == Store::kPageBytes);
  CHECK(*QueryRawText(fresh, "PRAGMA journal_mode") == "wal");

  // A database made with 4 KiB pages opens, keeps them and its rows.
  const std::string older = dir.File("older.db");
  REQUIRE(ExecRawSql(older, "PRAGMA page_size=4096; CREATE TABLE t(x);").ok());
  REQUIRE(*QueryRawInt(older, "PRAGMA page_size") == 4096);
  {
    auto store = MustOpen(older);
    MustApply(*store, FullBatch());
    CHECK(*store->checkpoint_pages() == Store::kWalCheckpointBytes / 4096);
    CHECK(Strs(MustLoad(*store), "policies") ==
          Strs(MustLoad(*MustOpen(fresh)), "policies"));
  }
  CHECK(*QueryRawInt(older, "PRAGMA page_size") == 4096);
}

TEST_CASE("Store refuses a newer schema and leaves the file untouched",
          "[storage]") {
  TempDir dir;
  const std::string path = dir.File("brake.db");
  REQUIRE(ExecRawSql(path,
                     "CREATE TABLE future(x); INSERT INTO future VALUES(1);"
                     "PRAGMA user_version = 99;")
              .ok());
  auto read_file = [&] {
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
  };
  const std::string before = read_file();

  Result<std::unique_ptr<Store>> store = Store::Open(path);
  REQUIRE_FALSE(store.ok());
  CHECK(store.status().code() == ErrorCode::kUnavailable);
  CHECK_THAT(store.status().message(),
             Catch::Contains("database schema version 99 is newer than this "
                             "braked supports (" +
                             std::to_string(Store::SchemaVersion()) +
                             "); refusing to start"));
  CHECK(read_file() == before);
  CHECK_FALSE(std::filesystem::exists(path + "-wal"));
  CHECK(*QueryRawInt(path, "PRAGMA user_version") == 99);
  CHECK(*QueryRawText(path, "PRAGMA journal_mode") == "delete");
}

TEST_CASE("Store refuses a database that fails quick_check", "[storage]") {
  TempDir dir;
  const std::string path = dir.File("brake.db");
  {
    auto store = MustOpen(path);
    Batch b;
    for (int i = 0; i < 6000; ++i) {
      b.ledger_append.push_back(
          Ledger(i, "user" + std::to_string(i % 7), "t", "m", i, i));
    }
    MustApply(*store, b);
    REQUIRE(store->Checkpoint().ok());
  }
  const auto size = std::filesystem::file_size(path);
  REQUIRE(size >= 64 * 4096);
  {
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>(size / 2 / 4096 * 4096));
    const std::string garbage(3 * 4096, '\xAB');
    f.write(garbage.data(), static_cast<std::streamsize>(garbage.size()));
    REQUIRE(f.good());
  }
  Result<std::unique_ptr<Store>> store = Store::Open(path);
  REQUIRE_FALSE(store.ok());
  CHECK(store.status().code() == ErrorCode::kUnavailable);
  CHECK_THAT(
      store.status().message(),
      Catch::StartsWith("storage: database is damaged, refusing to open"));
  // Without the check the same file opens: the check is what refused it.
  CHECK(Store::Open(path, {.quick_check = false}).ok());
  // After a clean close (no write-ahead log left) the check can be skipped;
  // with frames in the log (an unclean stop) it runs.
  const StoreOptions after_unclean{.quick_check = true,
                                   .quick_check_only_after_unclean_stop = true};
  {
    auto skipped = Store::Open(path, after_unclean);
    REQUIRE(skipped.ok());
    CHECK_FALSE((*skipped)->quick_checked());
  }
  REQUIRE_FALSE(std::filesystem::exists(path + "-wal"));
  std::ofstream(path + "-wal", std::ios::binary) << std::string(4096, '\0');
  Result<std::unique_ptr<Store>> checked = Store::Open(path, after_unclean);
  CHECK_FALSE(checked.ok());
}

TEST_CASE("Store refuses to serve a malformed stored state", "[storage]") {
  // int_list_test covers the grammar; these show the refusal per table.
  const std::string state =
      GENERATE(as<std::string>{}, "1,,2", "x", "99999999999999999999");
  INFO("state: '" << state << "'");
  TempDir dir;
  const std::string path = dir.File("brake.db");
  MustOpen(path).reset();  // creates the schema
  SECTION("limiters") {
    REQUIRE(ExecRawSql(path,
                       "INSERT INTO limiters VALUES('user:a', 'rpm', "
                       "'tb', '" +
                           state + "')")
                .ok());
    auto loaded = MustOpen(path)->Load();
    REQUIRE_FALSE(loaded.ok());
    CHECK(loaded.status().code() == ErrorCode::kUnavailable);
    CHECK(loaded.status().message() ==
          "storage: limiters row (user:a,rpm): malformed state");
  }
  SECTION("breakers") {
    REQUIRE(ExecRawSql(path,
                       "INSERT INTO breakers VALUES('tool:x', '" + state + "')")
                .ok());
    auto loaded = MustOpen(path)->Load();
    REQUIRE_FALSE(loaded.ok());
    CHECK(loaded.status().message() ==
          "storage: breakers row (tool:x): malformed state");
  }
}

TEST_CASE("Store::Open reports files it cannot use", "[storage]") {
  TempDir dir;
  SECTION("missing directory") {
    auto store = Store::Open(dir.File("no/such/dir/brake.db"));
    REQUIRE_FALSE(store.ok());
    CHECK(store.status().code() == ErrorCode::kUnavailable);
    CHECK_THAT(store.status().message(), Catch::StartsWith("storage: open "));
  }
  SECTION("not a database") {
    const std::string path = dir.File("junk.db");
    std::ofstream(path) << std::string(8192, 'j');
    auto store = Store::Open(path);
    REQUIRE_FALSE(store.ok());
    CHECK(store.status().code() == ErrorCode::kUnavailable);
    CHECK_THAT(store.status().message(),
               Catch::Contains("file is not a database"));
  }
}

// Makes every write that would grow a file fail with EFBIG (which SQLite
// reports as an I/O error) until destroyed.
class NoFileGrowth {
 public:
  NoFileGrowth() {
    getrlimit(RLIMIT_FSIZE, &saved_);
    old_handler_ = signal(SIGXFSZ, SIG_IGN);
    rlimit none = saved_;
    none.rlim_cur = 0;
    ok_ = setrlimit(RLIMIT_FSIZE, &none) == 0;
  }
  ~NoFileGrowth() {
    setrlimit(RLIMIT_FSIZE, &saved_);
    signal(SIGXFSZ, old_handler_);
  }
  bool ok() const { return ok_; }

 private:
  rlimit saved_{};
  sighandler_t old_handler_ = SIG_DFL;
  bool ok_ = false;
};

TEST_CASE("Store fails closed after an I/O error", "[storage]") {
  TempDir dir;
  const std::string path = dir.File("brake.db");
  auto store = MustOpen(path);
  MustApply(*store, FullBatch());
  REQUIRE(store->Checkpoint().ok());  // an empty WAL: the next write grows it
  Batch next;
  next.policies_put = {{"late", "{}"}};
  {
    NoFileGrowth guard;
    REQUIRE(guard.ok());
    const Status failed = store->Apply(next);
    CHECK(failed.code() == ErrorCode::kUnavailable);
    CHECK_THAT(failed.message(), Catch::Contains("I/O error"));
  }
  // The disk works again, but the store no longer trusts it.
  const Status refused = store->Apply(next);
  CHECK(refused.code() == ErrorCode::kUnavailable);
  CHECK_THAT(refused.message(),
             Catch::StartsWith("storage: writes refused after an earlier "
                               "failure"));
  CHECK_FALSE(store->Checkpoint().ok());
  CHECK(MustLoad(*store).policies.size() == 2);  // reads still answer
  store.reset();
  store = MustOpen(path);  // a restart recovers
  MustApply(*store, next);
  CHECK(MustLoad(*store).policies.size() == 3);
}

TEST_CASE("Store::Checkpoint truncates the WAL", "[storage]") {
  TempDir dir;
  const std::string path = dir.File("brake.db");
  auto store = MustOpen(path);
  MustApply(*store, FullBatch());
  CHECK(std::filesystem::file_size(path + "-wal") > 0);
  REQUIRE(store->Checkpoint().ok());
  CHECK(std::filesystem::file_size(path + "-wal") == 0);
  CHECK(MustLoad(*store).policies.size() == 2);
}

}  // namespace
}  // namespace brake
