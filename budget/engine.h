// Engine: brake's decision core. Policies, prices, subjects, leases and
// accounting.
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
// microseconds, wall-anchored). Loop thread only. Which subjects are in
// memory is the SubjectTable's business (subject_table.h); what changed,
// the DirtyLog's (dirty_log.h), which the daemon drains into storage
// batches (Drain).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "budget/dirty_log.h"
#include "budget/engine_types.h"
#include "budget/lease.h"
#include "budget/lease_book.h"
#include "budget/pricing.h"
#include "budget/subject_table.h"
#include "common/records.h"
#include "common/status.h"

namespace brake {

class Engine {
 public:
  // `lease_prefix` makes lease ids unique across restarts (a random nonce of
  // the daemon's run); `lease_ttl_us` bounds how long a lease may stay open.
  Engine(std::string lease_prefix, int64_t lease_ttl_us);
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  // --- Policies and prices (scopes are validated by the caller) ---
  void SetPolicy(const std::string& scope, Policy policy);
  bool DeletePolicy(const std::string& scope);  // false: there was none
  const Policy* GetPolicy(const std::string& scope) const;
  // The policy that applies to the concrete `scope`: its own, else its
  // kind's default; nullptr when none.
  const Policy* EffectivePolicy(const std::string& scope) const {
    return PolicyFor(scope);
  }
  const std::map<std::string, Policy>& policies() const { return policies_; }
  void SetPrice(const std::string& model, Price price);
  const Price* GetPrice(std::string_view model) const;
  // The limit `name` that applies to the concrete `scope` (its own policy or
  // its kind's default); nullptr when none.
  const LimitSpec* FindLimit(const std::string& scope,
                             const std::string& name) const;

  // --- Decisions and settlements ---
  // Checks every applicable limit and charges all of them, or none. Errors:
  // kForbidden (the task belongs to another user, or the parent does),
  // kBadRequest (an unknown model, no model under a usd limit while the
  // unnamed model "*" has no price, a bad parent), kUnavailable (a subject
  // may be stored but is not in memory: MissingFor; or max_open_leases). A
  // refusal is not an error; its Denial's views are valid until the engine
  // next changes. `out` is reset first; reusing one keeps its capacity.
  Status Acquire(const AcquireRequest& request, int64_t now_us,
                 AcquireOutcome* out);
  Result<AcquireOutcome> Acquire(const AcquireRequest& request,
                                 int64_t now_us);
  // Settles a lease with its real usage. A lease settled before answers its
  // first result with duplicate set. Errors: kUnknownLease; kBadRequest for
  // tokens of a lease granted without a model under a usd limit while "*"
  // has no price.
  Result<Settlement> Commit(const CommitRequest& request, int64_t now_us);
  // Releases a lease's reservation as if the call never happened; true when
  // it was settled already (a duplicate). Error: kUnknownLease.
  Result<bool> Cancel(const std::string& lease, int64_t now_us);
  // Settles every lease whose TTL has passed at its estimate; returns how
  // many, and their ids in `expired` when given.
  int ExpireLeases(int64_t now_us,
                   std::vector<std::string>* expired = nullptr);
  int64_t NextExpiryUs() const;  // the earliest lease expiry, or kNever
  const Lease* FindLease(const std::string& id) const;  // open, or nullptr
  size_t open_leases() const { return leases_.open(); }
  void set_lease_ttl_us(int64_t ttl_us) { lease_ttl_us_ = ttl_us; }
  // An acquire that would open more leases is refused kUnavailable (a
  // denial or a dry run is still answered), counted in lease_cap_refusals.
  void set_max_open_leases(int64_t n) { max_open_leases_ = n; }
  uint64_t lease_cap_refusals() const { return lease_cap_refusals_; }
  // Settlements (commit, cancel, expiry): capacity may have appeared since
  // the count changed.
  uint64_t settlements() const { return settlements_; }
  // State changes of any kind: a reply whose request moved it must be
  // durable before it is answered.
  uint64_t mutations() const { return mutations_; }

  // --- Reading and resetting ---
  // Every limit that applies to `scope` ("user:U", "task:T", "resource:R"
  // or "global"), with usage, spend and reservations.
  StatusReport Report(const std::string& scope, int64_t now_us);
  // The scopes whose limits `status` of `scope` lists.
  std::vector<std::string> StatusScopes(const std::string& scope) const;
  // The concrete subject scopes an acquire is checked against, most
  // general first: global, user, task, its ancestors, resource.
  Status ScopesFor(const AcquireRequest& request,
                   std::vector<std::string>* scopes) const;
  Totals SpendOf(const std::string& scope) const;  // settled; "global": all
  std::string TaskOwner(const std::string& task) const;  // "": unknown
  // Clears the counters and spend of `scope` (a `*` scope: of every subject
  // of that kind, stored ones included).
  void Reset(const std::string& scope, int64_t now_us);
  // Resets of a whole kind: subject rows read before one may predate it and
  // must be read again.
  uint64_t kind_resets() const { return kind_resets_; }
  bool kind_reset_pending() const { return dirty_.kind_reset_pending(); }

  // --- Residency (subject_table.h) ---
  // The daemon asks MissingFor (or MissingForScope) before deciding, loads
  // what it names, and installs it with RestoreSubjects; scopes already in
  // memory keep their (newer) state.
  std::vector<std::string> MissingFor(const AcquireRequest& r) const {
    return subjects_.MissingFor(r);
  }
  std::vector<std::string> MissingForScope(const std::string& scope) const {
    return subjects_.MissingForScope(scope);
  }
  bool AddsSubjects(const AcquireRequest& r) const {
    return subjects_.AddsSubjects(r);
  }
  void RestoreSubjects(const SubjectRows& rows, int64_t now_us);
  void ExpectStored(size_t expected) { subjects_.ExpectStored(expected); }
  void NoteStored(std::string_view scope) { subjects_.NoteStored(scope); }
  // Evicts idle subjects with no open lease and nothing undrained; their
  // stored rows are current once every drained batch has committed, so the
  // caller evicts only when storage has caught up.
  size_t EvictIdle(int64_t now_us, int64_t idle_us, size_t max_scan) {
    return subjects_.EvictIdle(now_us, idle_us, max_scan);
  }
  bool IsResident(const std::string& s) const { return subjects_.IsResident(s); }
  size_t resident_subjects() const { return subjects_.size(); }
  size_t task_count() const { return subjects_.task_count(); }
  uint64_t evictions() const { return subjects_.evictions(); }
  // Prefetch: see SubjectTable::Prefetch.
  static constexpr int kPrefetchAhead = SubjectTable::kPrefetchAhead;
  void Prefetch(std::string_view task) { subjects_.Prefetch(task); }
  bool prefetch_pays() const { return subjects_.prefetch_pays(); }
  uint64_t prefetched_decisions() const {
    return subjects_.prefetched_decisions();
  }

  // --- Cluster mode ---
  // Makes the limiter of the limit `spec` of `scope` (default: MakeLimiter):
  // cluster mode makes the shared ones (cluster/shared_limiter.h). Set
  // before any limiter exists.
  using LimiterMaker = std::function<std::unique_ptr<Limiter>(
      const std::string& scope, SpecRef spec, int64_t now_us)>;
  void set_limiter_maker(LimiterMaker maker) { make_limiter_ = std::move(maker); }

  // --- Persistence ---
  // A lease loaded at startup, after the policies are set and its subjects
  // restored.
  void RestoreLease(Lease lease, int64_t now_us);
  // Moves every change since the last Drain into `batch`; leases are
  // serialized with `encode`. Returns false when there was nothing.
  bool Drain(Batch* batch, const LeaseEncoder& encode);
  bool dirty() const { return !dirty_.empty() || leases_.dirty(); }

 private:
  struct Applied {  // one limit that applies to a request
    const std::string* scope;  // a table key, or into CollectLimits' scopes
    const LimitSpec* spec;
    Limiter* limiter;  // nullptr when not yet instantiated
  };

  // Acquire's steps.
  Status CheckTask(const AcquireRequest& req, Resident known) const;
  Status Estimate(const AcquireRequest& req, Totals* want) const;
  bool CheckLimits(const std::vector<Resident>& subjects, const Totals& want,
                   int64_t now_us, AcquireOutcome* out, size_t* limit_count);
  [[gnu::noinline, gnu::cold]] void Refuse(const std::string& scope,
                                           const LimitSpec& spec,
                                           Limiter* limiter, Decision decision,
                                           int64_t now_us, AcquireOutcome* out);
  Status PriceUnnamed(const AcquireRequest& req, int64_t now_us, Totals* want,
                      std::string_view* model);
  Status Grant(const AcquireRequest& req, std::string_view model,
               Resident known, const Totals& want, size_t limit_count,
               int64_t now_us, AcquireOutcome* out);

  const Policy* PolicyFor(const std::string& scope) const;
  void FindDefaults();
  void BumpLimitsGen();
  void Resolve(const std::string& scope, Subject& s, int64_t now_us);
  Limiter* Instance(Subject& s, const std::string& scope,
                    const Policy& policy, size_t i, int64_t now_us,
                    bool create);
  Limiter* FindLimiter(const std::string& scope, std::string_view name);
  void CollectLimits(const std::vector<std::string>& scopes, int64_t now_us,
                     std::vector<Applied>* out);
  std::unique_ptr<Limiter> NewLimiter(const std::string& scope,
                                      const std::shared_ptr<const LimitSpec>& spec,
                                      int64_t now_us) const;
  void SettleLease(Lease& lease, const Totals& actual, int64_t now_us);
  void ForgetDuplicatesBefore(int64_t now_us);
  void RestoreTask(const TaskRow& row, int64_t now_us);
  void RestoreLimiter(const LimiterRow& row, int64_t now_us);

  int64_t lease_ttl_us_;
  int64_t max_open_leases_ = INT64_MAX;
  uint64_t lease_cap_refusals_ = 0;
  uint64_t settlements_ = 0;
  uint64_t mutations_ = 0;
  uint64_t kind_resets_ = 0;
  // Moves on whenever a limiter pointer cached on a subject may have gone
  // stale: a policy set or deleted, a limiter replaced. Never 0, the value
  // of "never resolved".
  uint32_t limits_gen_ = 1;
  std::map<std::string, Policy> policies_;
  size_t usd_limits_ = 0;  // over all policies: 0, and no call needs a model
  const Policy* default_user_ = nullptr;  // policies_["user:*"], stable
  const Policy* default_task_ = nullptr;
  const Policy* default_resource_ = nullptr;
  PriceTable prices_;
  LeaseBook leases_;  // open, and settled ones for duplicate answers
  SubjectTable subjects_;
  DirtyLog dirty_;
  LimiterMaker make_limiter_;  // empty: MakeLimiter
  std::vector<Resident> scratch_subjects_;  // Acquire's, kept for capacity
};

}  // namespace brake
