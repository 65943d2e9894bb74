// Helpers shared by the breaker tests: clock units, specs, and acquiring as
// the engine does (Check, then OnAdmitted when every limit admitted).
#pragma once

#include <cstdint>

#include "breaker/breaker.h"

namespace brake::breaker::testing {

inline constexpr int64_t kMs = 1000;
inline constexpr int64_t kSec = 1000 * kMs;
// A start time far from zero on a whole-minute boundary, so that it also
// starts a bucket of every window used here.
inline constexpr int64_t kT0 = 1'700'000'040 * kSec;

inline BreakerSpec SlowSpec() {
  BreakerSpec s;
  s.slow = SlowRule{2000, 0.5, 10, 10000};
  return s;
}

inline BreakerSpec ErrorSpec() {
  BreakerSpec s;
  s.errors = ErrorRule{0.5, 10, 10000};
  return s;
}

inline BreakerSpec FullSpec() {
  BreakerSpec s;
  s.loop = LoopRule{5, 60000};
  s.slow = SlowRule{2000, 0.5, 10, 10000};
  s.errors = ErrorRule{0.5, 10, 10000};
  s.spend_velocity = SpendVelocityRule{1000, 60000};
  return s;
}

inline Admission Acquire(Breaker& b, int64_t now_us) {
  Admission a = b.Check(now_us);
  if (a.admit) b.OnAdmitted(a.probe, now_us);
  return a;
}

// `n` non-probe outcomes of `latency_ms` at `now_us`.
inline void Calls(Breaker& b, int n, int64_t latency_ms, Outcome outcome,
                  int64_t now_us) {
  for (int i = 0; i < n; ++i) b.OnOutcome(latency_ms, outcome, false, now_us);
}

// Trips `b` (which must have the slow rule of SlowSpec) at `now_us`.
inline void TripSlow(Breaker& b, int64_t now_us) {
  Calls(b, 10, 5000, Outcome::kOk, now_us);
}

}  // namespace brake::breaker::testing
