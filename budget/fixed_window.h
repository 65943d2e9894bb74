// FixedWindow: at most `limit` units per window of `window_ms`.
//
// Windows are aligned to multiples of `window_ms` since time 0. The state is
// one pair {window_start_us, count} that always changes together: a call at
// or after the end of the current window starts the window holding `now` with
// a count of 0. A calendar edge may therefore see up to 2 * limit in a short
// span; that is the known price of the algorithm. Loop thread only.
#pragma once

#include <cstdint>
#include <vector>

#include "budget/limiter.h"

namespace brake {

class FixedWindow final : public Limiter {
 public:
  // An empty window holding `now_us`.
  FixedWindow(SpecRef spec, int64_t now_us);

  // kTooLarge when amount > limit; kDeny until the next window starts.
  Decision Check(int64_t amount, int64_t now_us) override;
  void Charge(int64_t amount, int64_t now_us) override;
  // A refund counts only if `charged_at_us` is in the current window; an
  // extra charge goes to the current window (the count may exceed limit).
  void Settle(int64_t delta, int64_t charged_at_us, int64_t now_us) override;
  LimitUsage Usage(int64_t now_us) override;
  void Reset(int64_t now_us) override;
  // {window_start_us, count}.
  void AppendState(std::vector<int64_t>* out) const override;
  bool RestoreState(const std::vector<int64_t>& state) override;

  // Start of the aligned window holding `now_us`.
  int64_t AlignedStartUs(int64_t now_us) const;
  int64_t window_start_us() const { return window_start_us_; }
  int64_t count() const { return count_; }

 private:
  int64_t WindowUs() const;
  int64_t WindowEndUs() const;
  // Moves to the window holding `now_us` once the current one has ended.
  void Roll(int64_t now_us);

  int64_t window_start_us_;
  int64_t count_ = 0;
};

}  // namespace brake
