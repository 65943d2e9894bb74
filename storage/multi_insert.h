// MultiInsert: an INSERT (or upsert) written many rows to a statement.
//
// Every settlement appends a ledger row and every grant to a subject not yet
// dirty in the batch upserts its limiter and spend rows, so rows written one
// statement each were most of the storage thread's work: a step, a halt and
// a reset per row. Rows go kRows to a statement (INSERT ... VALUES (...),
// (...), ... [ON CONFLICT ...]), and the rest of a batch in statements of
// 16, 8, 4, 2 and 1 rows, at most one of each (strict mode commits every few
// dozen rows: one to a statement, those were most of a commit's steps, and
// SQLite allocates in each). Two rows of one key in one statement end as
// two statements would leave them (the later wins). A statement of several
// rows that a row's constraint (or a trigger) fails changed nothing (SQLite
// rolls back a failed statement), so its rows and the rest are then written
// one at a time, inside the transaction, and the error names the row that
// failed (a single row's message). Any other failure (I/O, a full disk) is
// returned at once, as the first row's, for the Store to fail closed on.
// Storage thread only, like the Store.
#pragma once

#include <sqlite3.h>

#include <array>
#include <cstddef>
#include <string_view>
#include <utility>
#include <vector>

#include "common/status.h"
#include "storage/sqlite_util.h"

namespace brake::storage {

class MultiInsert {
 public:
  static constexpr size_t kRows = 32;
  // Statements of kRows, kRows / 2, ..., 1 rows.
  static constexpr size_t kSizes = 6;
  static_assert(kRows >> (kSizes - 1) == 1);
  // What names a row in an error: one or two parts of its key.
  using Key = std::pair<std::string_view, std::string_view>;

  // `into` is "INSERT [OR ...] INTO table(c1, ..., cN)", `columns` N and
  // `tail` what follows the rows ("ON CONFLICT ...", or empty). `db` must
  // outlive this.
  Status Prepare(sqlite3* db, std::string_view into, int columns,
                 std::string_view tail);

  // Writes `rows` in the caller's transaction. `bind(statement, first, row,
  // slot)` binds `row` to parameters first .. first + N - 1; `slot` (below
  // kRows) is its place in the statement, for text it encodes that must
  // live until the statement runs. `key(row)` is the row's Key, for an
  // error: "storage: <what> (<key>) failed: ...".
  // `rows`: a vector, or any container with size() and operator[] (a row
  // it returns by value lives until its statement has run).
  template <typename Rows, typename Bind, typename Key>
  Status Write(const Rows& rows, std::string_view what, Bind bind, Key key) {
    size_t next = 0;
    // The largest statement that fits what is left, down to two rows.
    for (size_t i = 0; i + 1 < kSizes && next < rows.size();) {
      const size_t n = kRows >> i;
      if (rows.size() - next < n) {
        ++i;
        continue;
      }
      Statement& many = by_size_[i];
      for (size_t r = 0; r < n; ++r) {
        bind(many, static_cast<int>(r) * columns_ + 1, rows[next + r], r);
      }
      const auto [key1, key2] = key(rows[next]);
      Status s = many.Run(what, key1, key2);
      if (!s.ok()) {
        // Only a row's own failure is worth finding, and only inside the
        // transaction (outside it, each row alone would commit).
        const int rc = sqlite3_extended_errcode(db_) & 0xff;
        if (rc != SQLITE_CONSTRAINT || sqlite3_get_autocommit(db_) != 0) {
          return s;
        }
        break;  // one at a time, below, names the row that fails
      }
      next += n;
    }
    Statement& one = by_size_[kSizes - 1];
    for (; next < rows.size(); ++next) {
      bind(one, 1, rows[next], 0);
      const auto [key1, key2] = key(rows[next]);
      if (Status s = one.Run(what, key1, key2); !s.ok()) return s;
    }
    return Status::Ok();
  }

 private:
  sqlite3* db_ = nullptr;
  int columns_ = 0;
  std::array<Statement, kSizes> by_size_;  // kRows >> i rows in [i]
};

}  // namespace brake::storage
