// LeakyBucket: grants spaced uniformly on a virtual schedule.
//
// Like Sentinel's rate limiter or nginx limit_req: each unit takes one slot
// of per_ms * 1000 / rate microseconds, and the state is the next free slot.
// Without waiting (this interface), a request is admitted iff its slot has
// come, and its charge books amount slots from max(next slot, now), so grants
// come out at the rate with no burst. The daemon's waiting mode (hold up to
// `queue` acquires until their slot) builds on NextSlotUs and queue().
// Loop thread only.
#pragma once

#include <cstdint>
#include <vector>

#include "budget/limiter.h"

namespace brake {

class LeakyBucket final : public Limiter {
 public:
  // An idle schedule: the first slot is `now_us`.
  LeakyBucket(SpecRef spec, int64_t now_us);

  // kAdmit iff the next slot is <= now_us; kDeny until it otherwise;
  // kTooLarge only for a spec without a positive rate.
  Decision Check(int64_t amount, int64_t now_us) override;
  void Charge(int64_t amount, int64_t now_us) override;
  // Positive delta books more slots; negative frees booked slots that are
  // still in the future (never moving the schedule before now).
  void Settle(int64_t delta, int64_t charged_at_us, int64_t now_us) override;
  // limit = rate; used = units booked beyond now (rounded up);
  // resets_in_us = time until the schedule is idle.
  LimitUsage Usage(int64_t now_us) override;
  void Reset(int64_t now_us) override;
  // {next_slot_us}.
  void AppendState(std::vector<int64_t>* out) const override;
  bool RestoreState(const std::vector<int64_t>& state) override;

  // When a request arriving at `now_us` would get its slot (>= now_us).
  int64_t NextSlotUs(int64_t now_us) const;
  // The most waiters the daemon may hold for this limit.
  int64_t queue() const { return spec_->queue; }
  // Units booked beyond `now_us`, rounded up (the current backlog).
  int64_t Backlog(int64_t now_us) const;
  // Microseconds of schedule taken by `amount` units, rounded up.
  int64_t SlotsUs(int64_t amount) const;

 private:
  bool Usable() const { return spec_->rate > 0 && spec_->per_ms > 0; }

  int64_t next_slot_us_;
};

}  // namespace brake
