#include "budget/token_bucket.h"

#include <algorithm>
#include <utility>

#include "common/sat_math.h"

namespace brake {

using sat::kMax;
using sat::kMin;
using sat::MsToUs;
using sat::MulDivCeil;
using sat::SatAdd;
using sat::SatSub;
using sat::Until;

TokenBucket::TokenBucket(SpecRef spec, int64_t now_us)
    : Limiter(std::move(spec)),
      empty_at_us_(0),
      burst_cost_us_(0),
      unit_cost_us_(0),
      burst_(0),
      usable_(false),
      pay_later_(false) {
  SpecChanged();
  Reset(now_us);
}

void TokenBucket::SpecChanged() {
  burst_ = spec_->burst > 0 ? spec_->burst : std::max<int64_t>(spec_->rate, 0);
  usable_ = spec_->rate > 0 && spec_->per_ms > 0;
  pay_later_ = spec_->pay_later;
  unit_cost_us_ =
      Usable() ? MulDivCeil(1, MsToUs(spec_->per_ms), spec_->rate) : kMax;
  burst_cost_us_ = CostUs(Burst());
}

int64_t TokenBucket::CostUsOf(int64_t amount) const {
  if (amount <= 0) return 0;
  if (!Usable()) return kMax;
  return MulDivCeil(amount, MsToUs(spec_->per_ms), spec_->rate);
}

void TokenBucket::Settle(int64_t delta, int64_t /*charged_at_us*/,
                         int64_t now_us) {
  if (delta > 0) {
    Charge(delta, now_us);
  } else if (delta < 0) {
    // Clamp first so that a refund never lifts the bucket above full.
    int64_t refund = delta == kMin ? kMax : -delta;
    empty_at_us_ = SatSub(ClampedEmptyAt(now_us), CostUs(refund));
  }
}

LimitUsage TokenBucket::Usage(int64_t now_us) {
  LimitUsage u;
  u.limit = Burst();
  u.remaining = StoredPermits(now_us);
  u.used = SatSub(u.limit, u.remaining);
  if (!Usable()) {
    u.resets_in_us = kNever;
  } else {
    u.resets_in_us =
        Until(SatAdd(ClampedEmptyAt(now_us), burst_cost_us_), now_us);
  }
  return u;
}

void TokenBucket::Reset(int64_t now_us) {
  empty_at_us_ = SatSub(now_us, burst_cost_us_);
}

void TokenBucket::AppendState(std::vector<int64_t>* out) const {
  out->push_back(empty_at_us_);
}

bool TokenBucket::RestoreState(const std::vector<int64_t>& state) {
  if (state.size() != 1) return false;
  empty_at_us_ = state[0];
  return true;
}

}  // namespace brake
