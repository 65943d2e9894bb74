// Breaker: the circuit breaker of one scope (a task, user, resource, the
// global scope, or a `*` default made concrete).
//
// A passive state machine: closed -> open when a rule trips (loop, slow
// calls, errors, spend velocity), a downstream throttles, or an admin trips
// it; open -> half-open once the open time has passed (noticed by the next
// call that passes `now_us`); half-open lets exactly `half_open_probes`
// acquires through as probes and denies the rest; all probes ok -> closed
// with every rule window cleared; any slow or failed probe (or any rule,
// throttle or trip) -> open again for open_ms * open_backoff^n, n the
// re-opens since the breaker was last closed, at most max_open_ms. Rules are
// evaluated only while closed or half-open; outcomes are counted only while
// closed (a non-probe outcome arriving while open or half-open belongs to a
// call admitted before the trip and says nothing new).
//
// Probe slots: Check() never takes one (another limit may still deny); the
// engine calls OnAdmitted(probe) once the whole acquire is granted. A slot is
// given back by the probe's outcome or by ReleaseProbe() (cancel, lease
// expiry, disconnect), so a breaker never sticks half-open (Sentinel #1638).
// A released probe is not a success: it frees its slot and the next acquire
// probes in its place. Leaving half-open forgets the probes in flight; their
// late outcomes are then ignored (or counted as ordinary outcomes if the
// breaker is closed by then).
//
// Owns no clock, timer or IO: every call takes `now_us` (the daemon's clock,
// anchored to wall time so that persisted times stay meaningful). Every
// state change is queued as a Transition for the daemon to log. Loop thread
// only.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "breaker/breaker_spec.h"
#include "breaker/loop_detector.h"
#include "breaker/rolling_counter.h"

namespace brake::breaker {

inline constexpr int64_t kNever = -1;  // a retry time nobody can predict

// The answer to "may this acquire pass the breaker?".
struct Admission {
  bool admit = true;
  // Admitted as one of the half-open probes: pass to OnAdmitted and, with
  // the lease, to OnOutcome or ReleaseProbe.
  bool probe = false;
  Cause cause = Cause::kNone;  // why denied (the open cause); kNone if admitted
  // When denied: until half-open while open; kNever in half-open with every
  // probe slot taken (a slot frees when a probe ends). 0 when admitted.
  int64_t retry_after_us = 0;
};

// What status shows.
struct Snapshot {
  BreakerState state = BreakerState::kClosed;  // half-open once open time is up
  Cause cause = Cause::kNone;                  // kNone when closed
  int64_t retry_in_us = 0;        // until half-open; 0 when not open
  int64_t consecutive_opens = 0;  // opens since last closed
  int64_t open_until_us = 0;      // the end of the last open time (0: never)
  int64_t probes_in_flight = 0;
  int64_t probes_ok = 0;
};

// One state change, for the log. An open breaker that is extended or
// re-caused (throttled, manual trip) reports open -> open.
struct Transition {
  BreakerState from = BreakerState::kClosed;
  BreakerState to = BreakerState::kClosed;
  Cause cause = Cause::kNone;  // the cause of the open state (or kNone)
  // Why, with the figures, e.g. "6 of 10 calls slower than 2000 ms within
  // 10000 ms (ratio > 0.5); open for 30000 ms".
  std::string figures;
  int64_t at_us = 0;
};

class Breaker {
 public:
  // A closed breaker with empty windows.
  explicit Breaker(BreakerSpec spec);

  // Admits while closed; denies while open (retry_after until half-open);
  // in half-open admits as a probe while fewer than half_open_probes probes
  // are in flight or done ok, and denies otherwise. Moves open -> half-open
  // when due, but takes no slot.
  Admission Check(int64_t now_us);
  // The acquire that Check admitted was granted; `probe` as Check said. A
  // probe takes its slot (if the breaker is still half-open).
  void OnAdmitted(bool probe, int64_t now_us);

  // Loop rule: records a granted acquire's fingerprint hash. Returns true
  // and trips (cause loop) when this makes `loop.repeats` sightings of the
  // hash within `loop.window_ms` (a sighting at t counts while now < t +
  // window) and the breaker is closed or half-open. So with repeats 5 the
  // fifth identical call passes and trips, and the sixth is refused. False
  // without a loop rule.
  bool OnFingerprint(uint64_t fingerprint_hash, int64_t now_us);

  // A call ended. `latency_ms` -1 when unknown (not counted by the slow
  // rule). While closed: counted in the stat windows (slow rule: calls with a
  // known latency, slow when latency > max_rt_ms; errors rule: all calls,
  // failed when error or timeout; throttled is neither), then each rule
  // trips once its window holds at least min_calls and hits/calls is
  // strictly greater than its ratio (compared exactly to 1e-6 of a unit);
  // the slow rule is looked at first.
  // A probe (`probe` true, breaker half-open) frees its slot: ok and not slow
  // counts towards closing; error, timeout, throttled or slow re-opens with
  // backoff, the cause then being errors, throttled or slow_calls.
  void OnOutcome(int64_t latency_ms, Outcome outcome, bool probe,
                 int64_t now_us);
  // The downstream said wait: open (cause throttled) until now +
  // retry_after_ms, or for open_ms when retry_after_ms <= 0. Never shortens
  // a longer open time.
  void OnThrottled(int64_t retry_after_ms, int64_t now_us);
  // Spend rule: `tokens` (> 0) settled at `now_us`. Trips (cause
  // spend_velocity) when the window then holds more than spend_velocity.tokens.
  // Counted in every state, so spend just before a trip still counts after.
  void OnSpend(int64_t tokens, int64_t now_us);
  // A probe's lease ended without an outcome: frees its slot (no success).
  // Ignored when no probe is in flight.
  void ReleaseProbe(int64_t now_us);

  // Admin trip: open with cause manual for `open_ms` from now exactly (the
  // spec's open_ms when <= 0), whatever the state.
  void Trip(int64_t open_ms, int64_t now_us);
  // Admin reset: closed, windows cleared, backoff forgotten.
  void Reset(int64_t now_us);
  // Opened elsewhere (another daemon of a cluster): open with `cause`
  // until `until_us`, never shortening a longer open time.
  void OpenUntil(Cause cause, int64_t until_us, std::string figures,
                 int64_t now_us);

  Snapshot View(int64_t now_us) const;
  // True when this breaker decides from now on exactly as a new one of its
  // spec would: closed, no backoff or probe pending, no transition to take,
  // and nothing counted in any rule window at now_us or later. Such a
  // breaker may be dropped and made anew on its next use.
  bool IsFresh(int64_t now_us) const;
  // The state as of the last call that took a `now_us` (View is current).
  BreakerState state() const { return state_; }
  // The transitions since the last call, oldest first (at most
  // kMaxPendingTransitions are kept; older ones are dropped).
  std::vector<Transition> TakeTransitions();
  static constexpr size_t kMaxPendingTransitions = 64;

  // The state as integers, for storage (layout in breaker.cc, versioned).
  std::vector<int64_t> SaveState() const;
  // Takes what SaveState gave. Probes in flight are restored as released:
  // their leases' fate is unknown, so their slots are free (their late
  // outcomes are ignored). Rule windows are re-bucketed to the current spec.
  // False, changing nothing, when malformed.
  bool RestoreState(const std::vector<int64_t>& state);

  const BreakerSpec& spec() const { return spec_; }
  // New rules and timings; state, open time and windows are kept (a window
  // whose rule is removed is cleared; a half-open breaker whose probes done
  // ok already reach the new half_open_probes closes at the next call).
  void Reconfigure(BreakerSpec spec);

 private:
  void Advance(int64_t now_us);
  // Opens for `duration_us` from now with `cause` (closed/half-open), or
  // extends an open breaker when that ends later.
  void Open(Cause cause, int64_t duration_us, std::string figures,
            int64_t now_us);
  // The open time of the next open from the current state, with backoff.
  int64_t NextOpenUs() const;
  void Close(std::string figures, int64_t now_us);
  void Emit(BreakerState from, std::string figures, int64_t now_us);
  void ClearWindows();
  bool RulesActive() const { return state_ != BreakerState::kOpen; }
  int64_t ProbeSlots() const;

  BreakerSpec spec_;
  BreakerState state_ = BreakerState::kClosed;
  Cause cause_ = Cause::kNone;
  int64_t open_until_us_ = 0;
  int64_t consecutive_opens_ = 0;
  int64_t probes_in_flight_ = 0;
  int64_t probes_ok_ = 0;
  RollingCounter slow_;
  RollingCounter errors_;
  RollingCounter spend_;
  LoopDetector loop_;
  std::vector<Transition> transitions_;
};

}  // namespace brake::breaker
