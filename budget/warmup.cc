#include "budget/warmup.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "common/sat_math.h"

namespace brake {

using sat::kMax;
using sat::kMin;
using sat::SatAdd;
using sat::SatSub;
using sat::Until;

namespace {

constexpr double kMicroPermits = 1e6;

// Truncates like Java's (long) cast, saturating instead of overflowing.
int64_t ToInt64(double v) {
  if (!(v == v)) return 0;  // NaN
  if (v >= 9.2e18) return kMax;
  if (v <= -9.2e18) return kMin;
  return static_cast<int64_t>(v);
}

}  // namespace

Warmup::Warmup(SpecRef spec, int64_t now_us)
    : Limiter(std::move(spec)), next_free_us_(0), stored_upermits_(0) {
  Reset(now_us);
}

Warmup::Shape Warmup::shape() const {
  Shape s;
  if (!Usable()) return s;
  s.stable_us = static_cast<double>(spec_->per_ms) * 1000.0 /
                static_cast<double>(spec_->rate);
  s.cold_us = s.stable_us * spec_->cold_factor;
  const double warmup_us =
      static_cast<double>(std::max<int64_t>(spec_->warmup_ms, 0)) * 1000.0;
  s.threshold = 0.5 * warmup_us / s.stable_us;
  s.max_permits = s.threshold + 2.0 * warmup_us / (s.stable_us + s.cold_us);
  if (s.max_permits > s.threshold) {
    s.slope = (s.cold_us - s.stable_us) / (s.max_permits - s.threshold);
  }
  if (s.max_permits > 0) s.cooldown_us = warmup_us / s.max_permits;
  return s;
}

double Warmup::StoredToWaitUs(const Shape& s, double stored, double take) {
  const double above = stored - s.threshold;
  double micros = 0;
  if (above > 0.0) {
    const double take_above = std::min(above, take);
    // The trapezoid's area under the permits taken above the threshold.
    const double length = (s.stable_us + above * s.slope) +
                          (s.stable_us + (above - take_above) * s.slope);
    micros = static_cast<double>(ToInt64(take_above * length / 2.0));
    take -= take_above;
  }
  micros += static_cast<double>(ToInt64(s.stable_us * take));
  return micros;
}

double Warmup::StoredPermits(int64_t now_us) const {
  const Shape s = shape();
  double stored = static_cast<double>(stored_upermits_) / kMicroPermits;
  if (now_us > next_free_us_ && s.cooldown_us > 0) {
    stored +=
        static_cast<double>(SatSub(now_us, next_free_us_)) / s.cooldown_us;
  }
  return std::min(stored, s.max_permits);
}

void Warmup::Resync(const Shape& s, int64_t now_us) {
  if (now_us > next_free_us_) {
    stored_upermits_ =
        ToInt64(std::round(StoredPermits(now_us) * kMicroPermits));
    next_free_us_ = now_us;
  } else if (static_cast<double>(stored_upermits_) >
             s.max_permits * kMicroPermits) {
    // A reconfigured, smaller shape caps what is stored.
    stored_upermits_ = ToInt64(s.max_permits * kMicroPermits);
  }
}

void Warmup::Reserve(int64_t amount, int64_t now_us) {
  const Shape s = shape();
  Resync(s, now_us);
  const double stored = static_cast<double>(stored_upermits_) / kMicroPermits;
  const double spend = std::min(static_cast<double>(amount), stored);
  const double fresh = static_cast<double>(amount) - spend;
  const double wait_us = StoredToWaitUs(s, stored, spend) +
                         static_cast<double>(ToInt64(fresh * s.stable_us));
  next_free_us_ = SatAdd(next_free_us_, std::max<int64_t>(ToInt64(wait_us), 0));
  stored_upermits_ = std::max<int64_t>(
      SatSub(stored_upermits_, ToInt64(std::round(spend * kMicroPermits))), 0);
}

Decision Warmup::Check(int64_t amount, int64_t now_us) {
  if (amount <= 0) return {};
  if (!Usable()) return {Verdict::kTooLarge, 0};
  if (next_free_us_ <= now_us) return {};
  return {Verdict::kDeny, Until(next_free_us_, now_us)};
}

void Warmup::Charge(int64_t amount, int64_t now_us) {
  if (amount <= 0 || !Usable()) return;
  Reserve(amount, now_us);
}

void Warmup::Settle(int64_t delta, int64_t /*charged_at_us*/, int64_t now_us) {
  if (delta > 0) {
    Charge(delta, now_us);
  } else if (delta < 0 && next_free_us_ > now_us && Usable()) {
    const double refund = -static_cast<double>(delta);
    int64_t back = ToInt64(refund * shape().stable_us);
    next_free_us_ = std::max(now_us, SatSub(next_free_us_, back));
  }
}

LimitUsage Warmup::Usage(int64_t now_us) {
  LimitUsage u;
  u.limit = spec_->rate;
  const int64_t wait = Until(next_free_us_, now_us);
  if (wait > 0 && Usable()) {
    u.used = ToInt64(std::ceil(static_cast<double>(wait) / shape().stable_us));
  }
  u.remaining = SatSub(u.limit, u.used);
  u.resets_in_us = Usable() ? wait : kNever;
  return u;
}

void Warmup::Reset(int64_t now_us) {
  next_free_us_ = now_us;
  stored_upermits_ = ToInt64(shape().max_permits * kMicroPermits);
}

void Warmup::AppendState(std::vector<int64_t>* out) const {
  out->insert(out->end(), {next_free_us_, stored_upermits_});
}

bool Warmup::RestoreState(const std::vector<int64_t>& state) {
  if (state.size() != 2 || state[1] < 0) return false;
  next_free_us_ = state[0];
  stored_upermits_ = state[1];
  return true;
}

}  // namespace brake
