// Schema: brake's SQLite tables and the ordered migrations that build them.
//
// The schema version lives in PRAGMA user_version. Migration i is one SQL
// script that moves a database from version i to i + 1; each runs in its own
// BEGIN IMMEDIATE transaction together with the user_version bump, so a
// crash or failure leaves the database at a whole version. Migrations are
// append-only: a released script is never edited. A database newer than the
// scripts known here is refused and left untouched. Internal to storage/;
// called on the connection's thread.
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <span>

#include "common/status.h"

namespace brake::storage {

// The newest schema version this binary knows (the number of migrations).
int KnownSchemaVersion();

// PRAGMA user_version of `db`.
Result<int64_t> ReadSchemaVersion(sqlite3* db);

// Ok when `version` can be opened by a binary that knows `known`; otherwise
// kUnavailable "storage: database schema version N is newer than this braked
// supports (M); refusing to start".
Status CheckSchemaNotNewer(int64_t version, int64_t known);

// Brings `db` from its current version to scripts.size() by running the
// missing scripts in order, one transaction each. On failure the database
// stays at the last version that committed and the status names the
// migration. Exposed with the script list as a parameter for tests.
Status ApplyMigrations(sqlite3* db, std::span<const char* const> scripts);

// brake's own scripts, in order (for tests that build an older database).
std::span<const char* const> Migrations();
// ApplyMigrations with brake's own scripts.
Status MigrateToLatest(sqlite3* db);

}  // namespace brake::storage
