// Store::Impl: the Store's connection and prepared statements, shared by
// store.cc (open, load, apply) and store_write.cc (what a batch writes).
#pragma once

#include <sqlite3.h>

#include <string>
#include <string_view>
#include <vector>

#include "common/records.h"
#include "common/status.h"
#include "storage/lease_chunks.h"
#include "storage/multi_insert.h"
#include "storage/sqlite_util.h"
#include "storage/store.h"

namespace brake {
namespace storage {

// Owns the connection; declared first in Impl so it closes after every
// statement has been finalized.
struct Connection {
  sqlite3* db = nullptr;
  ~Connection() { sqlite3_close_v2(db); }
};

}  // namespace storage

struct Store::Impl {
  storage::Connection connection;
  // Apply's statements, prepared once at open.
  storage::Statement begin;
  storage::Statement commit;
  storage::Statement policy_delete;
  storage::Statement policy_put;
  storage::Statement task_put;
  storage::Statement limiter_scope_delete;
  storage::Statement limiter_kind_delete;
  storage::MultiInsert limiter_put;
  storage::Statement spend_delete;
  storage::Statement spend_kind_delete;
  storage::MultiInsert spend_put;
  storage::LeaseChunks leases;
  storage::Statement breaker_delete;
  storage::Statement breaker_put;
  storage::Statement price_put;
  storage::MultiInsert ledger_append;
  // A limiter or breaker state encoded per row of a statement (by
  // MultiInsert slot; a breaker's, one to a statement, in the first).
  std::vector<std::string> state_texts =
      std::vector<std::string>(storage::MultiInsert::kRows);
  bool quick_checked = false;
  // Set by the first I/O error or sign of corruption in a write; every later
  // write is refused with it (see FailClosed).
  std::string fatal;

  sqlite3* db() const { return connection.db; }
  Status PrepareAll();
  Status WriteBatch(const Batch& batch);
  Status LoadInto(Snapshot* snapshot, bool with_subjects);
  // Deletes the rows of `scope` (a "KIND:*" scope: of the whole kind).
  Status DeleteScope(storage::Statement& one, storage::Statement& kind, const std::string& scope,
                     std::string_view what);
  Status FailClosed() const {
    return Status::Unavailable(
        "storage: writes refused after an earlier failure (" + fatal +
        "); restart to reload from disk");
  }
};

}  // namespace brake
