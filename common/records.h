// Records: the persisted shapes of brake's state, shared by the engine that
// produces them (budget/) and the store that writes them (storage/).
//
// Plain data, no behaviour beyond Batch's bookkeeping. Values are opaque to
// the store where the daemon owns their format (policy JSON, lease JSON,
// limiter and breaker state as integer lists).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "common/lease_puts.h"
#include "common/ledger_rows.h"
#include "common/limiter_puts.h"
#include "common/spend_puts.h"
#include "common/text_list.h"

namespace brake {

struct PolicyRow {
  std::string scope;  // "user:alice", "task:*", "global", ...
  std::string json;   // the policy object as set, serialized
};

struct TaskRow {
  std::string task;
  std::string user;
  std::string parent;  // "" when none
  int64_t created_ms = 0;  // wall clock, ms since the epoch
};

// An open lease as stored (a Batch puts them as LeasePuts).
struct LeaseRow {
  std::string id;
  std::string json;  // the daemon's serialized lease
};

struct BreakerRow {
  std::string scope;
  std::vector<int64_t> state;
};

struct PriceRow {
  std::string model;
  int64_t input_nano_per_mtok = 0;   // nano-usd per million input tokens
  int64_t output_nano_per_mtok = 0;  // nano-usd per million output tokens
};

// All the state changes to apply in one transaction. Puts are upserts by
// key; deletes of missing keys are no-ops. Order inside a Batch: deletes of a
// kind run before its puts.
struct Batch {
  uint64_t seq = 0;  // the daemon's batch number; the store ignores it
  std::vector<PolicyRow> policies_put;
  std::vector<std::string> policies_deleted;  // scopes
  std::vector<TaskRow> tasks_put;
  LimiterPuts limiters_put;
  // Deletes every limiter row of a scope (reset, policy change); "KIND:*"
  // deletes those of every subject of that kind.
  std::vector<std::string> limiter_scopes_deleted;
  SpendPuts spend_put;
  std::vector<std::string> spend_deleted;  // scopes; "KIND:*" as above
  LeasePuts leases_put;
  TextList leases_deleted;  // lease ids
  std::vector<BreakerRow> breakers_put;
  std::vector<std::string> breakers_deleted;  // scopes
  std::vector<PriceRow> prices_put;
  LedgerRows ledger_append;

  bool empty() const;
  // Drops every change and keeps the room the lists took (capacity_bytes),
  // so that the batch can be filled again without growing them: braked
  // recycles a committed batch (StorageWorker::TakeSpare).
  void Clear();
  size_t capacity_bytes() const;
  // Appends `other`'s changes after this one's (used to merge batches that
  // wait behind a commit in progress); `other` is left empty, keeping the
  // room it did not hand over, so that it can be filled again.
  void Append(Batch&& other);
};

// The stored state of some subjects, loaded on demand (Store::LoadSubjects):
// `scopes` lists every scope looked up (those asked for and the ancestors of
// tasks among them), found or not; the rows are what exists of them.
struct SubjectRows {
  std::vector<std::string> scopes;
  std::vector<TaskRow> tasks;
  std::vector<LimiterRow> limiters;
  std::vector<SpendRow> spend;
};

// Everything persisted, as loaded at startup.
struct Snapshot {
  std::vector<PolicyRow> policies;
  std::vector<TaskRow> tasks;
  std::vector<LimiterRow> limiters;
  std::vector<SpendRow> spend;
  std::vector<LeaseRow> leases;
  std::vector<BreakerRow> breakers;
  std::vector<PriceRow> prices;
};

}  // namespace brake
