// LedgerWriter: how settlements are appended to the ledger.
//
// Every commit, cancel and expiry appends a row, so under an acquire-and-
// commit load the ledger is most of the storage thread's work. Rows go in
// statements of kRowsPerInsert rows each (INSERT OR IGNORE ... VALUES (...),
// (...), ...): one step, one statement halt and one reset per 32 rows where
// there was one per row; the rest of a batch goes one row per statement.
// A statement of many rows that fails changed nothing (SQLite rolls back a
// statement that fails); its rows are then tried one at a time so that the
// error names the row that failed, as a single insert's does. Storage
// thread only, like the Store.
#pragma once

#include <sqlite3.h>

#include <cstddef>
#include <vector>

#include "common/records.h"
#include "common/status.h"
#include "storage/sqlite_util.h"

namespace brake::storage {

class LedgerWriter {
 public:
  static constexpr size_t kRowsPerInsert = 32;

  // Prepares its statements on `db`, which must outlive it.
  Status Prepare(sqlite3* db);

  // Appends `rows` inside the caller's transaction; a row already there
  // (same user, time and lease: a retried batch's) is skipped. On failure
  // the error names the first row that failed ("append ledger row
  // (user,task) failed: ..."), and the caller rolls the transaction back.
  Status Append(const std::vector<LedgerRow>& rows);

 private:
  sqlite3* db_ = nullptr;
  Statement one_;   // one row
  Statement many_;  // kRowsPerInsert rows
};

}  // namespace brake::storage
