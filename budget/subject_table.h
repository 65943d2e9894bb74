// SubjectTable: the subjects in memory, by scope. Which are resident (and
// which may be stored but are not), using and adding them, evicting the idle
// ones, the epoch that says when a cached subject may be stale, and the
// prefetch pipeline that loads the next decisions' subjects ahead of them.
//
// A subject is in memory from its first use until EvictIdle drops it;
// stored subjects come back through the engine's RestoreSubjects. An entry
// never moves while it is in the table: leases and caches hold pointers to
// it. Pure: no IO, no clock. Not thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "budget/engine_types.h"
#include "budget/scope_filter.h"
#include "budget/scope_key.h"
#include "budget/scope_table.h"
#include "budget/subject.h"
#include "common/status.h"

namespace brake {

class SubjectTable {
 public:
  // How deep a task tree may be, counted from the request's task.
  static constexpr size_t kMaxTaskDepth = 32;
  // Prefetch places a request this many calls ahead of its decision.
  // Sixteen calls cover a miss behind nested page tables (docs/DESIGN.md).
  static constexpr int kPrefetchAhead = 16;

  // --- Lookup and use ---
  // Whether `scope` names a subject: "global" or a concrete scope, not a
  // "KIND:*" default.
  static bool IsSubject(const std::string& scope);
  template <class K>
  SubjectEntry* find(const K& key) const { return table_.find(key); }
  bool IsResident(const std::string& scope) const {
    return table_.count(scope) != 0;
  }
  size_t size() const { return table_.size(); }
  auto begin() { return table_.begin(); }
  auto end() { return table_.end(); }
  // The subject `scope`, added when new, its use time unchanged.
  Subject& operator[](const std::string& scope) { return table_[scope]; }

  // Moves on whenever a subject leaves memory: a CachedSubject of an
  // earlier epoch may point at a freed entry.
  uint64_t epoch() const { return epoch_; }
  bool Current(const CachedSubject& c) const { return c.epoch == epoch_; }

  // Marks the subject `prefix` + `name` used now, adding it when new
  // (without building the scope unless it is new).
  Resident Use(std::string_view prefix, std::string_view name,
               int64_t now_us) {
    return Resident::Of(UseEntry(prefix, name, now_us));
  }
  SubjectEntry* UseEntry(std::string_view prefix, std::string_view name,
                         int64_t now_us);
  // The same through `cache`, looking up only when a subject has left
  // memory since it was filled.
  Resident Use(CachedSubject& cache, std::string_view prefix,
               std::string_view name, int64_t now_us);
  // The subjects an acquire of `req` is checked against, most general
  // first: global, user, task, its ancestors up to the first not in memory,
  // resource; each marked used now. `task` is the request's task when it is
  // known (TaskSubject). Error: a task tree deeper than kMaxTaskDepth.
  Status UseRequestSubjects(const AcquireRequest& req, Resident task,
                            int64_t now_us, std::vector<Resident>* out);

  // --- Tasks ---
  // The task `name`'s subject when it is in memory with its record; both
  // pointers null otherwise.
  Resident TaskSubject(std::string_view name);
  // Its record, or nullptr (as TaskSubject, read-only).
  const TaskInfo* FindTask(std::string_view name) const;
  // Gives `s` (a task's subject) the record `record`.
  void SetTaskRecord(Subject& s, TaskInfo record);
  // Whether the task `task` (with its record) is `user`'s: read from its
  // owner's key while that is cached (a line the decision reads anyway),
  // else from its record.
  bool OwnedBy(const Subject& task, std::string_view user) const {
    if (Current(task.owner)) {
      const std::string& key = task.owner.entry->first;  // "user:" + user
      constexpr size_t kPrefix = std::string_view("user:").size();
      return key.size() == kPrefix + user.size() &&
             scope_key_internal::SameBytes(key.data() + kPrefix, user.data(),
                                           user.size());
    }
    return scope_key_internal::Same(task.task.user, user);
  }
  size_t task_count() const { return task_count_; }  // with a record

  // --- Residency ---
  // Marks a scope as possibly stored (the daemon's startup scan);
  // `expected` sizes the filter first.
  void ExpectStored(size_t expected) { stored_ = ScopeFilter(expected); }
  void NoteStored(std::string_view scope) { stored_.Add(scope); }
  // False while nothing was ever stored or evicted: nothing can be missing.
  bool AnyStored() const { return !stored_.empty(); }
  // Whether all that `req` names is in memory, as the record of its task
  // (`task`, its subject, or nullptr) alone shows: the task's owner cached
  // in this epoch, no parent, no resource. False says nothing.
  bool AllResident(const AcquireRequest& req, const Subject* task) const;
  // The scopes `req` needs loaded first (its user, task, resource, and the
  // first ancestor not in memory); empty when it can be decided now.
  std::vector<std::string> MissingFor(const AcquireRequest& req) const;
  // The same for `status` or `reset` of one concrete scope.
  std::vector<std::string> MissingForScope(const std::string& scope) const;
  // Whether deciding `req` would add subjects to memory.
  bool AddsSubjects(const AcquireRequest& req) const;
  // Examines up to `max_scan` slots (at most half of them hold a subject),
  // continuing where the last call stopped, and evicts the subjects unused
  // since before now_us - idle_us that hold no open lease and have no change
  // storage has not taken. Returns how many.
  size_t EvictIdle(int64_t now_us, int64_t idle_us, size_t max_scan);
  uint64_t evictions() const { return evictions_; }

  // --- Prefetch ---
  // A hint, for a caller holding several requests: starts loading what
  // deciding an acquire of `task` will read (the task's subject, its
  // limiters, its user's subject) without waiting for memory. Call it for
  // the request kPrefetchAhead places ahead of the one about to be decided:
  // each call moves the requests announced before it one stage on (the
  // table slot, the subject, its limiter array, its limiters; each stage
  // reads only what the one before brought in), and AnnouncedTask of a
  // request announced exactly kPrefetchAhead calls earlier takes its subject
  // from the pipeline. Any name may be announced ("" for a request that
  // names no task); nothing changes but what is in cache, so a caller whose
  // requests ran out announces "" to move the last ones on.
  void Prefetch(std::string_view task);
  // Worth it only when the subjects outgrow the caches.
  bool prefetch_pays() const { return table_.size() >= kPrefetchFrom; }
  // TaskSubject(name), from the pipeline when `name` is the task of the
  // request announced kPrefetchAhead calls ago.
  Resident AnnouncedTask(std::string_view name);
  // Decisions that took their task's subject from the pipeline.
  uint64_t prefetched_decisions() const { return prefetched_decisions_; }

 private:
  static constexpr size_t kPrefetchFrom = 1 << 15;
  // Twice kPrefetchAhead long, so that the request being decided is still
  // there.
  static constexpr uint32_t kPrefetchRing = 2 * kPrefetchAhead;
  // A request announced to Prefetch: its task's hash, and its entry once
  // its slot was read (valid while the epoch is still `epoch`).
  struct Prefetching {
    uint64_t hash = 0;
    SubjectEntry* entry = nullptr;
    uint64_t epoch = 0;
  };
  struct Ancestor {
    const std::string* name;
    Resident task;  // its subject, with its record; null: not in memory
  };

  SubjectEntry* CurrentEntry(const Prefetching& p) const {
    return p.epoch == epoch_ ? p.entry : nullptr;
  }
  bool NeedsLoad(const std::string& scope) const;
  void Evict(const std::string& scope);

  ScopeTable<Subject> table_;
  uint64_t epoch_ = 1;
  CachedSubject global_;
  ScopeFilter stored_;
  size_t evict_cursor_ = 0;
  uint64_t evictions_ = 0;
  size_t task_count_ = 0;
  Prefetching prefetch_ring_[kPrefetchRing] = {};
  uint32_t prefetch_next_ = 0;
  uint64_t prefetched_decisions_ = 0;
  std::vector<Ancestor> scratch_ancestors_;  // kept for its capacity
};

}  // namespace brake
