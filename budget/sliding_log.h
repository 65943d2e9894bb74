// SlidingLog: at most `limit` units in any rolling `window_ms`.
//
// Keeps one entry (time, amount) per charge still inside the window, oldest
// first, and their running sum. An entry charged at t stops counting at
// t + window (it is expired when t <= now - window). Exact, and memory is
// bounded by the charges of one window (charges at the same instant share an
// entry). Loop thread only; owns nothing but its log.
#pragma once

#include <cstdint>
#include <deque>
#include <vector>

#include "budget/limiter.h"

namespace brake {

class SlidingLog final : public Limiter {
 public:
  // An empty log.
  SlidingLog(SpecRef spec, int64_t now_us);

  // kTooLarge when amount > limit; kDeny with the exact time until enough
  // old entries expire.
  Decision Check(int64_t amount, int64_t now_us) override;
  void Charge(int64_t amount, int64_t now_us) override;
  // A refund reduces the entry charged at `charged_at_us` if it still counts
  // (dropped otherwise); an extra charge is a new entry at `now_us`.
  void Settle(int64_t delta, int64_t charged_at_us, int64_t now_us) override;
  LimitUsage Usage(int64_t now_us) override;
  void Reset(int64_t now_us) override;
  // {t0, amount0, t1, amount1, ...}, oldest first.
  void AppendState(std::vector<int64_t>* out) const override;
  bool RestoreState(const std::vector<int64_t>& state) override;

  // Units charged within the window ending at `now_us`.
  int64_t Sum(int64_t now_us);
  // Number of entries held (for tests of the memory bound).
  size_t entries() const { return log_.size(); }

 private:
  struct Entry {
    int64_t t_us;
    int64_t amount;
  };
  int64_t WindowUs() const;
  void Expire(int64_t now_us);
  void Append(int64_t amount, int64_t now_us);

  std::deque<Entry> log_;
  int64_t sum_ = 0;
};

}  // namespace brake
