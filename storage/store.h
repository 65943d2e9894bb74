// Store: brake's durable state in one SQLite database.
//
// The only code that includes sqlite3.h. One connection, WAL mode,
// synchronous=FULL, schema versioned by PRAGMA user_version with ordered
// migrations (a newer schema than this binary knows is refused, never
// touched). Not thread-safe: the daemon owns one Store and calls it from its
// single storage thread only (see daemon/storage_worker.h); it may be created
// on one thread and then used on another.
//
// Writes arrive as a Batch: all state changes of one or more loop turns,
// applied in ONE transaction (BEGIN IMMEDIATE ... COMMIT) so that group
// commit amortises the fsync. A Batch either commits whole or not at all; a
// failed commit is reported as such and never retried behind the caller's
// back.
//
// Values are opaque to the store where the daemon owns their format (policy
// JSON, lease JSON, limiter and breaker state as integer lists).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/records.h"
#include "common/status.h"

namespace brake {

struct UsageQuery {
  std::string user;             // required
  std::string task;             // "" = all tasks of the user
  int64_t since_ms = 0;         // inclusive, wall clock ms
  std::string by;               // "" (one total) | "task" | "model" | "day"
};

struct UsageTotal {
  std::string key;  // the group: task name, model, "YYYY-MM-DD"; "" for a total
  int64_t calls = 0;
  int64_t requests = 0;
  int64_t tokens = 0;
  int64_t input_tokens = 0;
  int64_t output_tokens = 0;
  int64_t usd_nano = 0;
  int64_t expired = 0;  // how many of the calls were settled by expiry
  int64_t estimated = 0;  // how many were settled at the client's estimate
};

struct StoreOptions {
  // Run PRAGMA quick_check at open; refuse to open a damaged database.
  bool quick_check = true;
  // ... but only when a write-ahead log with frames is left beside the file
  // (an unclean stop with changes not yet checkpointed; a clean close
  // checkpoints and removes it), so that a restart need not read the whole
  // file (the check is O(database size)). The daemon also keeps a marker
  // of its own for crashes while the log was empty (see daemon.cc).
  bool quick_check_only_after_unclean_stop = false;
  // Hold the database locked for as long as the store is open (PRAGMA
  // locking_mode=EXCLUSIVE, before the first read): no other connection can
  // read or write it, so a second braked on the same file fails to open it
  // (after the busy timeout, 5 s) instead of sharing its budgets; and the
  // WAL index lives in this process's memory, not a -shm mapping, so a
  // transaction takes no file locks of its own (fcntl) either.
  bool exclusive = false;
};

class Store {
 public:
  // Opens (creating if needed) the database at `path`, creating its parent
  // directory is the caller's business. Applies pending migrations. Fails
  // with kUnavailable when the file cannot be opened, is damaged, or has a
  // newer schema than this binary knows (the message says which).
  static Result<std::unique_ptr<Store>> Open(const std::string& path,
                                             const StoreOptions& options = {});
  ~Store();
  Store(const Store&) = delete;
  Store& operator=(const Store&) = delete;

  // What Load reads: everything, or all but the subjects (tasks, limiter
  // states, spend), which the daemon loads on demand (LoadSubjects).
  enum class LoadWhat { kEverything, kWithoutSubjects };
  Result<Snapshot> Load(LoadWhat what = LoadWhat::kEverything);
  // The rows of these subject scopes and of the ancestors of tasks among
  // them, in one read transaction.
  Result<SubjectRows> LoadSubjects(const std::vector<std::string>& scopes);
  // An upper bound of how many scopes ForEachStoredScope reports.
  Result<int64_t> CountStoredScopes();
  // Calls `fn` with every scope that has stored rows (possibly repeated).
  Status ForEachStoredScope(const std::function<void(std::string_view)>& fn);
  // Applies `batch` in one transaction with synchronous=FULL. Ok means the
  // transaction is committed and synced. On failure, nothing of `batch` is
  // applied (the transaction is rolled back) and the status is kUnavailable.
  // After an I/O error or corruption (not after a failing row or a full
  // disk) every later Apply and Checkpoint fails too: fail closed, reopen.
  Status Apply(const Batch& batch);
  // Sums ledger rows (the usage report). The sum of all rows of a user equals
  // the settled spend the daemon reports for it.
  Result<std::vector<UsageTotal>> QueryUsage(const UsageQuery& query);
  // PRAGMA wal_checkpoint(TRUNCATE); run from the storage thread when idle.
  Status Checkpoint();

  static int SchemaVersion();  // the newest schema this binary knows
  // The page size of a database Open creates; one made before keeps its
  // own (docs/OPERATIONS.md says how to convert it).
  static constexpr int kPageBytes = 8192;
  // The WAL is checkpointed once it holds this many bytes of pages, whatever
  // the file's page size (SQLite counts pages, 1,000 by default).
  static constexpr int64_t kWalCheckpointBytes = int64_t{16} << 20;
  // The WAL's automatic checkpoint, in pages of this database, as the
  // connection has it.
  Result<int64_t> checkpoint_pages() const;
  // Whether Open ran PRAGMA quick_check.
  bool quick_checked() const;

 private:
  struct Impl;
  explicit Store(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace brake
