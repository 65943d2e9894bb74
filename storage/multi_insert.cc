#include "storage/multi_insert.h"

#include <array>
#include <string>
#include <utility>

namespace brake::storage {
namespace {

// `into` VALUES (?1, ..., ?N), ... for `rows` rows, then `tail`.
std::string InsertSql(std::string_view into, int columns, size_t rows,
                      std::string_view tail) {
  std::string sql(into);
  sql += " VALUES";
  int param = 0;
  for (size_t r = 0; r < rows; ++r) {
    sql += r == 0 ? "(" : ",(";
    for (int c = 0; c < columns; ++c) {
      if (c > 0) sql += ',';
      sql += '?';
      sql += std::to_string(++param);
    }
    sql += ')';
  }
  if (!tail.empty()) {
    sql += ' ';
    sql += tail;
  }
  return sql;
}

}  // namespace

Status MultiInsert::Prepare(sqlite3* db, std::string_view into, int columns,
                            std::string_view tail) {
  std::array<Statement, kSizes> by_size;
  for (size_t i = 0; i < kSizes; ++i) {
    Result<Statement> st =
        Statement::Prepare(db, InsertSql(into, columns, kRows >> i, tail));
    if (!st.ok()) return st.status();
    by_size[i] = std::move(*st);
  }
  db_ = db;
  columns_ = columns;
  by_size_ = std::move(by_size);
  return Status::Ok();
}

}  // namespace brake::storage
