#include "storage/usage.h"

#include <string>

#include "storage/sqlite_util.h"

namespace brake::storage {

Result<std::vector<UsageTotal>> QueryUsage(sqlite3* db, const UsageQuery& query) {
  if (query.user.empty()) return Status::BadRequest("user: required");
  const char* key = nullptr;
  if (query.by.empty()) {
    key = "''";
  } else if (query.by == "task") {
    key = "task";
  } else if (query.by == "model") {
    key = "model";
  } else if (query.by == "day") {
    // UTC day of time_ms; the subtraction floors the division for times
    // before 1970 (SQLite's '/' truncates toward zero).
    key =
        "strftime('%Y-%m-%d', time_ms / 1000 - (time_ms % 1000 < 0), "
        "'unixepoch')";
  } else {
    return Status::BadRequest(
        "by: must be one of \"\", \"task\", \"model\", \"day\"");
  }
  // Prepared per call: usage reports are rare and the SQL depends on the
  // grouping.
  // The rows of both ledgers (schema.cc, 4 -> 5): each part is read
  // through its own index, by user and time.
  std::string where = " WHERE user = ?1 AND time_ms >= ?2";
  if (!query.task.empty()) where += " AND task = ?3";
  const std::string columns =
      " SELECT time_ms, task, model, requests, tokens, input_tokens, "
      "output_tokens, usd_nano, expired, ";
  // Rows of schema 7 and before have no `estimated`: none was.
  std::string sql = std::string("SELECT ") + key +
                    " AS k, count(*), coalesce(sum(requests), 0), "
                    "coalesce(sum(tokens), 0), coalesce(sum(input_tokens), 0), "
                    "coalesce(sum(output_tokens), 0), "
                    "coalesce(sum(usd_nano), 0), coalesce(sum(expired), 0), "
                    "coalesce(sum(estimated), 0) "
                    "FROM (" + columns + "estimated FROM ledger" + where +
                    " UNION ALL" + columns + "0 AS estimated FROM ledger_schema4" +
                    where + ")";
  // Without GROUP BY the aggregate yields exactly one row, zeros included.
  if (!query.by.empty()) sql += " GROUP BY k ORDER BY k";

  Result<Statement> stmt = Statement::Prepare(db, sql);
  if (!stmt.ok()) return stmt.status();
  stmt->BindText(1, query.user);
  stmt->BindInt(2, query.since_ms);
  if (!query.task.empty()) stmt->BindText(3, query.task);
  std::vector<UsageTotal> totals;
  Status s = stmt->ForEachRow("usage query", [&](const Statement& r) {
    totals.push_back({r.ColumnText(0), r.ColumnInt(1), r.ColumnInt(2),
                      r.ColumnInt(3), r.ColumnInt(4), r.ColumnInt(5),
                      r.ColumnInt(6), r.ColumnInt(7), r.ColumnInt(8)});
    return Status::Ok();
  });
  if (!s.ok()) return s;
  return totals;
}

}  // namespace brake::storage
