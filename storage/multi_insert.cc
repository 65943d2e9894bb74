#include "storage/multi_insert.h"

#include <string>

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
  Result<Statement> one =
      Statement::Prepare(db, InsertSql(into, columns, 1, tail));
  if (!one.ok()) return one.status();
  Result<Statement> many =
      Statement::Prepare(db, InsertSql(into, columns, kRows, tail));
  if (!many.ok()) return many.status();
  db_ = db;
  columns_ = columns;
  one_ = std::move(*one);
  many_ = std::move(*many);
  return Status::Ok();
}

}  // namespace brake::storage
