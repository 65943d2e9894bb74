// Test support: raw access to a database file for tests that must set up
// states the Store itself never produces (a newer schema, a failing trigger,
// a malformed row, a half-applied migration).
//
// For tests only; lets them avoid including sqlite3.h (storage/ is its only
// includer). Each call opens its own short-lived connection and closes it
// before returning. Never call these while a Store has the same file open:
// brake keeps exactly one connection per database (see BACKGROUND.md on the
// WAL-reset race).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"

namespace brake::storage {

// A fresh directory under /tmp (mkdtemp), removed with its contents when the
// object is destroyed. path() is empty if it could not be created.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::string& path() const { return path_; }
  // path() + "/" + name.
  std::string File(const std::string& name) const;

 private:
  std::string path_;
};

// Runs `sql` (any number of statements) on the database at `path`, creating
// the file if needed.
Status ExecRawSql(const std::string& path, const std::string& sql);

// The first column of the first row of `sql` as an integer.
Result<int64_t> QueryRawInt(const std::string& path, const std::string& sql);

// The first column of the first row of `sql` as text.
Result<std::string> QueryRawText(const std::string& path,
                                 const std::string& sql);

// Runs schema.h's ApplyMigrations with `scripts` on the database at `path`.
Status MigrateRawForTest(const std::string& path,
                         const std::vector<const char*>& scripts);

}  // namespace brake::storage
