// The usage report: sums of ledger rows of one user, grouped by task, model
// or day. Internal to storage/ (Store::QueryUsage calls it on its one
// connection).
#pragma once

#include <sqlite3.h>

#include <vector>

#include "common/status.h"
#include "storage/store.h"

namespace brake::storage {

Result<std::vector<UsageTotal>> QueryUsage(sqlite3* db,
                                           const UsageQuery& query);

}  // namespace brake::storage
