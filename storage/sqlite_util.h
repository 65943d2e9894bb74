// SQLite helpers: a prepared-statement RAII wrapper and the conversion of
// SQLite result codes into brake::Status.
//
// Internal to storage/ (the only folder that includes sqlite3.h). Every
// SQLite failure becomes a Status with ErrorCode::kUnavailable and a message
// "storage: <what> failed: <sqlite message>", so callers name the operation
// and the row while the helper supplies SQLite's own words. A Statement is
// bound to the connection that prepared it and follows that connection's
// threading rule (one thread at a time); it must be destroyed before the
// connection is closed.
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>

#include "common/status.h"

namespace brake::storage {

// kUnavailable "storage: <what> failed: <message>", where the message is the
// connection's error message when it describes `rc`, else SQLite's generic
// text for `rc`. `db` may be null.
Status SqliteError(sqlite3* db, int rc, std::string_view what);

// Runs one or more SQL statements that return no rows the caller needs.
Status ExecSql(sqlite3* db, const char* sql, std::string_view what);

// Runs `sql` and returns the first column of its first row as an integer
// (PRAGMA user_version and the like). Fails when there is no row.
Result<int64_t> QueryInt(sqlite3* db, const char* sql, std::string_view what);

// A prepared statement. Move-only; finalizes on destruction. Bind* record the
// first binding failure, which Run/ForEachRow report instead of stepping.
// Text is bound SQLITE_STATIC: the bound string must outlive the next
// Run/ForEachRow call, which clears the bindings before returning.
class Statement {
 public:
  Statement() = default;
  ~Statement();
  Statement(Statement&& other) noexcept { *this = std::move(other); }
  Statement& operator=(Statement&& other) noexcept;
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;

  // Prepares `sql` (one statement) on `db` for repeated use.
  static Result<Statement> Prepare(sqlite3* db, std::string_view sql);

  bool valid() const { return stmt_ != nullptr; }

  // Parameters are 1-based, as in SQLite.
  void BindInt(int index, int64_t value);
  void BindText(int index, std::string_view value);

  // Steps until SQLITE_DONE (rows, if any, are discarded), then resets the
  // statement and clears its bindings. Ok iff every step succeeded. A
  // failure names `what` and, when given, the row's key:
  // "storage: <what> (<key1>,<key2>) failed: <sqlite message>". The key is
  // only formatted on failure, so the success path does not allocate.
  Status Run(std::string_view what, std::string_view key1 = {},
             std::string_view key2 = {});

  // Steps through the result rows, calling `on_row(*this)` for each; a non-ok
  // status from `on_row` stops the walk and is returned. Always leaves the
  // statement reset with cleared bindings.
  template <typename F>
  Status ForEachRow(std::string_view what, F&& on_row) {
    Status status = CheckBinds(what);
    while (status.ok()) {
      const int rc = sqlite3_step(stmt_);
      if (rc == SQLITE_DONE) break;
      if (rc != SQLITE_ROW) {
        status = SqliteError(sqlite3_db_handle(stmt_), rc, what);
        break;
      }
      status = on_row(*this);
    }
    Reset();
    return status;
  }

  // Column accessors, valid inside ForEachRow; columns are 0-based.
  int64_t ColumnInt(int column) const;
  std::string ColumnText(int column) const;  // NULL reads as ""

 private:
  explicit Statement(sqlite3_stmt* stmt) : stmt_(stmt) {}
  Status CheckBinds(std::string_view what) const;
  void Reset();

  sqlite3_stmt* stmt_ = nullptr;
  int bind_rc_ = SQLITE_OK;
};

}  // namespace brake::storage
