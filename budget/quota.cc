#include "budget/quota.h"

#include <algorithm>
#include <utility>

#include "budget/calendar.h"
#include "common/sat_math.h"

namespace brake {

using sat::kMax;
using sat::kMin;
using sat::SatAdd;
using sat::SatSub;
using sat::Until;

Quota::Quota(SpecRef spec, int64_t now_us)
    : Limiter(std::move(spec)),
      period_start_us_(PeriodStartUs(spec_->period, now_us)) {}

void Quota::Roll(int64_t now_us) {
  // "The current period has ended", not "the period start differs": a
  // reconfigured period keeps its count until the period it was counted in
  // would have ended, and a clock stepping back never reopens a period.
  if (now_us >= PeriodEndUs(spec_->period, period_start_us_)) {
    period_start_us_ = PeriodStartUs(spec_->period, now_us);
    count_ = 0;
  }
}

int64_t Quota::UntilEnd(int64_t now_us) const {
  if (spec_->period == Period::kTotal) return kNever;
  return Until(PeriodEndUs(spec_->period, period_start_us_), now_us);
}

Decision Quota::Check(int64_t amount, int64_t now_us) {
  if (amount > spec_->limit) return {Verdict::kTooLarge, 0};
  Roll(now_us);
  const bool fits =
      amount > 0 ? SatAdd(count_, amount) <= spec_->limit : count_ < spec_->limit;
  if (fits) return {};
  return {Verdict::kDeny, UntilEnd(now_us)};
}

void Quota::Charge(int64_t amount, int64_t now_us) {
  Roll(now_us);
  if (amount > 0) count_ = SatAdd(count_, amount);
}

void Quota::Settle(int64_t delta, int64_t charged_at_us, int64_t now_us) {
  Roll(now_us);
  if (delta > 0) {
    count_ = SatAdd(count_, delta);
  } else if (delta < 0 &&
             PeriodEndUs(spec_->period, period_start_us_) > charged_at_us &&
             charged_at_us >= period_start_us_) {
    int64_t refund = delta == kMin ? kMax : -delta;
    count_ = std::max<int64_t>(SatSub(count_, refund), 0);
  }
}

LimitUsage Quota::Usage(int64_t now_us) {
  Roll(now_us);
  LimitUsage u;
  u.limit = spec_->limit;
  u.used = count_;
  u.remaining = SatSub(spec_->limit, count_);
  u.resets_in_us = UntilEnd(now_us);
  return u;
}

void Quota::Reset(int64_t now_us) {
  period_start_us_ = PeriodStartUs(spec_->period, now_us);
  count_ = 0;
}

void Quota::AppendState(std::vector<int64_t>* out) const {
  out->insert(out->end(), {period_start_us_, count_});
}

bool Quota::RestoreState(const std::vector<int64_t>& state) {
  if (state.size() != 2 || state[1] < 0) return false;
  period_start_us_ = state[0];
  count_ = state[1];
  return true;
}

}  // namespace brake
