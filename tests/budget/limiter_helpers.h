// Helpers shared by the limiter tests: time units in microseconds (the
// limiters' clock), Take, a check-then-charge as the engine does it, and
// Spend, a Take whose lease ends at once.
#ifndef BRAKE_TESTS_BUDGET_LIMITER_HELPERS_H_
#define BRAKE_TESTS_BUDGET_LIMITER_HELPERS_H_

#include <cstdint>

#include "budget/limiter.h"

namespace brake::limiter_test {

inline constexpr int64_t kMs = 1000;
inline constexpr int64_t kSec = 1000 * kMs;

// Charges `amount` at `now_us` when the limiter admits it; true if it did.
inline bool Take(Limiter& l, int64_t amount, int64_t now_us) {
  if (l.Check(amount, now_us).verdict != Verdict::kAdmit) return false;
  l.Charge(amount, now_us);
  return true;
}

// Take, then the lease ends at once, settled at what it reserved: spent,
// no longer held (for a quota).
inline bool Spend(Limiter& l, int64_t amount, int64_t now_us) {
  if (!Take(l, amount, now_us)) return false;
  l.Release(amount, now_us, now_us);
  return true;
}

}  // namespace brake::limiter_test

#endif  // BRAKE_TESTS_BUDGET_LIMITER_HELPERS_H_
