// Limiter: the common face of every limiting algorithm.
//
// A limiter is a passive state machine for one limit of one concrete scope
// (say, the "rps" limit of user:alice). It owns no timers, threads or IO and
// never reads a clock: every call takes `now_us`, microseconds on the daemon's
// clock (monotonic within a run, anchored to wall time so that it can be
// persisted and compared across restarts). Loop thread only.
//
// The engine asks Check() of every applicable limiter, and only when all admit
// calls Charge() on each, so a denial charges nothing anywhere. Every Charge
// is a lease's reservation. A lease that settles for more or less than it
// reserved calls Settle(); a lease that ends (commit, cancel, expiry) calls
// Release(); a lease restored at startup calls Hold() (concurrency counts
// open leases, a quota what they hold apart from what is spent).
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "budget/limit_spec.h"
#include "common/line_pool.h"

namespace brake {

inline constexpr int64_t kNever = -1;  // a retry time that never comes

enum class Verdict {
  kAdmit,
  kDeny,      // not now; retry_after_us says when (or kNever)
  kTooLarge,  // can never be granted: larger than the limit's capacity
  // Not now, only because open leases hold room: it would fit were they
  // settled for nothing. retry_after_us is a hint (when one is expected to
  // settle); Usage().held says what they hold.
  kHeld,
};

struct Decision {
  Verdict verdict = Verdict::kAdmit;
  // For kDeny: the earliest delay after which the same Check would admit if
  // nothing else happened; kNever if it never would. 0 for kAdmit.
  int64_t retry_after_us = 0;
};  // 16 bytes: returned in two registers on every check

// What status reports for a limit, in resource units.
struct LimitUsage {
  int64_t limit = 0;
  int64_t used = 0;          // settled (for a quota: spent, not held)
  int64_t held = 0;          // reserved by open leases (quotas only)
  int64_t remaining = 0;     // limit - used - held; may be negative
  int64_t resets_in_us = kNever;  // until fully available again; kNever: never
};

// From LinePool: a limiter starts a cache line (a token bucket is one line).
class Limiter : public LinePooled {
 public:
  explicit Limiter(SpecRef spec) : spec_(std::move(spec.ptr)) {}
  virtual ~Limiter() = default;
  Limiter(const Limiter&) = delete;
  Limiter& operator=(const Limiter&) = delete;

  // Would `amount` be admitted at `now_us`? Does not charge. May drop state
  // that has expired by `now_us`. `amount` >= 0.
  virtual Decision Check(int64_t amount, int64_t now_us) = 0;
  // Charges `amount` at `now_us`. Called after Check admitted (or for a
  // shadow limit, unconditionally); never fails.
  virtual void Charge(int64_t amount, int64_t now_us) = 0;
  // Corrects an earlier Charge made at `charged_at_us` by `delta` units:
  // positive charges extra (may drive the limit below zero), negative
  // refunds (only what still counts: a refund to an expired window or period
  // is dropped).
  virtual void Settle(int64_t delta, int64_t charged_at_us, int64_t now_us) = 0;
  // A lease that was charged `amount` at `charged_at_us` has ended (after
  // its Settle, if any). Concurrency and quotas act on it.
  virtual void Release(int64_t /*amount*/, int64_t /*charged_at_us*/,
                       int64_t /*now_us*/) {}
  // A lease restored at startup, charged `amount` at `charged_at_us`, is
  // open again: counted as Charge counted it, without charging again
  // (its charge is in the stored state).
  virtual void Hold(int64_t /*amount*/, int64_t /*charged_at_us*/,
                    int64_t /*now_us*/) {}
  virtual LimitUsage Usage(int64_t now_us) = 0;
  // Usage(now_us).remaining, which a grant reports; cheaper where it can be.
  virtual int64_t Remaining(int64_t now_us) { return Usage(now_us).remaining; }
  // Forgets all counters: as if new at `now_us`.
  virtual void Reset(int64_t now_us) = 0;

  // The state as integers, for storage; Restore takes what Save gave (of a
  // limiter of the same algorithm) and returns false, changing nothing, when
  // it is malformed. AppendState appends it to `out` (a batch's states,
  // LimiterPuts, back to back: no vector per save).
  virtual void AppendState(std::vector<int64_t>* out) const = 0;
  std::vector<int64_t> SaveState() const {
    std::vector<int64_t> state;
    AppendState(&state);
    return state;
  }
  virtual bool RestoreState(const std::vector<int64_t>& state) = 0;

  const LimitSpec& spec() const { return *spec_; }
  // Whether `spec` is the very one this limiter reads (not merely equal).
  bool Shares(const LimitSpec* spec) const { return spec_.get() == spec; }
  // Takes new parameters (same algorithm), keeping the counters: raising a
  // daily cap does not forgive what was spent today.
  void Reconfigure(SpecRef spec) {
    spec_ = std::move(spec.ptr);
    SpecChanged();
  }

 protected:
  // Called after Reconfigure, for figures derived from the spec.
  virtual void SpecChanged() {}

  std::shared_ptr<const LimitSpec> spec_;  // never null
};

// A new limiter for `spec`, in its initial state at `now_us` (a token bucket
// starts full, a warm-up limiter starts cold).
std::unique_ptr<Limiter> MakeLimiter(SpecRef spec, int64_t now_us);

}  // namespace brake
