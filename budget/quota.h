// Quota: at most `limit` units per UTC calendar period.
//
// Like a fixed window, but the windows are calendar periods (hour, day, week
// from Monday 00:00 UTC, month) of wall time in microseconds since the Unix
// epoch, or `total`, which never resets. The state is one pair
// {period_start_us, count} that always changes together. Settled extra
// charges may drive the count above `limit`; the quota then denies until the
// period ends. Unlike the rate limits, an exhausted quota denies even a
// request of amount 0. Loop thread only.
#pragma once

#include <cstdint>
#include <vector>

#include "budget/limiter.h"

namespace brake {

class Quota final : public Limiter {
 public:
  // An unused quota for the period holding `now_us`.
  Quota(SpecRef spec, int64_t now_us);

  // kTooLarge when amount > limit; kDeny until the period ends (kNever for
  // total) when count + amount > limit, or amount is 0 and nothing is left.
  Decision Check(int64_t amount, int64_t now_us) override;
  void Charge(int64_t amount, int64_t now_us) override;
  // A refund counts only if `charged_at_us` is in the current period; an
  // extra charge goes to the current period.
  void Settle(int64_t delta, int64_t charged_at_us, int64_t now_us) override;
  // resets_in_us: until the period ends (kNever for total).
  LimitUsage Usage(int64_t now_us) override;
  void Reset(int64_t now_us) override;
  // {period_start_us, count}.
  void AppendState(std::vector<int64_t>* out) const override;
  bool RestoreState(const std::vector<int64_t>& state) override;

  int64_t period_start_us() const { return period_start_us_; }
  int64_t count() const { return count_; }

 private:
  // Moves to the period holding `now_us` once the current one has ended.
  void Roll(int64_t now_us);
  // Time until the current period ends, or kNever.
  int64_t UntilEnd(int64_t now_us) const;

  int64_t period_start_us_;
  int64_t count_ = 0;
};

}  // namespace brake
