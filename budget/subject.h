// A subject: one concrete scope ("global", "user:U", "task:T", "resource:R")
// in memory, with its limiters, its settled spend, what its open leases
// reserve and, for a task, the task's record. The subject table
// (subject_table.h) holds them and decides which stay in memory; the engine
// reads and changes them; the dirty log (dirty_log.h) lists those whose
// changes storage has not yet taken.
#pragma once

#include <cstdint>
#include <string>

#include "budget/engine_types.h"
#include "budget/limiter_list.h"
#include "budget/scope_table.h"

namespace brake {

struct Subject;
using SubjectEntry = ScopeTable<Subject>::Entry;

// A subject in memory and its scope (the table's key for it).
struct Resident {
  const std::string* scope = nullptr;
  Subject* subject = nullptr;

  static Resident Of(SubjectEntry* e);
  // The subject whose key `scope` is (as a lease's reserved scopes are: each
  // stays in memory while the lease is open), without a lookup.
  static Resident OfKey(const std::string* scope);
};

// A subject looked up once and kept while no subject leaves memory: valid
// while its epoch is the table's (SubjectTable::epoch()).
struct CachedSubject {
  uint64_t epoch = 0;  // 0: never looked up
  SubjectEntry* entry = nullptr;
};

// A task's record: kept with its subject ("task:" + its name) from its first
// grant (or load) until the subject leaves memory.
struct TaskInfo {
  std::string parent;  // first: a decision reads whether it is empty
  std::string user;
  int64_t created_ms = 0;
};

// One table entry holds it all. An entry starts a cache line (LinePool), and
// what a denial or a dry run reads of it fits in its first two: the scope,
// the fields up to the flags, and the length of its task's parent.
struct Subject {
  int64_t used_us = 0;  // last acquire, settlement, reset or load
  int32_t leases = 0;   // open leases naming it: not evictable
  // Its policy, and its limiters in that policy's order, as resolved when
  // the policy book's generation was limits_gen (0: never).
  uint32_t limits_gen = 0;
  const Policy* policy = nullptr;
  // One limiter per limit name: first those of `policy` in its order (once
  // resolved), then any whose limit the policy no longer has (kept while in
  // memory: a limit set again keeps its counters). They leave memory with
  // the subject.
  LimiterList limiters;
  // A task's: the subject of its user (kept here, not in `task`, so that a
  // decision finds it, and the user's name in its key, in the lines it
  // reads anyway).
  CachedSubject owner;
  // Whether `task` holds the task's record: the hot path reads it with the
  // subject, so it is not a map of its own. False for other subjects, and
  // for a task never granted.
  bool has_task = false;
  // Listed in the dirty log (then not evictable): its spend / some limiter /
  // its task record changed since storage last took the changes.
  bool spend_unsaved = false;
  bool limiters_unsaved = false;
  bool task_unsaved = false;
  TaskInfo task;
  Totals spend;     // settled
  Totals reserved;  // held by open leases

  const TaskInfo* record() const { return has_task ? &task : nullptr; }
  bool unsaved() const {
    return spend_unsaved || limiters_unsaved || task_unsaved;
  }
};

inline Resident Resident::Of(SubjectEntry* e) {
  return {&e->first, &e->second};
}
inline Resident Resident::OfKey(const std::string* scope) {
  return Of(ScopeTable<Subject>::EntryOfKey(scope));
}

}  // namespace brake
