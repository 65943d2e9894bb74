#include "storage/sqlite_util.h"

namespace brake::storage {

Status SqliteError(sqlite3* db, int rc, std::string_view what) {
  // sqlite3_errmsg describes the most recent failure on the connection, which
  // is not always `rc` (e.g. after a reset or a failed close); fall back to
  // the generic text when the codes disagree.
  const char* message = sqlite3_errstr(rc);
  if (db != nullptr && (sqlite3_extended_errcode(db) & 0xff) == (rc & 0xff)) {
    message = sqlite3_errmsg(db);
  }
  std::string text = "storage: ";
  text += what;
  text += " failed: ";
  text += message;
  return Status::Unavailable(std::move(text));
}

Status ExecSql(sqlite3* db, const char* sql, std::string_view what) {
  char* error = nullptr;
  const int rc = sqlite3_exec(db, sql, nullptr, nullptr, &error);
  if (rc == SQLITE_OK) return Status::Ok();
  std::string text = "storage: ";
  text += what;
  text += " failed: ";
  text += error != nullptr ? error : sqlite3_errstr(rc);
  sqlite3_free(error);
  return Status::Unavailable(std::move(text));
}

Result<int64_t> QueryInt(sqlite3* db, const char* sql, std::string_view what) {
  Result<Statement> stmt = Statement::Prepare(db, sql);
  if (!stmt.ok()) return SqliteError(db, sqlite3_errcode(db), what);
  bool found = false;
  int64_t value = 0;
  Status status = stmt->ForEachRow(what, [&](const Statement& row) {
    if (!found) value = row.ColumnInt(0);
    found = true;
    return Status::Ok();
  });
  if (!status.ok()) return status;
  if (!found) {
    return Status::Unavailable("storage: " + std::string(what) +
                               " failed: no result row");
  }
  return value;
}

Statement::~Statement() { sqlite3_finalize(stmt_); }

Statement& Statement::operator=(Statement&& other) noexcept {
  if (this != &other) {
    sqlite3_finalize(stmt_);
    stmt_ = std::exchange(other.stmt_, nullptr);
    bind_rc_ = std::exchange(other.bind_rc_, SQLITE_OK);
  }
  return *this;
}

Result<Statement> Statement::Prepare(sqlite3* db, std::string_view sql) {
  sqlite3_stmt* stmt = nullptr;
  const int rc =
      sqlite3_prepare_v3(db, sql.data(), static_cast<int>(sql.size()),
                         SQLITE_PREPARE_PERSISTENT, &stmt, nullptr);
  if (rc != SQLITE_OK) {
    sqlite3_finalize(stmt);
    return SqliteError(db, rc, "prepare '" + std::string(sql) + "'");
  }
  if (stmt == nullptr) {  // only whitespace or a comment
    return Status::Unavailable("storage: prepare '" + std::string(sql) +
                               "' failed: empty statement");
  }
  return Statement(stmt);
}

void Statement::BindInt(int index, int64_t value) {
  const int rc = sqlite3_bind_int64(stmt_, index, value);
  if (bind_rc_ == SQLITE_OK) bind_rc_ = rc;
}

void Statement::BindText(int index, std::string_view value) {
  // A non-null pointer even for an empty view: a null pointer binds NULL,
  // which the NOT NULL columns would refuse.
  const char* data = value.empty() ? "" : value.data();
  const int rc = sqlite3_bind_text64(stmt_, index, data, value.size(),
                                     SQLITE_STATIC, SQLITE_UTF8);
  if (bind_rc_ == SQLITE_OK) bind_rc_ = rc;
}

Status Statement::Run(std::string_view what, std::string_view key1,
                      std::string_view key2) {
  Status status = CheckBinds(what);
  int rc = SQLITE_DONE;
  if (status.ok()) {
    do {
      rc = sqlite3_step(stmt_);
    } while (rc == SQLITE_ROW);
  }
  if (status.ok() && rc != SQLITE_DONE) {
    std::string full(what);
    if (!key1.empty() || !key2.empty()) {
      full += " (";
      full += key1;
      if (!key2.empty()) {
        full += ',';
        full += key2;
      }
      full += ')';
    }
    status = SqliteError(sqlite3_db_handle(stmt_), rc, full);
  }
  Reset();
  return status;
}

int64_t Statement::ColumnInt(int column) const {
  return sqlite3_column_int64(stmt_, column);
}

std::string Statement::ColumnText(int column) const {
  const unsigned char* text = sqlite3_column_text(stmt_, column);
  if (text == nullptr) return std::string();
  const int size = sqlite3_column_bytes(stmt_, column);
  return std::string(reinterpret_cast<const char*>(text),
                     static_cast<size_t>(size));
}

Status Statement::CheckBinds(std::string_view what) const {
  if (bind_rc_ == SQLITE_OK) return Status::Ok();
  return SqliteError(sqlite3_db_handle(stmt_), bind_rc_, what);
}

void Statement::Reset() {
  // sqlite3_reset repeats the last step's error code; the step already
  // reported it, so it is deliberately ignored here.
  sqlite3_reset(stmt_);
  sqlite3_clear_bindings(stmt_);
  bind_rc_ = SQLITE_OK;
}

}  // namespace brake::storage
