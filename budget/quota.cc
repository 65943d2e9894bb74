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

namespace {

// A held denial's hint before any lease has been released.
constexpr int64_t kFirstHintUs = 1'000'000;

}  // namespace

Quota::Quota(SpecRef spec, int64_t now_us)
    : Limiter(std::move(spec)),
      period_start_us_(PeriodStartUs(spec_->period, now_us)),
      held_since_us_(period_start_us_) {}

void Quota::Roll(int64_t now_us) {
  // "The current period has ended", not "the period start differs": a
  // reconfigured period keeps its count until the period it was counted in
  // would have ended, and a clock stepping back never reopens a period.
  if (now_us >= PeriodEndUs(spec_->period, period_start_us_)) {
    period_start_us_ = PeriodStartUs(spec_->period, now_us);
    held_since_us_ = period_start_us_;
    count_ = 0;
    held_ = 0;  // what open leases reserved counted in the ended period
  }
}

bool Quota::Holds(int64_t charged_at_us) const {
  return charged_at_us >= held_since_us_ &&
         charged_at_us < PeriodEndUs(spec_->period, period_start_us_);
}

int64_t Quota::UntilEnd(int64_t now_us) const {
  if (spec_->period == Period::kTotal) return kNever;
  return Until(PeriodEndUs(spec_->period, period_start_us_), now_us);
}

Decision Quota::Check(int64_t amount, int64_t now_us) {
  if (amount > spec_->limit) return {Verdict::kTooLarge, 0};
  Roll(now_us);
  auto fits = [&](int64_t count) {
    return amount > 0 ? SatAdd(count, amount) <= spec_->limit
                      : count < spec_->limit;
  };
  if (fits(count_)) return {};
  if (held_ > 0 && fits(std::max<int64_t>(0, SatSub(count_, held_)))) {
    return {Verdict::kHeld,
            release_avg_us_ > 0 ? release_avg_us_ : kFirstHintUs};
  }
  return {Verdict::kDeny, UntilEnd(now_us)};
}

void Quota::Charge(int64_t amount, int64_t now_us) {
  Roll(now_us);
  if (amount > 0) {
    count_ = SatAdd(count_, amount);
    held_ = SatAdd(held_, amount);
  }
}

void Quota::Hold(int64_t amount, int64_t charged_at_us, int64_t now_us) {
  Roll(now_us);
  if (amount > 0 && Holds(charged_at_us)) held_ = SatAdd(held_, amount);
}

void Quota::Release(int64_t amount, int64_t charged_at_us, int64_t now_us) {
  Roll(now_us);
  if (amount <= 0 || !Holds(charged_at_us)) return;
  held_ = std::max<int64_t>(0, SatSub(held_, amount));
  // A moving average over about the last eight releases.
  const int64_t took = std::max<int64_t>(1, SatSub(now_us, charged_at_us));
  release_avg_us_ =
      release_avg_us_ == 0 ? took : release_avg_us_ + (took - release_avg_us_) / 8;
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
  u.held = std::min(held_, count_);
  u.used = SatSub(count_, u.held);
  u.remaining = SatSub(spec_->limit, count_);
  u.resets_in_us = UntilEnd(now_us);
  return u;
}

void Quota::Reset(int64_t now_us) {
  period_start_us_ = PeriodStartUs(spec_->period, now_us);
  held_since_us_ = std::max(period_start_us_, now_us);
  count_ = 0;
  held_ = 0;
}

void Quota::AppendState(std::vector<int64_t>* out) const {
  out->insert(out->end(), {period_start_us_, count_});
}

bool Quota::RestoreState(const std::vector<int64_t>& state) {
  if (state.size() != 2 || state[1] < 0) return false;
  period_start_us_ = state[0];
  held_since_us_ = period_start_us_;
  count_ = state[1];
  held_ = 0;  // restored leases Hold theirs
  return true;
}

}  // namespace brake
