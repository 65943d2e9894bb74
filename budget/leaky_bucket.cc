#include "budget/leaky_bucket.h"

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

LeakyBucket::LeakyBucket(SpecRef spec, int64_t now_us)
    : Limiter(std::move(spec)), next_slot_us_(now_us) {}

int64_t LeakyBucket::SlotsUs(int64_t amount) const {
  if (amount <= 0) return 0;
  if (!Usable()) return kMax;
  return MulDivCeil(amount, MsToUs(spec_->per_ms), spec_->rate);
}

int64_t LeakyBucket::NextSlotUs(int64_t now_us) const {
  return std::max(next_slot_us_, now_us);
}

int64_t LeakyBucket::Backlog(int64_t now_us) const {
  const int64_t ahead = Until(next_slot_us_, now_us);
  if (ahead == 0 || !Usable()) return 0;
  return MulDivCeil(ahead, spec_->rate, MsToUs(spec_->per_ms));
}

Decision LeakyBucket::Check(int64_t amount, int64_t now_us) {
  if (amount <= 0) return {};
  if (!Usable()) return {Verdict::kTooLarge, 0};
  if (next_slot_us_ <= now_us) return {};
  return {Verdict::kDeny, Until(next_slot_us_, now_us)};
}

void LeakyBucket::Charge(int64_t amount, int64_t now_us) {
  if (amount <= 0) return;
  next_slot_us_ = SatAdd(NextSlotUs(now_us), SlotsUs(amount));
}

void LeakyBucket::Settle(int64_t delta, int64_t /*charged_at_us*/,
                         int64_t now_us) {
  if (delta > 0) {
    Charge(delta, now_us);
  } else if (delta < 0 && next_slot_us_ > now_us) {
    // Idle time is never banked: a refund only frees slots still ahead.
    int64_t refund = delta == kMin ? kMax : -delta;
    next_slot_us_ = std::max(now_us, SatSub(next_slot_us_, SlotsUs(refund)));
  }
}

LimitUsage LeakyBucket::Usage(int64_t now_us) {
  LimitUsage u;
  u.limit = spec_->rate;
  u.used = Backlog(now_us);
  u.remaining = SatSub(u.limit, u.used);
  u.resets_in_us = Until(next_slot_us_, now_us);
  return u;
}

void LeakyBucket::Reset(int64_t now_us) { next_slot_us_ = now_us; }

void LeakyBucket::AppendState(std::vector<int64_t>* out) const {
  out->push_back(next_slot_us_);
}

bool LeakyBucket::RestoreState(const std::vector<int64_t>& state) {
  if (state.size() != 1) return false;
  next_slot_us_ = state[0];
  return true;
}

}  // namespace brake
