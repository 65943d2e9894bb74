// Decider: one decision over limits and circuit breakers together.
//
// The Engine (budget/) knows limits and leases; breaker::Breaker knows one
// scope's circuit. The Decider owns a breaker per scope that has a BREAKER
// policy (its own or its kind's default) or was tripped by hand, and puts
// both together so that every path (an acquire answered at once, a waiter
// served later, a commit, a cancel, an expiry, a disconnect) feeds them the
// same way:
//   acquire: every applicable breaker is asked first (an open one refuses
//            with breaker_open and its cause); then the limits; only a grant
//            takes half-open probe slots and records the fingerprint.
//   commit:  outcome, latency and spend go to every breaker of the lease's
//            scopes; `throttled` holds the resource open for retry_after_ms.
//   cancel, expiry, disconnect: probe slots held by the lease are released.
// Pure: no IO, no clock (time is `now_us`). Loop thread only.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "breaker/breaker.h"
#include "budget/engine.h"
#include "common/records.h"

namespace brake {

struct BreakerView {
  std::string scope;
  breaker::Snapshot snapshot;
};

// Cluster mode: a `resource:` or `global` breaker that opened (or was
// extended) here, or was reset (cause kNone), for the other daemons.
struct SharedBreaker {
  std::string scope;
  breaker::Cause cause = breaker::Cause::kNone;
  int64_t open_until_us = 0;  // the daemon clock (wall-anchored)
};

class Decider {
 public:
  explicit Decider(Engine* engine);

  Engine& engine() { return *engine_; }

  // Policies go through here so breakers follow them. `policy.breaker_json`
  // must have been produced by ParsePolicy (it is trusted).
  void SetPolicy(const std::string& scope, Policy policy);
  // The same with the breaker already parsed from `policy.breaker_json`
  // (nullopt when it is empty), for callers that set one policy many times.
  void SetPolicy(const std::string& scope, Policy policy,
                 const std::optional<breaker::BreakerSpec>& spec);
  bool DeletePolicy(const std::string& scope);

  // As Engine::Acquire, with breakers in front. `conn` is the connection
  // asking (its probe slots are released if it goes away). `out` is reset
  // first; reusing one keeps its strings' capacity.
  Status Acquire(const AcquireRequest& request, uint64_t conn, int64_t now_us,
                 AcquireOutcome* out);
  Result<AcquireOutcome> Acquire(const AcquireRequest& request, uint64_t conn,
                                 int64_t now_us) {
    AcquireOutcome out;
    if (Status s = Acquire(request, conn, now_us, &out); !s.ok()) return s;
    return out;
  }
  // As Engine::Commit, then feeds the breakers (not for duplicates).
  Result<Settlement> Commit(const CommitRequest& request,
                            int64_t retry_after_ms, int64_t now_us);
  Result<bool> Cancel(const std::string& lease, int64_t now_us);
  int ExpireLeases(int64_t now_us);
  // Frees the probe slots of leases granted to a closed connection.
  void DropConnection(uint64_t conn, int64_t now_us);

  // Admin: opens `scope`'s breaker for open_ms (<= 0: its policy's open_ms)
  // with cause manual, creating one if the scope has none; Reset closes it.
  void Trip(const std::string& scope, int64_t open_ms, int64_t now_us);
  void Reset(const std::string& scope, int64_t now_us);
  // Breakers of these scopes that exist, in order.
  std::vector<BreakerView> Views(const std::vector<std::string>& scopes,
                                 int64_t now_us);
  // Every breaker that is not closed.
  std::vector<BreakerView> OpenViews(int64_t now_us);

  // Cluster mode: breakers of resource: and global scopes that opened or
  // were reset here since the last call (not those applied from others).
  std::vector<SharedBreaker> TakeSharedChanges();
  // Applies what another daemon reported: opens `b.scope`'s breaker until
  // b.open_until_us (never shortening a longer open time), or resets it.
  void ApplyShared(const SharedBreaker& b, int64_t now_us);
  void set_share_breakers(bool on) { share_breakers_ = on; }

  // Restores a persisted breaker (after the policies are set).
  void RestoreBreaker(const BreakerRow& row);
  // Moves changed breaker states into `batch`.
  bool Drain(Batch* batch);
  bool dirty() const { return !dirty_.empty() || !dropped_.empty(); }
  // Drops the breakers of subjects no longer in memory (evicted) that
  // decide as a new one would (Breaker::IsFresh): the next use of their
  // scope makes a new one from its policy. Their stored rows go with the
  // next Drain. Looks at up to `max_scan` hash buckets per
  // call, resuming where the last stopped. Returns how many.
  size_t DropFresh(int64_t now_us, size_t max_scan);
  size_t breaker_count() const { return breakers_.size(); }
  uint64_t mutations() const { return mutations_; }
  // "breaker task:t1 closed -> open (loop: ...)" lines to log.
  std::vector<std::string> TakeLog();
  // Breakers that opened (from closed or half-open) with `cause` since
  // start; extending an open breaker is not a new trip.
  int64_t trips(breaker::Cause cause) const {
    return trips_[static_cast<size_t>(cause)];
  }

 private:
  struct Probe {
    std::vector<std::string> scopes;  // breakers where the lease holds a slot
    uint64_t conn = 0;
  };

  // The breaker of `scope`: created when its policy (own or default) has a
  // BREAKER; an existing one follows spec changes. nullptr when none.
  breaker::Breaker* For(const std::string& scope, bool create_default);
  std::optional<breaker::BreakerSpec> SpecFor(const std::string& scope) const;
  // Logs `b`'s transitions; marks it for saving when `changed` or when it
  // moved.
  void Touch(const std::string& scope, breaker::Breaker* b, bool changed);
  void ReleaseProbes(const std::string& lease, int64_t now_us);

  Engine* engine_;
  std::map<std::string, breaker::BreakerSpec> specs_;  // policy scope -> spec
  std::unordered_map<std::string, std::unique_ptr<breaker::Breaker>> breakers_;
  std::unordered_map<std::string, Probe> probes_;  // lease -> its probe slots
  std::set<std::string> dirty_;
  std::vector<std::string> dropped_;  // rows to delete at the next Drain
  size_t drop_cursor_ = 0;
  std::vector<std::string> log_;
  std::vector<SharedBreaker> shared_changes_;
  bool share_breakers_ = false;
  bool applying_shared_ = false;
  uint64_t mutations_ = 0;
  std::array<int64_t, 7> trips_{};  // by breaker::Cause
};

}  // namespace brake
