// TokenBucket: Guava's SmoothBursty as a limiter.
//
// Permits refill at `rate` per `per_ms` and are stored up to `burst` (a spec
// burst of 0 means `rate`). A new bucket starts full. The state is one
// instant, `empty_at_us`: when the bucket was (or, in debt, will be) empty;
// the permits stored at `now` are min(burst, (now - empty_at) / interval), so
// clamping empty_at to at least now - cost(burst) caps the bucket at full.
//
// Without `pay_later`, a request is admitted iff that many permits are stored
// and a request above `burst` is kTooLarge. With `pay_later` (Guava's
// acquire), a request of any size is admitted as soon as the bucket has no
// debt, and its cost beyond what is stored is paid by later callers.
// Loop thread only; owns nothing but its state.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "common/sat_math.h"
#include "budget/limiter.h"

namespace brake {

class TokenBucket final : public Limiter {
 public:
  // A full bucket at `now_us`.
  TokenBucket(SpecRef spec, int64_t now_us);

  Decision Check(int64_t amount, int64_t now_us) override;
  void Charge(int64_t amount, int64_t now_us) override;
  // Positive delta charges more (debt possible); negative refunds, up to full.
  // Permits are fungible, so `charged_at_us` does not matter.
  void Settle(int64_t delta, int64_t charged_at_us, int64_t now_us) override;
  LimitUsage Usage(int64_t now_us) override;
  int64_t Remaining(int64_t now_us) override { return StoredPermits(now_us); }
  void Reset(int64_t now_us) override;
  // {empty_at_us}.
  void AppendState(std::vector<int64_t>* out) const override;
  bool RestoreState(const std::vector<int64_t>& state) override;

  // The effective cap on stored permits (`burst`, or `rate` when 0).
  int64_t Burst() const { return burst_; }
  // Whole permits stored at `now_us`; negative while in debt. Inline: a
  // grant reports it for every bucket it charged.
  int64_t StoredPermits(int64_t now_us) const;
  // Microseconds it takes to refill `amount` permits, rounded up.
  int64_t CostUs(int64_t amount) const {
    return amount == 1 ? unit_cost_us_ : CostUsOf(amount);
  }

 private:
  bool Usable() const { return usable_; }
  // empty_at_us_ clamped so that the bucket holds at most `burst`.
  int64_t ClampedEmptyAt(int64_t now_us) const {
    return std::max(empty_at_us_, sat::SatSub(now_us, burst_cost_us_));
  }
  // CostUs of any amount but 1, with a division.
  int64_t CostUsOf(int64_t amount) const;
  void SpecChanged() override;

  int64_t empty_at_us_;
  // Figures of the spec, kept here so that a check reads one object: they
  // change only in SpecChanged.
  int64_t burst_cost_us_;  // CostUs(Burst()), asked on every call
  // CostUs(1): a request's cost, the usual amount, without a division.
  int64_t unit_cost_us_;
  int64_t burst_;    // Burst()
  bool usable_;      // rate > 0 and per_ms > 0
  bool pay_later_;
};

// Inline: the engine calls it directly (TokenBucket is final) for the
// usual limit of a decision.
inline Decision TokenBucket::Check(int64_t amount, int64_t now_us) {
  if (amount <= 0) return {};
  if (!Usable()) return {Verdict::kTooLarge, 0};
  int64_t base = ClampedEmptyAt(now_us);
  if (pay_later_) {
    // Guava's acquire: granted once earlier debt is paid, whatever the size.
    if (now_us >= base) return {};
    return {Verdict::kDeny, sat::Until(base, now_us)};
  }
  if (amount > burst_) return {Verdict::kTooLarge, 0};
  // Stored >= amount, expressed in time so that retry_after is exact: the
  // clamp cannot move `base` while we wait, since amount <= burst.
  int64_t ready_at = sat::SatAdd(base, CostUs(amount));
  if (now_us >= ready_at) return {};
  return {Verdict::kDeny, sat::Until(ready_at, now_us)};
}

inline int64_t TokenBucket::StoredPermits(int64_t now_us) const {
  if (!Usable()) return 0;
  const int64_t elapsed =
      sat::SatSub(now_us, ClampedEmptyAt(now_us));
  const int64_t per_us = sat::MsToUs(spec_->per_ms);
  int64_t product = 0;
  // The usual case in one 64-bit division: no debt, no overflow.
  const int64_t stored =
      elapsed >= 0 && !__builtin_mul_overflow(elapsed, spec_->rate, &product)
          ? product / per_us
          : sat::MulDivFloor(elapsed, spec_->rate, per_us);
  return std::min(stored, Burst());
}

inline void TokenBucket::Charge(int64_t amount, int64_t now_us) {
  if (amount <= 0) return;
  empty_at_us_ = sat::SatAdd(ClampedEmptyAt(now_us), CostUs(amount));
}

}  // namespace brake
