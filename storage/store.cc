#include "storage/store.h"

#include <sqlite3.h>
#include <sys/stat.h>

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "storage/int_list.h"
#include "storage/lease_chunks.h"
#include "storage/schema.h"
#include "storage/sqlite_util.h"
#include "storage/store_impl.h"
#include "storage/subjects.h"
#include "storage/usage.h"

namespace brake {

using storage::ExecSql;
using storage::SqliteError;
using storage::Statement;

namespace {

// The storage thread may wait this long for another process's lock; the
// loop never waits on it.
constexpr int kBusyTimeoutMs = 5000;

constexpr std::string_view kPrefix = "storage: ";

// How many quick_check complaints a refusal message quotes.
constexpr int kQuickCheckLinesQuoted = 3;

// Ends the open transaction after a failure, unless SQLite already rolled it
// back on its own (it does after SQLITE_FULL, I/O errors and the like).
// Returns `failure`, extended with the rollback's error if that failed too.
Status RollBack(sqlite3* db, Status failure) {
  if (sqlite3_get_autocommit(db) != 0) return failure;
  Status rollback = ExecSql(db, "ROLLBACK", "rollback");
  if (rollback.ok()) return failure;
  return Status::Unavailable(failure.message() + "; " + rollback.message());
}

// I/O errors and corruption leave the file's durable contents unknown: after
// a failed fsync the kernel may have dropped pages it now reports clean, so a
// later "successful" commit could sit on lost data. SQLITE_FULL and
// constraint or busy errors are clean rollbacks and stay retryable.
bool IsFatal(int rc) {
  const int primary = rc & 0xff;
  return primary == SQLITE_IOERR || primary == SQLITE_CORRUPT ||
         primary == SQLITE_NOTADB;
}

Status Malformed(std::string_view table, std::string_view key) {
  return Status::Unavailable("storage: " + std::string(table) + " row (" +
                             std::string(key) + "): malformed state");
}

Status RunQuickCheck(sqlite3* db) {
  Result<Statement> stmt = Statement::Prepare(db, "PRAGMA quick_check");
  if (!stmt.ok()) return stmt.status();
  std::string problems;
  int rows = 0;
  bool ok = false;
  Status status = stmt->ForEachRow("quick_check", [&](const Statement& row) {
    std::string line = row.ColumnText(0);
    ++rows;
    ok = rows == 1 && line == "ok";  // a damaged file lists its problems
    if (rows <= kQuickCheckLinesQuoted) {
      if (!problems.empty()) problems += "; ";
      problems += line;
    }
    return Status::Ok();
  });
  if (ok && status.ok()) return Status::Ok();
  if (!status.ok()) {
    // A lock or an out-of-memory says nothing about the file; only a walk
    // that hit bad pages is damage.
    const int primary = sqlite3_errcode(db) & 0xff;
    if (primary != SQLITE_CORRUPT && primary != SQLITE_NOTADB) return status;
    problems = status.message().substr(kPrefix.size());
  } else {
    problems = "quick_check: " + problems;
  }
  return Status::Unavailable(
      "storage: database is damaged, refusing to open it: " + problems);
}

Status EnableWal(sqlite3* db) {
  Result<Statement> stmt = Statement::Prepare(db, "PRAGMA journal_mode=WAL");
  if (!stmt.ok()) return stmt.status();
  std::string mode;
  Status status = stmt->ForEachRow("enabling WAL", [&](const Statement& row) {
    mode = row.ColumnText(0);
    return Status::Ok();
  });
  if (!status.ok()) return status;
  // An in-memory database answers "memory"; it has no file to journal.
  if (mode == "wal" || mode == "memory") return Status::Ok();
  return Status::Unavailable("storage: enabling WAL failed: journal mode is '" +
                             mode + "'");
}

}  // namespace

// Runs inside Load's read transaction. Rows come in key order so that a
// load is deterministic.
Status Store::Impl::LoadInto(Snapshot* out, bool with_subjects) {
  // Each entry: the query and how one row is appended to `out`.
  using RowReader = Status (*)(const Statement&, Snapshot*);
  struct Reader {
    const char* sql;
    RowReader read;
    bool subject = false;  // tasks, limiters, spend: loaded on demand
  };
  const Reader readers[] = {
      {"SELECT scope, json FROM policies ORDER BY scope",
       [](const Statement& r, Snapshot* s) {
         s->policies.push_back({r.ColumnText(0), r.ColumnText(1)});
         return Status::Ok();
       }},
      {"SELECT task, user, parent, created_ms FROM tasks ORDER BY task",
       [](const Statement& r, Snapshot* s) {
         s->tasks.push_back({r.ColumnText(0), r.ColumnText(1), r.ColumnText(2),
                             r.ColumnInt(3)});
         return Status::Ok();
       },
       true},
      {"SELECT scope, name, algorithm, state FROM limiters "
       "ORDER BY scope, name",
       [](const Statement& r, Snapshot* s) {
         LimiterRow row{r.ColumnText(0), r.ColumnText(1), r.ColumnText(2), {}};
         auto state = storage::ParseIntList(r.ColumnText(3));
         if (!state) return Malformed("limiters", row.scope + "," + row.name);
         row.state = std::move(*state);
         s->limiters.push_back(std::move(row));
         return Status::Ok();
       },
       true},
      {"SELECT scope, requests, tokens, usd_nano FROM spend ORDER BY scope",
       [](const Statement& r, Snapshot* s) {
         s->spend.push_back(
             {r.ColumnText(0), r.ColumnInt(1), r.ColumnInt(2), r.ColumnInt(3)});
         return Status::Ok();
       },
       true},
      {"SELECT scope, state FROM breakers ORDER BY scope",
       [](const Statement& r, Snapshot* s) {
         BreakerRow row{r.ColumnText(0), {}};
         auto state = storage::ParseIntList(r.ColumnText(1));
         if (!state) return Malformed("breakers", row.scope);
         row.state = std::move(*state);
         s->breakers.push_back(std::move(row));
         return Status::Ok();
       }},
      {"SELECT model, input_nano_per_mtok, output_nano_per_mtok FROM prices "
       "ORDER BY model",
       [](const Statement& r, Snapshot* s) {
         s->prices.push_back({r.ColumnText(0), r.ColumnInt(1), r.ColumnInt(2)});
         return Status::Ok();
       }},
  };
  for (const Reader& reader : readers) {
    if (reader.subject && !with_subjects) continue;
    Result<Statement> stmt = Statement::Prepare(db(), reader.sql);
    if (!stmt.ok()) return stmt.status();
    Status s = stmt->ForEachRow(
        "load", [&](const Statement& row) { return reader.read(row, out); });
    if (!s.ok()) return s;
  }
  return leases.Load(&out->leases);
}

Store::Store(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Store::~Store() = default;

int Store::SchemaVersion() { return storage::KnownSchemaVersion(); }

bool Store::quick_checked() const { return impl_->quick_checked; }

Result<std::unique_ptr<Store>> Store::Open(const std::string& path,
                                           const StoreOptions& options) {
  auto impl = std::make_unique<Impl>();
  // NOMUTEX: the Store is used by one thread at a time (see store.h).
  const int flags =
      SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX;
  const int rc =
      sqlite3_open_v2(path.c_str(), &impl->connection.db, flags, nullptr);
  sqlite3* db = impl->db();
  if (rc != SQLITE_OK) return SqliteError(db, rc, "open " + path);
  sqlite3_extended_result_codes(db, 1);
  sqlite3_busy_timeout(db, kBusyTimeoutMs);
  if (options.exclusive) {
    Status s = ExecSql(db, "PRAGMA locking_mode=EXCLUSIVE",
                       "setting the locking mode");
    if (!s.ok()) return s;
  }

  // Refusals first, before anything that could write to the file: a newer
  // schema and a damaged database are left exactly as found.
  Result<int64_t> version = storage::ReadSchemaVersion(db);
  if (!version.ok()) {
    if ((sqlite3_extended_errcode(db) & 0xff) == SQLITE_BUSY) {
      return Status::Unavailable(
          "storage: " + path +
          " is locked by another process (another braked on the same "
          "database?): " + version.status().message());
    }
    return version.status();
  }
  Status s = storage::CheckSchemaNotNewer(*version, SchemaVersion());
  if (!s.ok()) return s;
  bool check = options.quick_check;
  if (check && options.quick_check_only_after_unclean_stop) {
    struct stat wal;
    check = ::stat((path + "-wal").c_str(), &wal) == 0 && wal.st_size > 0;
  }
  if (check && !(s = RunQuickCheck(db)).ok()) return s;
  impl->quick_checked = check;

  // Before the first write fixes it (a no-op on a database that has
  // pages): small pages write a batch of open leases in many frames, large
  // ones make a strict commit rewrite its bookkeeping pages (the file's
  // header, a parent, a limiter's leaf) at their size (docs/OPERATIONS.md,
  // "Pages and the WAL"). The WAL is checkpointed every
  // kWalCheckpointBytes, whatever the pages.
  s = ExecSql(db,
              ("PRAGMA page_size=" + std::to_string(kPageBytes)).c_str(),
              "setting the page size");
  if (!s.ok()) return s;
  if (!(s = EnableWal(db)).ok()) return s;
  s = ExecSql(db, "PRAGMA synchronous=FULL; PRAGMA foreign_keys=OFF",
              "setting pragmas");
  if (!s.ok()) return s;
  Result<int64_t> page =
      storage::QueryInt(db, "PRAGMA page_size", "reading the page size");
  if (!page.ok()) return page.status();
  s = ExecSql(db,
              ("PRAGMA wal_autocheckpoint=" +
               std::to_string(kWalCheckpointBytes / *page))
                  .c_str(),
              "setting the checkpoint interval");
  if (!s.ok()) return s;
  if (!(s = storage::MigrateToLatest(db)).ok()) return s;
  if (!(s = impl->PrepareAll()).ok()) return s;
  return std::unique_ptr<Store>(new Store(std::move(impl)));
}

Result<Snapshot> Store::Load(LoadWhat what) {
  sqlite3* db = impl_->db();
  // One read transaction, so that the snapshot is consistent.
  Status s = ExecSql(db, "BEGIN", "begin load");
  if (!s.ok()) return RollBack(db, std::move(s));
  Snapshot snapshot;
  s = impl_->LoadInto(&snapshot, what == LoadWhat::kEverything);
  if (s.ok()) s = ExecSql(db, "COMMIT", "end load");
  if (!s.ok()) return RollBack(db, std::move(s));
  return snapshot;
}

Result<SubjectRows> Store::LoadSubjects(
    const std::vector<std::string>& scopes) {
  return storage::LoadSubjects(impl_->db(), scopes);
}

Result<int64_t> Store::CountStoredScopes() {
  return storage::CountStoredScopes(impl_->db());
}

Status Store::ForEachStoredScope(
    const std::function<void(std::string_view)>& fn) {
  return storage::ForEachStoredScope(impl_->db(), fn);
}

Result<int64_t> Store::checkpoint_pages() const {
  return storage::QueryInt(impl_->db(), "PRAGMA wal_autocheckpoint",
                           "reading the checkpoint interval");
}

Status Store::Apply(const Batch& batch) {
  if (!impl_->fatal.empty()) return impl_->FailClosed();
  if (batch.empty()) return Status::Ok();
  sqlite3* db = impl_->db();
  Status s = impl_->begin.Run("begin");
  if (s.ok()) s = impl_->WriteBatch(batch);
  // COMMIT returns only after the WAL is synced (synchronous=FULL); any
  // error here, a failed fsync included, means not durable.
  if (s.ok()) s = impl_->commit.Run("commit");
  if (s.ok()) {
    impl_->leases.Commit();
    return Status::Ok();
  }
  impl_->leases.Abandon();
  const int rc = sqlite3_extended_errcode(db);  // before ROLLBACK resets it
  s = RollBack(db, std::move(s));
  if (IsFatal(rc)) impl_->fatal = s.message();
  return s;
}

Result<std::vector<UsageTotal>> Store::QueryUsage(const UsageQuery& query) {
  return storage::QueryUsage(impl_->db(), query);
}

Status Store::Checkpoint() {
  if (!impl_->fatal.empty()) return impl_->FailClosed();
  sqlite3* db = impl_->db();
  int log_frames = 0;
  int checkpointed_frames = 0;
  const int rc =
      sqlite3_wal_checkpoint_v2(db, nullptr, SQLITE_CHECKPOINT_TRUNCATE,
                                &log_frames, &checkpointed_frames);
  if (rc == SQLITE_OK) return Status::Ok();
  Status s = SqliteError(db, rc, "checkpoint");
  if (IsFatal(rc)) impl_->fatal = s.message();
  return s;
}

}  // namespace brake
