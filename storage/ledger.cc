#include "storage/ledger.h"

#include <string>

namespace brake::storage {
namespace {

constexpr int kColumns = 15;

// INSERT OR IGNORE of `rows` rows, their parameters numbered row by row.
std::string InsertSql(size_t rows) {
  std::string sql =
      "INSERT OR IGNORE INTO ledger(time_ms, user, task, parent, resource, "
      "model, requests, tokens, input_tokens, output_tokens, usd_nano, "
      "latency_ms, outcome, expired, lease) VALUES";
  for (size_t r = 0; r < rows; ++r) {
    sql += r == 0 ? "(" : ",(";
    for (int c = 1; c <= kColumns; ++c) {
      if (c > 1) sql += ',';
      sql += '?';
      sql += std::to_string(r * kColumns + c);
    }
    sql += ')';
  }
  return sql;
}

// Binds `row` to the parameters from `first` (1-based) on.
void Bind(Statement& st, int first, const LedgerRow& row) {
  st.BindInt(first, row.time_ms);
  st.BindText(first + 1, row.user);
  st.BindText(first + 2, row.task);
  st.BindText(first + 3, row.parent);
  st.BindText(first + 4, row.resource);
  st.BindText(first + 5, row.model);
  st.BindInt(first + 6, row.requests);
  st.BindInt(first + 7, row.tokens);
  st.BindInt(first + 8, row.input_tokens);
  st.BindInt(first + 9, row.output_tokens);
  st.BindInt(first + 10, row.usd_nano);
  st.BindInt(first + 11, row.latency_ms);
  st.BindText(first + 12, row.outcome);
  st.BindInt(first + 13, row.expired ? 1 : 0);
  st.BindText(first + 14, row.lease);
}

}  // namespace

Status LedgerWriter::Prepare(sqlite3* db) {
  db_ = db;
  Result<Statement> one = Statement::Prepare(db, InsertSql(1));
  if (!one.ok()) return one.status();
  Result<Statement> many = Statement::Prepare(db, InsertSql(kRowsPerInsert));
  if (!many.ok()) return many.status();
  one_ = std::move(*one);
  many_ = std::move(*many);
  return Status::Ok();
}

Status LedgerWriter::Append(const std::vector<LedgerRow>& rows) {
  size_t next = 0;
  while (rows.size() - next >= kRowsPerInsert) {
    for (size_t r = 0; r < kRowsPerInsert; ++r) {
      Bind(many_, static_cast<int>(r) * kColumns + 1, rows[next + r]);
    }
    Status s = many_.Run("append ledger rows", rows[next].user,
                         rows[next].task);
    if (!s.ok()) {
      // Outside a transaction (SQLite ended it after an I/O error, say)
      // one row at a time would commit each: report this failure as is.
      if (sqlite3_get_autocommit(db_) != 0) return s;
      break;  // the rows one at a time, below, name the one that fails
    }
    next += kRowsPerInsert;
  }
  for (; next < rows.size(); ++next) {
    Bind(one_, 1, rows[next]);
    Status s = one_.Run("append ledger row", rows[next].user, rows[next].task);
    if (!s.ok()) return s;
  }
  return Status::Ok();
}

}  // namespace brake::storage
