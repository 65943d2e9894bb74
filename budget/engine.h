// Engine: brake's decision core. Policies, subjects, leases and accounting.
//
// The engine answers acquire, commit, cancel, status and reset for the
// daemon. It resolves which limits apply to a request (global, the user, the
// task and its ancestors, the resource, falling back to the `user:*`,
// `task:*` and `resource:*` defaults), checks every one of them, and charges
// all of them at once or none. Granted acquires become leases that hold a
// reservation until commit (settled with the real usage), cancel (released)
// or expiry (settled at the estimate).
//
// Pure: no IO, no clock. Every call takes `now_us` (the daemon's clock,
// microseconds, wall-anchored). Loop thread only. State changes are recorded
// as dirty marks that the daemon drains into storage batches (Drain).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "budget/engine_types.h"
#include "budget/lease.h"
#include "budget/lease_book.h"
#include "budget/limit_spec.h"
#include "budget/limiter.h"
#include "budget/limiter_list.h"
#include "budget/pricing.h"
#include "budget/scope_filter.h"
#include "budget/scope_key.h"
#include "budget/scope_table.h"
#include "common/records.h"
#include "common/sat_math.h"
#include "common/status.h"

namespace brake {

class Engine {
 public:
  // `lease_prefix` makes lease ids unique across restarts (a random nonce of
  // the daemon's run); `lease_ttl_us` bounds how long a lease may stay open.
  Engine(std::string lease_prefix, int64_t lease_ttl_us);
  ~Engine();

  // Policies. The scope string is validated by the caller.
  void SetPolicy(const std::string& scope, Policy policy);
  // False when the scope had no policy.
  bool DeletePolicy(const std::string& scope);
  const Policy* GetPolicy(const std::string& scope) const;
  const std::map<std::string, Policy>& policies() const { return policies_; }

  void SetPrice(const std::string& model, Price price);
  const Price* GetPrice(std::string_view model) const;
  // The limit `name` that applies to the concrete `scope` (its own policy or
  // its kind's default); nullptr when none.
  const LimitSpec* FindLimit(const std::string& scope,
                             const std::string& name) const;
  // Counts settlements (commit, cancel, expiry): capacity may have appeared
  // since the count changed.
  uint64_t settlements() const { return settlements_; }
  // Counts state changes of any kind (grants, settlements, policies,
  // prices, resets): a reply whose request moved it must be durable.
  uint64_t mutations() const { return mutations_; }
  void set_lease_ttl_us(int64_t ttl_us) { lease_ttl_us_ = ttl_us; }
  // Open leases at most: an acquire that would open one more is refused
  // kUnavailable (a denial or a dry run is still answered). Counted in
  // lease_cap_refusals().
  void set_max_open_leases(int64_t n) { max_open_leases_ = n; }
  uint64_t lease_cap_refusals() const { return lease_cap_refusals_; }

  // Checks every applicable limit and charges all of them, or none. Errors:
  // kForbidden (the task belongs to another user, or the parent does),
  // kBadRequest (an unknown model, a bad parent). A refusal is not an error;
  // its Denial's views are valid until the engine next changes. `out` is
  // reset first; reusing one keeps its strings' capacity.
  Status Acquire(const AcquireRequest& request, int64_t now_us,
                 AcquireOutcome* out);
  Result<AcquireOutcome> Acquire(const AcquireRequest& request,
                                 int64_t now_us) {
    AcquireOutcome out;
    if (Status s = Acquire(request, now_us, &out); !s.ok()) return s;
    return out;
  }
  // A hint, for a caller holding several requests (the daemon, the lines
  // of one read): starts loading what deciding an acquire of `task` will
  // read (the task's subject, its limiters, its user's subject) without
  // waiting for memory. Call it for the request kPrefetchAhead places
  // ahead of the one about to be decided: each call moves the requests
  // announced before it one stage on (the table slot, the subject, its
  // limiter array, its limiters; each stage reads only what the one before
  // brought in), and the decision of a request announced exactly
  // kPrefetchAhead calls earlier takes its subject from the pipeline. Any
  // name may be announced (one not in memory, "" for a request that names
  // no task); nothing changes but what is in cache, so a caller whose
  // requests ran out announces "" to move the last ones on. Worth it only
  // when the subjects outgrow the caches (prefetch_pays()). Sixteen calls
  // cover a miss behind nested page tables (docs/DESIGN.md).
  static constexpr int kPrefetchAhead = 16;
  void Prefetch(std::string_view task);
  bool prefetch_pays() const { return subjects_.size() >= kPrefetchFrom; }
  // Acquires that took their task's subject from the pipeline.
  uint64_t prefetched_decisions() const { return prefetched_decisions_; }

  // Settles a lease with its real usage. A lease settled before answers its
  // first result with duplicate set. Error: kUnknownLease.
  Result<Settlement> Commit(const CommitRequest& request, int64_t now_us);
  // Releases a lease's reservation as if the call never happened. Cancelling
  // a lease already settled changes nothing (duplicate). Error: kUnknownLease.
  Result<bool> Cancel(const std::string& lease, int64_t now_us);
  // Settles every lease whose TTL has passed at its estimate; returns how
  // many, and their ids in `expired` when given.
  int ExpireLeases(int64_t now_us,
                   std::vector<std::string>* expired = nullptr);
  // Settled spend of a subject scope ("global" for everything).
  Totals SpendOf(const std::string& scope) const {
    const auto* e = subjects_.find(scope);
    return e == nullptr ? Totals{} : e->second.spend;
  }
  // The user who owns `task`; "" when the task is unknown.
  std::string TaskOwner(const std::string& task) const {
    const TaskInfo* t = FindTask(task);
    return t == nullptr ? "" : t->user;
  }
  // An open lease, or nullptr.
  const Lease* FindLease(const std::string& id) const;
  // The concrete subject scopes an acquire is checked against, most
  // general first: global, user, task, its ancestors, resource.
  Status ScopesFor(const AcquireRequest& request,
                   std::vector<std::string>* scopes) const {
    return SubjectScopes(request, scopes);
  }
  // The scopes whose limits `status` of `scope` lists.
  std::vector<std::string> StatusScopes(const std::string& scope) const;
  // The earliest lease expiry, or kNever.
  int64_t NextExpiryUs() const;

  // Every limit that applies to `scope` ("user:U", "task:T", "resource:R" or
  // "global"), with usage, spend and reservations.
  StatusReport Report(const std::string& scope, int64_t now_us);
  // Clears the counters and spend of `scope` (a `*` scope: of every subject
  // of that kind).
  void Reset(const std::string& scope, int64_t now_us);

  // --- Residency: idle subjects leave memory and come back on demand ---
  // A subject (a concrete "user:", "task:" or "resource:" scope) is in
  // memory from its first use until EvictIdle drops it; stored subjects come
  // back through RestoreSubjects. Acquire refuses (kUnavailable) to decide
  // on a subject that may be stored but is not in memory: the daemon asks
  // MissingFor first and loads what it names.
  //
  // The scopes `request` needs loaded first (its user, task, resource, and
  // the first ancestor not in memory); empty when it can be decided now.
  std::vector<std::string> MissingFor(const AcquireRequest& request) const;
  // The same for `status` or `reset` of one concrete scope.
  std::vector<std::string> MissingForScope(const std::string& scope) const;
  // Whether deciding `request` would add subjects to memory (its user, task
  // or resource is not there yet): refused when memory is full.
  bool AddsSubjects(const AcquireRequest& request) const;
  // Installs loaded rows. Scopes already in memory keep their (newer) state;
  // every scope of `rows.scopes` is in memory afterwards.
  void RestoreSubjects(const SubjectRows& rows, int64_t now_us);
  // Marks a scope as possibly stored (the daemon's startup scan); `expected`
  // sizes the filter first.
  void ExpectStored(size_t expected) { stored_ = ScopeFilter(expected); }
  void NoteStored(std::string_view scope) { stored_.Add(scope); }
  // Examines up to `max_scan` slots of the subject table (at most half of
  // them hold a subject), continuing where the last call stopped, and
  // evicts those unused since before now_us - idle_us that hold no open
  // lease and have no change waiting for Drain. Their stored
  // rows are then current once every drained batch has committed: the
  // caller evicts only when storage has caught up. Returns how many.
  size_t EvictIdle(int64_t now_us, int64_t idle_us, size_t max_scan);
  size_t resident_subjects() const { return subjects_.size(); }
  bool IsResident(const std::string& scope) const {
    return subjects_.count(scope) != 0;
  }
  uint64_t evictions() const { return evictions_; }
  // Counts resets of a whole kind ("user:*"): subject rows read before one
  // may predate it and must be read again.
  uint64_t kind_resets() const { return kind_resets_; }
  bool kind_reset_pending() const { return !dirty_kind_resets_.empty(); }

  // Restoring persisted state, after the policies are set. The subjects of
  // an open lease must be in memory (RestoreSubjects) before it.
  void RestoreLease(Lease lease, int64_t now_us);

  // Moves every change since the last Drain into `batch`; leases are
  // serialized with `encode`. Returns false when there was nothing.
  bool Drain(Batch* batch, const LeaseEncoder& encode);

  // True when there are changes that Drain has not yet taken.
  bool dirty() const {
    return !dirty_policies_.empty() || !dirty_prices_.empty() ||
           !dirty_tasks_.empty() || !dirty_limiters_.empty() ||
           !dirty_spend_.empty() || leases_.dirty() ||
           !dirty_kind_resets_.empty() || !ledger_.empty();
  }
  size_t open_leases() const { return leases_.open(); }
  size_t task_count() const { return task_count_; }

 private:
  struct Subject;
  struct Resident {  // a subject in memory and its scope (the map's key)
    const std::string* scope = nullptr;
    Subject* subject = nullptr;
  };
  // A subject looked up once and kept while no subject leaves memory.
  struct CachedSubject {
    uint64_t epoch = 0;  // subject_epoch_ when looked up (0: never)
    ScopeTable<Subject>::Entry* entry = nullptr;
  };
  // A task's record: kept with its subject ("task:" + its name) from its
  // first grant (or load) until the subject leaves memory.
  struct TaskInfo {
    std::string parent;  // first: a decision reads whether it is empty
    std::string user;
    int64_t created_ms = 0;
  };
  // A subject in memory: one map entry holds it all. An entry starts a
  // cache line (LinePool), and what a denial or a dry run reads of it fits
  // in its first two: the scope, the fields up to the flags, and the length
  // of its task's parent (Prefetch).
  struct Subject {
    int64_t used_us = 0;  // last acquire, settlement, reset or load
    int32_t leases = 0;   // open leases naming it: not evictable
    // Its policy, and its limiters in that policy's order, as resolved when
    // the engine's limits_gen_ was limits_gen (0: never).
    uint32_t limits_gen = 0;
    const Policy* policy = nullptr;
    // Its limiters, one per limit name: first those of `policy` in its
    // order (once resolved), then any whose limit the policy no longer
    // has (kept while in memory: a limit set again keeps its counters).
    // They leave memory with the subject.
    LimiterList limiters;
    // A task's: the subject of its user (kept here, not in `task`, so that
    // a decision finds it, and the user's name in its key, in the lines it
    // reads anyway).
    CachedSubject owner;
    // Whether `task` holds the task's record: the hot path reads it with
    // the subject, so it is not a map of its own. False for other
    // subjects, and for a task never granted.
    bool has_task = false;
    // Listed in dirty_spend_ / dirty_limiters_ / dirty_tasks_ (then not
    // evictable): its spend / some limiter / its task record changed since
    // the last Drain.
    bool spend_unsaved = false;
    bool limiters_unsaved = false;
    bool task_unsaved = false;
    TaskInfo task;
    Totals spend;         // settled
    Totals reserved;      // held by open leases

    const TaskInfo* record() const { return has_task ? &task : nullptr; }
  };
  struct Applied {  // one limit that applies to a request
    const std::string* scope;  // a map key, or into CollectLimits' scopes
    const LimitSpec* spec;
    Limiter* limiter;  // nullptr when not yet instantiated
  };

  // The policy that governs a concrete subject scope: its own, else the
  // default of its kind.
  const Policy* PolicyFor(const std::string& scope) const;
  // The concrete subject scopes of a request, most general first. The walk
  // up the task tree stops at the first task not in memory; its name goes
  // to `unknown_parent` when given.
  Status SubjectScopes(const AcquireRequest& request,
                       std::vector<std::string>* scopes,
                       std::string* unknown_parent = nullptr) const;
  bool NeedsLoad(const std::string& scope) const;
  // Whether all that `req` names is in memory, as the record of its task
  // (`task`, its subject, or nullptr) alone shows: the task's owner cached
  // since the last eviction, no parent, no resource. False says nothing.
  bool AllResident(const AcquireRequest& req, const Subject* task) const;
  // Whether the task `task` (with its record) is `user`'s: read from its
  // owner's key while that is cached (a line the decision reads anyway),
  // else from its record.
  bool OwnedBy(const Subject& task, std::string_view user) const {
    if (task.owner.epoch == subject_epoch_) {
      const std::string& key = task.owner.entry->first;  // "user:" + user
      constexpr size_t kPrefix = std::string_view("user:").size();
      return key.size() == kPrefix + user.size() &&
             scope_key_internal::SameBytes(key.data() + kPrefix, user.data(),
                                           user.size());
    }
    return scope_key_internal::Same(task.task.user, user);
  }
  // Marks the subject `prefix` + `name` used now, adding it when new
  // (without building the scope unless it is new).
  Resident Use(std::string_view prefix, std::string_view name,
               int64_t now_us);
  // The same, as its entry.
  ScopeTable<Subject>::Entry* UseEntry(std::string_view prefix,
                                       std::string_view name, int64_t now_us);
  static Resident ResidentOf(ScopeTable<Subject>::Entry* e) {
    return Resident{&e->first, &e->second};
  }
  // The subject whose key `scope` is (a Resident's scope, as a lease's
  // reserved scopes are: each stays in memory while the lease is open),
  // without a lookup.
  static Resident ResidentOfKey(const std::string* scope) {
    return ResidentOf(ScopeTable<Subject>::EntryOfKey(scope));
  }
  // The same through `cache`, looking up only when a subject has left
  // memory since it was filled.
  Resident Use(CachedSubject& cache, std::string_view prefix,
               std::string_view name, int64_t now_us);
  // Acquire's subjects, most general first (as SubjectScopes), marked used
  // now; `task` is the request's task when it is known (TaskSubject).
  Status UseSubjects(const AcquireRequest& request, Resident task,
                     int64_t now_us, std::vector<Resident>* out);
  // The task `name`'s subject when it is in memory with its record; both
  // pointers null otherwise.
  Resident TaskSubject(std::string_view name);
  // The task `name`'s record, or nullptr (as TaskSubject, read-only).
  const TaskInfo* FindTask(std::string_view name) const;
  bool Evictable(const std::string& scope, const Subject& s,
                 int64_t cutoff_us) const;
  void Evict(const std::string& scope);
  // Lists a subject whose limiters changed (all of them are saved). Inline:
  // a grant and a settlement call it for each of their subjects.
  void MarkLimitersUnsaved(Resident r) {
    if (r.subject->limiters_unsaved) return;
    r.subject->limiters_unsaved = true;
    dirty_limiters_.push_back(r);
  }
  // Brings `s.policy` and `s.limiters` up to date (instantiating them).
  void Resolve(const std::string& scope, Subject& s, int64_t now_us);
  void MarkSpendUnsaved(Resident r) {
    if (r.subject->spend_unsaved) return;
    r.subject->spend_unsaved = true;
    dirty_spend_.push_back(r);
  }
  // Lists a task subject whose record is new.
  void MarkTaskUnsaved(Resident r);
  // Gives `s` (a task's subject) the task record `record`.
  void SetTaskRecord(Subject& s, TaskInfo record);
  void RestoreTask(const TaskRow& row, int64_t now_us);
  void RestoreLimiter(const LimiterRow& row, int64_t now_us);
  void RestoreSpend(const SpendRow& row);
  // The limiter of `policy`'s limit `i` for the subject `s` (of `scope`):
  // its own, reconfigured or replaced when the limit changed, or when
  // `create`, a new one; nullptr when none and not `create`.
  Limiter* Instance(Subject& s, const std::string& scope,
                    const Policy& policy, size_t i, int64_t now_us,
                    bool create);
  // Where the subject's limiter `name` is held, or nullptr.
  static std::unique_ptr<Limiter>* LimiterSlot(Subject& s,
                                               std::string_view name);
  // The limiter `name` of the subject `scope` in memory, or nullptr.
  Limiter* FindLimiter(const std::string& scope, std::string_view name);
  // Caches the `KIND:*` policies that PolicyFor falls back to.
  void FindDefaults();
  // Every limit of `scopes`, with the limiter of each that exists.
  void CollectLimits(const std::vector<std::string>& scopes, int64_t now_us,
                     std::vector<Applied>* out);
  void SettleLease(Lease& lease, const Totals& actual, int64_t now_us);
  static void AddTotals(Totals& dst, const Totals& t, int sign) {
    dst.requests = sat::SatAdd(dst.requests, sign * t.requests);
    dst.tokens = sat::SatAdd(dst.tokens, sign * t.tokens);
    dst.usd_nano = sat::SatAdd(dst.usd_nano, sign * t.usd_nano);
  }
  void ForgetDuplicatesBefore(int64_t now_us);

  int64_t lease_ttl_us_;
  int64_t max_open_leases_ = INT64_MAX;
  uint64_t lease_cap_refusals_ = 0;
  uint64_t settlements_ = 0;
  uint64_t mutations_ = 0;

  // Moves on whenever a limiter pointer cached on a subject may have gone
  // stale: a policy set or deleted, a limiter replaced.
  uint32_t limits_gen_ = 1;  // never 0, the value of "never resolved"
  void BumpLimitsGen();
  // Acquire's working vectors, kept for their capacity.
  struct Ancestor {
    const std::string* name;
    Resident task;  // its subject, with its record; null: not in memory
  };
  std::vector<Ancestor> scratch_ancestors_;
  // Prefetch's pipeline: the tasks of the requests announced last, newest
  // at prefetch_next_ - 1, each with its entry once its slot was read
  // (valid while subject_epoch_ is still `epoch`). Twice kPrefetchAhead
  // long, so that the request being decided is still there.
  static constexpr size_t kPrefetchFrom = 1 << 15;
  static constexpr uint32_t kPrefetchRing = 2 * kPrefetchAhead;
  struct Prefetching {
    uint64_t hash = 0;
    ScopeTable<Subject>::Entry* entry = nullptr;
    uint64_t epoch = 0;
  };
  Prefetching prefetch_ring_[kPrefetchRing] = {};
  uint32_t prefetch_next_ = 0;
  uint64_t prefetched_decisions_ = 0;
  // The entry Prefetch found for `p`, if no subject has left memory since
  // (else it may be gone); nullptr when none.
  ScopeTable<Subject>::Entry* Live(const Prefetching& p) const {
    return p.epoch == subject_epoch_ ? p.entry : nullptr;
  }
  // TaskSubject(name), taking the entry Prefetch found when `name` is the
  // task of the request announced kPrefetchAhead calls ago.
  Resident AnnouncedTask(std::string_view name);
  std::vector<Resident> scratch_subjects_;

  std::map<std::string, Policy> policies_;
  const Policy* default_user_ = nullptr;  // policies_["user:*"], stable
  const Policy* default_task_ = nullptr;
  const Policy* default_resource_ = nullptr;
  // Found by a view too: a commit names its lease's model, a view into
  // the lease, and a model name past 15 bytes (most) made a string, a heap
  // block, to look it up.
  struct TextHash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const noexcept {
      return std::hash<std::string_view>{}(s);
    }
  };
  std::unordered_map<std::string, Price, TextHash, std::equal_to<>> prices_;
  LeaseBook leases_;  // open, and settled ones for duplicate answers

  ScopeTable<Subject> subjects_;
  // Moves on whenever a subject leaves memory: CachedSubject pointers
  // filled before are stale.
  uint64_t subject_epoch_ = 1;
  CachedSubject global_;
  ScopeFilter stored_;
  size_t evict_cursor_ = 0;
  uint64_t evictions_ = 0;
  uint64_t kind_resets_ = 0;
  size_t task_count_ = 0;  // subjects with a task record

  // Dirty marks, drained into storage batches.
  std::set<std::string> dirty_policies_;
  std::set<std::string> dirty_prices_;
  std::vector<Resident> dirty_tasks_;  // subjects whose task_unsaved
  // Subjects with changes to drain, each listed once (its spend_unsaved,
  // limiters_unsaved); a listed subject is not evicted, so the pointers
  // stay valid until Drain.
  std::vector<Resident> dirty_limiters_;
  std::vector<Resident> dirty_spend_;
  std::vector<std::string> dirty_kind_resets_;  // "user:*": stored rows go
  LedgerRows ledger_;
};

}  // namespace brake
