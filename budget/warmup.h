// Warmup: Guava's SmoothWarmingUp as a limiter.
//
// A stable rate of `rate` per `per_ms` (interval `stable`) that a cold limiter
// only reaches after `warmup_ms` of use. Stored permits above `threshold` =
// 0.5 * warmup / stable cost linearly more, up to `cold` = cold_factor *
// stable at `max` = threshold + 2 * warmup / (stable + cold); the area of that
// trapezoid is the warm-up period. A new or reset limiter is cold (stored =
// max), and idle time refills stored permits at warmup / max per permit, so a
// long-idle limiter is cold again.
//
// Admission is Guava's tryAcquire(n, 0): admitted iff the next free instant
// has come; the charge then pushes it by the cost of the permits taken, so a
// request's own cost is paid by the next one. The math is floating point as
// in Guava; the state is two integers (next free instant, stored permits in
// millionths) so it persists exactly. Loop thread only.
#pragma once

#include <cstdint>
#include <vector>

#include "budget/limiter.h"

namespace brake {

class Warmup final : public Limiter {
 public:
  // The shape derived from the spec, in microseconds and permits.
  struct Shape {
    double stable_us = 0;
    double cold_us = 0;
    double threshold = 0;
    double max_permits = 0;
    double slope = 0;        // us per permit above threshold
    double cooldown_us = 0;  // idle time that stores one permit; 0: none
  };

  // A cold limiter (stored = max) whose first request is free at `now_us`.
  Warmup(SpecRef spec, int64_t now_us);

  // kAdmit iff the next free instant is <= now_us; kDeny until it otherwise.
  // kTooLarge only for a spec without a positive rate.
  Decision Check(int64_t amount, int64_t now_us) override;
  void Charge(int64_t amount, int64_t now_us) override;
  // Positive delta charges more like Charge; negative gives back up to
  // delta stable intervals of pending wait (never stored permits, which
  // would make the limiter colder).
  void Settle(int64_t delta, int64_t charged_at_us, int64_t now_us) override;
  // limit = rate; used = pending wait in stable intervals, rounded up;
  // resets_in_us = time until the next request is admitted.
  LimitUsage Usage(int64_t now_us) override;
  // Cold again.
  void Reset(int64_t now_us) override;
  // {next_free_us, stored micro-permits}.
  void AppendState(std::vector<int64_t>* out) const override;
  bool RestoreState(const std::vector<int64_t>& state) override;

  Shape shape() const;
  // Stored permits as of `now_us` (after idle refill), capped at max.
  double StoredPermits(int64_t now_us) const;
  int64_t next_free_us() const { return next_free_us_; }

 private:
  bool Usable() const { return spec_->rate > 0 && spec_->per_ms > 0; }
  // Guava's storedPermitsToWaitTime: the cost of taking `take` of `stored`.
  static double StoredToWaitUs(const Shape& s, double stored, double take);
  // Guava's resync: credits idle time since next_free_us_ as stored permits.
  void Resync(const Shape& s, int64_t now_us);
  // Guava's reserveEarliestAvailable.
  void Reserve(int64_t amount, int64_t now_us);

  int64_t next_free_us_;
  int64_t stored_upermits_;  // stored permits * 1e6
};

}  // namespace brake
