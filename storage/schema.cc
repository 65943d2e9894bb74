#include "storage/schema.h"

#include <iterator>
#include <string>

#include "storage/sqlite_util.h"

namespace brake::storage {
namespace {

// Append only. Tables are STRICT so that a value of the wrong type can never
// be stored (and later misread as 0) - SQLite >= 3.37.
constexpr const char* kMigrations[] = {
    // 0 -> 1: the initial schema.
    R"sql(
CREATE TABLE policies(
  scope TEXT PRIMARY KEY NOT NULL,
  json TEXT NOT NULL
) STRICT;
CREATE TABLE tasks(
  task TEXT PRIMARY KEY NOT NULL,
  user TEXT NOT NULL,
  parent TEXT NOT NULL,
  created_ms INTEGER NOT NULL
) STRICT;
CREATE TABLE limiters(
  scope TEXT NOT NULL,
  name TEXT NOT NULL,
  algorithm TEXT NOT NULL,
  state TEXT NOT NULL,
  PRIMARY KEY(scope, name)
) STRICT;
CREATE TABLE spend(
  scope TEXT PRIMARY KEY NOT NULL,
  requests INTEGER NOT NULL,
  tokens INTEGER NOT NULL,
  usd_nano INTEGER NOT NULL
) STRICT;
CREATE TABLE leases(
  id TEXT PRIMARY KEY NOT NULL,
  json TEXT NOT NULL
) STRICT;
CREATE TABLE breakers(
  scope TEXT PRIMARY KEY NOT NULL,
  state TEXT NOT NULL
) STRICT;
CREATE TABLE prices(
  model TEXT PRIMARY KEY NOT NULL,
  input_nano_per_mtok INTEGER NOT NULL,
  output_nano_per_mtok INTEGER NOT NULL
) STRICT;
CREATE TABLE ledger(
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  time_ms INTEGER NOT NULL,
  user TEXT NOT NULL,
  task TEXT NOT NULL,
  parent TEXT NOT NULL,
  resource TEXT NOT NULL,
  model TEXT NOT NULL,
  requests INTEGER NOT NULL,
  tokens INTEGER NOT NULL,
  input_tokens INTEGER NOT NULL,
  output_tokens INTEGER NOT NULL,
  usd_nano INTEGER NOT NULL,
  latency_ms INTEGER NOT NULL,
  outcome TEXT NOT NULL,
  expired INTEGER NOT NULL CHECK(expired IN (0, 1))
) STRICT;
CREATE INDEX ledger_user_time ON ledger(user, time_ms);
CREATE INDEX ledger_user_task ON ledger(user, task);
)sql",
    // 1 -> 2: ledger rows name their lease, so a batch retried after a
    // failed commit (whose frames may have reached the WAL after all) never
    // records one settlement twice.
    R"sql(
ALTER TABLE ledger ADD COLUMN lease TEXT NOT NULL DEFAULT '';
CREATE UNIQUE INDEX ledger_lease ON ledger(lease) WHERE lease <> '';
)sql",
    // 2 -> 3: open leases are stored many to a row (storage/lease_chunks.h):
    // one "ID\tJSON" line each, with a hex bitmap of the lines settled
    // since. The rows of the old table become one chunk.
    R"sql(
CREATE TABLE lease_chunks(
  id INTEGER PRIMARY KEY,
  leases TEXT NOT NULL,
  settled TEXT NOT NULL
) STRICT;
INSERT INTO lease_chunks(id, leases, settled)
  SELECT 1, (SELECT group_concat(id || char(9) || json, char(10)) FROM leases),
         ''
  WHERE EXISTS (SELECT 1 FROM leases);
DROP TABLE leases;
)sql",
    // 3 -> 4: lease lines are written in a compact form (format 2,
    // daemon/lease_codec.h); lines of the old form still read. No table
    // changes: the version keeps an older braked, which cannot read the new
    // form, from starting on the file.
    R"sql(
SELECT 1;
)sql",
    // 4 -> 5: new settlements go to a ledger that is one B-tree ordered by
    // (user, time_ms, lease), where each wrote four (a rowid table and
    // three indexes): the storage thread's cost per settlement halves. The
    // key serves the usage queries (a user since a time, by task, model or
    // day) and, as the unique lease index did, makes a retried batch's row
    // a duplicate that INSERT OR IGNORE drops (a retry resends the same
    // row, time included). The rows written before stay where they are,
    // renamed ledger_schema4 with their indexes, and usage reads both: an
    // upgrade copies nothing, however long the ledger (a copy ran ~5 s per
    // million rows and needed their space twice). The key's columns come
    // first and in its order: SQLite 3.40's quick_check reports a false
    // "NULL value in ledger.task" on a WITHOUT ROWID table whose key
    // columns are declared in another order.
    R"sql(
ALTER TABLE ledger RENAME TO ledger_schema4;
CREATE TABLE ledger(
  user TEXT NOT NULL,
  time_ms INTEGER NOT NULL,
  lease TEXT NOT NULL,
  task TEXT NOT NULL,
  parent TEXT NOT NULL,
  resource TEXT NOT NULL,
  model TEXT NOT NULL,
  requests INTEGER NOT NULL,
  tokens INTEGER NOT NULL,
  input_tokens INTEGER NOT NULL,
  output_tokens INTEGER NOT NULL,
  usd_nano INTEGER NOT NULL,
  latency_ms INTEGER NOT NULL,
  outcome TEXT NOT NULL,
  expired INTEGER NOT NULL CHECK(expired IN (0, 1)),
  PRIMARY KEY(user, time_ms, lease)
) STRICT, WITHOUT ROWID;
)sql",
    // 5 -> 6: a chunk's bitmap of settled lines moves to a table of its
    // own. SQLite rewrites a whole record to change one column, so setting
    // a bit beside the lines rewrote every line of the chunk (a chunk of
    // 300 leases is ~75 KB of overflow pages). A chunk with no line settled
    // has no row here.
    R"sql(
CREATE TABLE lease_settled(
  chunk INTEGER PRIMARY KEY,
  settled TEXT NOT NULL
) STRICT;
INSERT INTO lease_settled(chunk, settled)
  SELECT id, settled FROM lease_chunks WHERE settled <> '';
ALTER TABLE lease_chunks DROP COLUMN settled;
)sql",
    // 6 -> 7: lease lines name a lease's own scopes by codes where its
    // fields spell them (format 3, daemon/lease_codec.h); lines of formats
    // 1 and 2 still read. No table changes: as for 3 -> 4, the version
    // keeps an older braked, which cannot read the new form, from starting
    // on the file.
    R"sql(
SELECT 1;
)sql",
    // 7 -> 8: a settlement records whether its figures were the
    // downstream's report or the client's estimate (the HTTP front's
    // streams cut short). Rows before it were all reports.
    R"sql(
ALTER TABLE ledger ADD COLUMN estimated INTEGER NOT NULL DEFAULT 0
  CHECK(estimated IN (0, 1));
)sql",
};

// Ends the open transaction, if SQLite has not already ended it itself (it
// rolls back on its own after some errors, e.g. SQLITE_FULL or an I/O error).
void RollbackIfOpen(sqlite3* db) {
  if (sqlite3_get_autocommit(db) == 0) {
    Status ignored = ExecSql(db, "ROLLBACK", "rollback of migration");
    (void)ignored;  // the migration's own error is the one to report
  }
}

}  // namespace

int KnownSchemaVersion() { return static_cast<int>(std::size(kMigrations)); }

std::span<const char* const> Migrations() { return kMigrations; }

Result<int64_t> ReadSchemaVersion(sqlite3* db) {
  return QueryInt(db, "PRAGMA user_version", "reading schema version");
}

Status CheckSchemaNotNewer(int64_t version, int64_t known) {
  if (version <= known) return Status::Ok();
  return Status::Unavailable("storage: database schema version " +
                             std::to_string(version) +
                             " is newer than this braked supports (" +
                             std::to_string(known) + "); refusing to start");
}

Status ApplyMigrations(sqlite3* db, std::span<const char* const> scripts) {
  const int64_t target = static_cast<int64_t>(scripts.size());
  while (true) {
    // The version is read again inside each write transaction: another
    // process may have migrated the file meanwhile.
    Status status = ExecSql(db, "BEGIN IMMEDIATE", "begin migration");
    if (!status.ok()) return status;
    Result<int64_t> version = ReadSchemaVersion(db);
    if (!version.ok()) {
      RollbackIfOpen(db);
      return version.status();
    }
    const int64_t from = *version;
    if (from >= target || from < 0) {
      RollbackIfOpen(db);  // nothing was written; ends the read
      if (from < 0) {
        return Status::Unavailable("storage: database schema version " +
                                   std::to_string(from) + " is invalid");
      }
      return CheckSchemaNotNewer(from, target);
    }
    const std::string what =
        "migration " + std::to_string(from) + " -> " + std::to_string(from + 1);
    status = ExecSql(db, scripts[static_cast<size_t>(from)], what);
    if (status.ok()) {
      const std::string bump =
          "PRAGMA user_version = " + std::to_string(from + 1);
      status = ExecSql(db, bump.c_str(), what + " (version bump)");
    }
    if (status.ok()) status = ExecSql(db, "COMMIT", what + " (commit)");
    if (!status.ok()) {
      RollbackIfOpen(db);
      return status;
    }
  }
}

Status MigrateToLatest(sqlite3* db) { return ApplyMigrations(db, kMigrations); }

}  // namespace brake::storage
