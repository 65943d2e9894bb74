// Quota: at most `limit` units per UTC calendar period.
//
// Like a fixed window, but the windows are calendar periods (hour, day, week
// from Monday 00:00 UTC, month) of wall time in microseconds since the Unix
// epoch, or `total`, which never resets. The state is one pair
// {period_start_us, count} that always changes together. Settled extra
// charges may drive the count above `limit`; the quota then denies until the
// period ends. Unlike the rate limits, an exhausted quota denies even a
// request of amount 0.
//
// The count is what is spent plus what open leases hold (their reservations
// charged in this period, not yet settled). A request over the count but
// within what is spent is refused kHeld, not kDeny: the room comes back
// when those leases settle, not when the period ends. What is held is not
// stored: leases restored at startup Hold their charges again. Loop thread
// only.
#pragma once

#include <cstdint>
#include <vector>

#include "budget/limiter.h"

namespace brake {

class Quota final : public Limiter {
 public:
  // An unused quota for the period holding `now_us`.
  Quota(SpecRef spec, int64_t now_us);

  // kTooLarge when amount > limit. When count + amount > limit (or amount
  // is 0 and nothing is left): kDeny until the period ends (kNever for
  // total) when the spent part alone leaves no room for it, else kHeld with
  // a hint: the recent time from charge to release of this quota's
  // leases (a second before any).
  Decision Check(int64_t amount, int64_t now_us) override;
  // A lease's reservation: counted, and held until its Release.
  void Charge(int64_t amount, int64_t now_us) override;
  // A refund counts only if `charged_at_us` is in the current period; an
  // extra charge goes to the current period.
  void Settle(int64_t delta, int64_t charged_at_us, int64_t now_us) override;
  // No longer held (when charged in the current period, since any Reset).
  void Release(int64_t amount, int64_t charged_at_us, int64_t now_us) override;
  void Hold(int64_t amount, int64_t charged_at_us, int64_t now_us) override;
  // used: spent; held; resets_in_us: until the period ends (kNever for
  // total).
  LimitUsage Usage(int64_t now_us) override;
  void Reset(int64_t now_us) override;
  // {period_start_us, count}.
  void AppendState(std::vector<int64_t>* out) const override;
  bool RestoreState(const std::vector<int64_t>& state) override;

  int64_t period_start_us() const { return period_start_us_; }
  int64_t count() const { return count_; }
  int64_t held() const { return held_; }

 private:
  // Moves to the period holding `now_us` once the current one has ended.
  void Roll(int64_t now_us);
  // Time until the current period ends, or kNever.
  int64_t UntilEnd(int64_t now_us) const;
  // Whether a charge made at `charged_at_us` is held in the count now.
  bool Holds(int64_t charged_at_us) const;

  int64_t period_start_us_;
  int64_t count_ = 0;
  int64_t held_ = 0;  // part of count_ that open leases hold
  int64_t held_since_us_;  // charges before it are not in held_ (a Reset)
  int64_t release_avg_us_ = 0;  // moving average, charge to release; 0: none
};

}  // namespace brake
