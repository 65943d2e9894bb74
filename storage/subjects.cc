#include "storage/subjects.h"

#include <deque>
#include <unordered_set>
#include <utility>

#include "storage/int_list.h"
#include "storage/sqlite_util.h"

namespace brake::storage {
namespace {

constexpr std::string_view kTaskPrefix = "task:";

Status MalformedLimiter(const std::string& scope, const std::string& name) {
  return Status::Unavailable("storage: limiters row (" + scope + "," + name +
                             "): malformed state");
}

// Ends the read transaction whatever happened; returns `status`.
Status EndRead(sqlite3* db, Status status) {
  if (sqlite3_get_autocommit(db) == 0) {
    Status end = ExecSql(db, status.ok() ? "COMMIT" : "ROLLBACK", "end read");
    if (status.ok()) return end;
  }
  return status;
}

struct SubjectStatements {
  Statement limiters, spend, task;

  Status Prepare(sqlite3* db) {
    const std::pair<Statement*, const char*> table[] = {
        {&limiters,
         "SELECT name, algorithm, state FROM limiters WHERE scope = ?1 "
         "ORDER BY name"},
        {&spend,
         "SELECT requests, tokens, usd_nano FROM spend WHERE scope = ?1"},
        {&task, "SELECT user, parent, created_ms FROM tasks WHERE task = ?1"},
    };
    for (const auto& [stmt, sql] : table) {
      Result<Statement> prepared = Statement::Prepare(db, sql);
      if (!prepared.ok()) return prepared.status();
      *stmt = std::move(*prepared);
    }
    return Status::Ok();
  }

  // Appends the rows of `scope`; sets `parent` to a task's parent ("" else).
  Status Load(const std::string& scope, SubjectRows* out, std::string* parent) {
    parent->clear();
    limiters.BindText(1, scope);
    Status s = limiters.ForEachRow("load limiters", [&](const Statement& r) {
      LimiterRow row{scope, r.ColumnText(0), r.ColumnText(1), {}};
      auto state = ParseIntList(r.ColumnText(2));
      if (!state) return MalformedLimiter(scope, row.name);
      row.state = std::move(*state);
      out->limiters.push_back(std::move(row));
      return Status::Ok();
    });
    if (!s.ok()) return s;
    spend.BindText(1, scope);
    s = spend.ForEachRow("load spend", [&](const Statement& r) {
      out->spend.push_back(
          SpendRow{scope, r.ColumnInt(0), r.ColumnInt(1), r.ColumnInt(2)});
      return Status::Ok();
    });
    if (!s.ok() || scope.rfind(kTaskPrefix, 0) != 0) return s;
    std::string name = scope.substr(kTaskPrefix.size());
    task.BindText(1, name);
    return task.ForEachRow("load task", [&](const Statement& r) {
      out->tasks.push_back(
          TaskRow{name, r.ColumnText(0), r.ColumnText(1), r.ColumnInt(2)});
      *parent = r.ColumnText(1);
      return Status::Ok();
    });
  }
};

}  // namespace

Result<SubjectRows> LoadSubjects(sqlite3* db,
                                 const std::vector<std::string>& scopes) {
  SubjectStatements stmts;
  if (Status s = stmts.Prepare(db); !s.ok()) return s;
  if (Status s = ExecSql(db, "BEGIN", "begin subject load"); !s.ok()) return s;
  SubjectRows out;
  std::unordered_set<std::string> seen;
  // (scope, how many ancestors above a requested scope)
  std::deque<std::pair<std::string, size_t>> todo;
  for (const std::string& scope : scopes) todo.emplace_back(scope, 0);
  Status status;
  std::string parent;
  while (!todo.empty() && status.ok()) {
    auto [scope, depth] = std::move(todo.front());
    todo.pop_front();
    if (!seen.insert(scope).second) continue;
    status = stmts.Load(scope, &out, &parent);
    out.scopes.push_back(std::move(scope));
    if (!parent.empty() && depth < kMaxLoadedAncestors) {
      todo.emplace_back(std::string(kTaskPrefix) + parent, depth + 1);
    }
  }
  status = EndRead(db, std::move(status));
  if (!status.ok()) return status;
  return out;
}

Status ForEachStoredScope(sqlite3* db,
                          const std::function<void(std::string_view)>& fn) {
  const char* queries[] = {
      "SELECT DISTINCT scope FROM limiters",
      "SELECT scope FROM spend",
      "SELECT 'task:' || task FROM tasks",
  };
  if (Status s = ExecSql(db, "BEGIN", "begin scope scan"); !s.ok()) return s;
  Status status;
  for (const char* sql : queries) {
    Result<Statement> stmt = Statement::Prepare(db, sql);
    if (!stmt.ok()) {
      status = stmt.status();
      break;
    }
    status = stmt->ForEachRow("scan stored scopes", [&](const Statement& r) {
      fn(r.ColumnText(0));
      return Status::Ok();
    });
    if (!status.ok()) break;
  }
  return EndRead(db, std::move(status));
}

Result<int64_t> CountStoredScopes(sqlite3* db) {
  return QueryInt(db,
                  "SELECT (SELECT count(*) FROM limiters) + "
                  "(SELECT count(*) FROM spend) + (SELECT count(*) FROM tasks)",
                  "count stored scopes");
}

bool KindRange(std::string_view scope, std::string* low, std::string* high) {
  if (scope.size() < 3 || scope.substr(scope.size() - 2) != ":*") return false;
  *low = std::string(scope.substr(0, scope.size() - 1));  // "user:"
  *high = *low;
  high->back() = ';';
  return true;
}

}  // namespace brake::storage
