// Subject queries: loading the stored state of a few subjects on demand, and
// listing which subjects are stored at all. Internal to storage/ (Store's
// methods call these on its one connection).
//
// The daemon keeps only recently used subjects in memory (see
// Engine::EvictIdle); these are the reads that bring one back.
#pragma once

#include <sqlite3.h>

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "common/records.h"
#include "common/status.h"

namespace brake::storage {

// Deepest task tree followed when loading a task's ancestors; the engine
// refuses deeper trees anyway.
inline constexpr size_t kMaxLoadedAncestors = 32;

// The rows of `scopes` ("user:U", "task:T", "resource:R"), and of the stored
// ancestors of every task among them. One read transaction.
Result<SubjectRows> LoadSubjects(sqlite3* db,
                                 const std::vector<std::string>& scopes);

// Calls `fn` with every scope that has a stored row (limiters, spend, tasks
// as "task:T"); a scope may be reported more than once.
Status ForEachStoredScope(sqlite3* db,
                          const std::function<void(std::string_view)>& fn);

// How many stored rows name a subject (an upper bound of the scopes that
// ForEachStoredScope reports), to size a filter before the scan.
Result<int64_t> CountStoredScopes(sqlite3* db);

// "user:*" -> {"user:", "user;"}: the half-open key range of every concrete
// scope of that kind (';' follows ':' in ASCII). False for a concrete scope.
bool KindRange(std::string_view scope, std::string* low, std::string* high);

}  // namespace brake::storage
