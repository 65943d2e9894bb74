#include "storage/test_support.h"

#include <sqlite3.h>
#include <stdlib.h>

#include <filesystem>
#include <system_error>

#include "storage/schema.h"
#include "storage/sqlite_util.h"

namespace brake::storage {
namespace {

// Opens `path`, runs `body(db)`, closes. The connection is closed on every
// path, so tests never leave a second connection behind.
template <typename F>
auto WithRawConnection(const std::string& path, F&& body)
    -> decltype(body(static_cast<sqlite3*>(nullptr))) {
  sqlite3* db = nullptr;
  const int rc = sqlite3_open_v2(
      path.c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nullptr);
  if (rc != SQLITE_OK) {
    Status status = SqliteError(db, rc, "raw open " + path);
    sqlite3_close_v2(db);
    return status;
  }
  auto result = body(db);
  sqlite3_close_v2(db);
  return result;
}

}  // namespace

TempDir::TempDir() {
  char templ[] = "/tmp/brake-storage-test-XXXXXX";
  if (mkdtemp(templ) != nullptr) path_ = templ;
}

TempDir::~TempDir() {
  if (path_.empty()) return;
  std::error_code ignored;  // best effort: a leftover dir fails no test
  std::filesystem::remove_all(path_, ignored);
}

std::string TempDir::File(const std::string& name) const {
  return path_ + "/" + name;
}

Status ExecRawSql(const std::string& path, const std::string& sql) {
  return WithRawConnection(
      path, [&](sqlite3* db) { return ExecSql(db, sql.c_str(), "raw exec"); });
}

Result<int64_t> QueryRawInt(const std::string& path, const std::string& sql) {
  return WithRawConnection(path, [&](sqlite3* db) {
    return QueryInt(db, sql.c_str(), "raw query");
  });
}

Result<std::string> QueryRawText(const std::string& path,
                                 const std::string& sql) {
  return WithRawConnection(path, [&](sqlite3* db) -> Result<std::string> {
    Result<Statement> stmt = Statement::Prepare(db, sql);
    if (!stmt.ok()) return stmt.status();
    std::string text;
    bool found = false;
    Status s = stmt->ForEachRow("raw query", [&](const Statement& row) {
      if (!found) text = row.ColumnText(0);
      found = true;
      return Status::Ok();
    });
    if (!s.ok()) return s;
    if (!found) return Status::Unavailable("storage: raw query: no row");
    return text;
  });
}

Status MigrateRawForTest(const std::string& path,
                         const std::vector<const char*>& scripts) {
  return WithRawConnection(
      path, [&](sqlite3* db) { return ApplyMigrations(db, scripts); });
}

}  // namespace brake::storage
