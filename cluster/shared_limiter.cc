#include "cluster/shared_limiter.h"

#include <algorithm>
#include <utility>

#include "budget/calendar.h"
#include "common/sat_math.h"

namespace brake::cluster {
namespace {

// A short request asks the daemon to hold it; a waiter (wait_ms) retries
// after this unless the answer wakes it first.
constexpr int64_t kShortRetryUs = 20'000;
constexpr int64_t kUsPerMs = 1000;

bool IsBucket(const LimitSpec& spec) {
  return spec.algorithm == Algorithm::kTokenBucket;
}

}  // namespace

bool AlgorithmShareable(Algorithm algorithm) {
  return algorithm == Algorithm::kQuota ||
         algorithm == Algorithm::kFixedWindow ||
         algorithm == Algorithm::kTokenBucket;
}

bool Shareable(const LimitSpec& spec) {
  return !spec.local && !spec.shadow && AlgorithmShareable(spec.algorithm);
}

std::string ShareKeyBase(const std::string& prefix, const std::string& scope,
                         const LimitSpec& spec) {
  std::string key = prefix;
  key += IsBucket(spec) ? "bucket|" : "cap|";
  key += scope;
  key += '|';
  key += spec.name;
  key += '|';
  key += ResourceName(spec.resource);
  return key;
}

SharedLimiter::SharedLimiter(SpecRef spec, std::unique_ptr<Limiter> local,
                             cluster::Shares* shares, std::string key_base,
                             int64_t now_us)
    : Limiter(std::move(spec)),
      local_(std::move(local)),
      shares_(shares),
      key_base_(std::move(key_base)),
      period_start_us_(PeriodOf(now_us)) {
  std::string key = key_base_;
  if (!IsBucket(*spec_)) key += '|' + std::to_string(period_start_us_);
  const ShareLimit limit = LimitFor(period_start_us_);
  share_ = shares_->Open(key, IsBucket(*spec_) ? ShareKind::kBucket
                                               : ShareKind::kCap,
                         limit.limit);
  share_->set_limit(limit);
}

SharedLimiter::~SharedLimiter() { shares_->Release(share_); }

int64_t SharePeriodOf(const LimitSpec& spec, int64_t now_us) {
  switch (spec.algorithm) {
    case Algorithm::kQuota:
      return spec.period == Period::kTotal ? 0
                                           : PeriodStartUs(spec.period, now_us);
    case Algorithm::kFixedWindow: {
      const int64_t w = std::max<int64_t>(1, spec.window_ms * kUsPerMs);
      return now_us - now_us % w;
    }
    default:
      return 0;
  }
}

std::string ShareKeyAt(const std::string& prefix, const std::string& scope,
                       const LimitSpec& spec, int64_t now_us) {
  std::string key = ShareKeyBase(prefix, scope, spec);
  if (!IsBucket(spec)) key += '|' + std::to_string(SharePeriodOf(spec, now_us));
  return key;
}

int64_t SharedLimiter::PeriodOf(int64_t now_us) const {
  return SharePeriodOf(*spec_, now_us);
}

ShareLimit SharedLimiter::LimitFor(int64_t period_start_us) const {
  ShareLimit l;
  if (IsBucket(*spec_)) {
    l.limit = spec_->burst;
    l.rate = spec_->rate;
    l.per_ms = spec_->per_ms;
    return l;
  }
  l.limit = spec_->limit;
  int64_t end_us = 0;
  if (spec_->algorithm == Algorithm::kQuota) {
    if (spec_->period != Period::kTotal) {
      end_us = PeriodEndUs(spec_->period, period_start_us);
    }
  } else {
    end_us = sat::SatAdd(period_start_us, spec_->window_ms * kUsPerMs);
  }
  // A period's key outlives it by a day: daemons whose clocks differ a
  // little still find it.
  if (end_us != 0) l.key_ttl_ms = (end_us - period_start_us) / kUsPerMs + 86'400'000;
  return l;
}

void SharedLimiter::Roll(int64_t now_us) {
  const int64_t period = PeriodOf(now_us);
  if (period == period_start_us_) return;
  period_start_us_ = period;
  // The last period's share gives back what it holds, into its own key.
  const ShareLimit limit = LimitFor(period);
  Share* next = shares_->Open(key_base_ + '|' + std::to_string(period),
                              ShareKind::kCap, limit.limit);
  next->set_limit(limit);
  shares_->Release(share_);
  share_ = next;
}

Decision SharedLimiter::Check(int64_t amount, int64_t now_us) {
  Decision d = local_->Check(amount, now_us);
  if (d.verdict != Verdict::kAdmit || amount == 0) return d;
  Roll(now_us);
  if (share_->available() >= amount) return d;
  if (share_->dry(now_us)) {
    const int64_t recheck_us = share_->dry_until_us() - now_us;
    if (spec_->algorithm == Algorithm::kQuota) {
      // Redis had nothing to give: spent across the cluster, or held by
      // slices and leases in flight (here or on other daemons), which
      // come back as they settle and are given back.
      if (sat::SatAdd(share_->spent(), amount) <= spec_->limit) {
        return Decision{Verdict::kHeld, recheck_us};
      }
      return Decision{Verdict::kDeny, local_->Usage(now_us).resets_in_us};
    }
    if (!IsBucket(*spec_) && share_->remaining_seen() <= 0 &&
        share_->nodes_seen() <= 1) {
      // Nothing is left and no other daemon holds a slice that it could
      // give back: as on one node, until the window ends.
      return Decision{Verdict::kDeny, local_->Usage(now_us).resets_in_us};
    }
    return Decision{Verdict::kDeny, recheck_us};
  }
  share_->MarkShort(amount, now_us);
  shares_->NoteShort(share_);
  return Decision{Verdict::kDeny, kShortRetryUs};
}

void SharedLimiter::Charge(int64_t amount, int64_t now_us) {
  local_->Charge(amount, now_us);
  Roll(now_us);
  if (!share_->Take(amount, now_us)) {
    // Charged past the slice (a pay-later bucket): a debt, counted in
    // Redis by the next call.
    share_->Settle(amount);
    shares_->NoteDue(share_);
  }
}

int64_t SharedLimiter::SpentHere(int64_t now_us) {
  return spec_->algorithm == Algorithm::kQuota ? local_->Usage(now_us).used : 0;
}

void SharedLimiter::NoteSpent(int64_t before, int64_t now_us) {
  const int64_t delta = SpentHere(now_us) - before;
  if (delta == 0) return;
  share_->AddSpent(delta);
  if (share_->Wants(now_us, shares_->tuning())) shares_->NoteDue(share_);
}

void SharedLimiter::Settle(int64_t delta, int64_t charged_at_us,
                           int64_t now_us) {
  const int64_t spent = SpentHere(now_us);
  local_->Settle(delta, charged_at_us, now_us);
  Roll(now_us);
  NoteSpent(spent, now_us);
  if (delta > 0) {
    share_->Settle(delta);  // to the current period, as a quota does
    if (share_->slice().debt() > 0) shares_->NoteDue(share_);
  } else if (delta < 0 && PeriodOf(charged_at_us) == period_start_us_) {
    share_->Settle(delta);  // a refund counts in its own period only
  }
}

void SharedLimiter::Release(int64_t amount, int64_t charged_at_us,
                            int64_t now_us) {
  const int64_t spent = SpentHere(now_us);
  local_->Release(amount, charged_at_us, now_us);
  Roll(now_us);
  NoteSpent(spent, now_us);
}

void SharedLimiter::Hold(int64_t amount, int64_t charged_at_us,
                         int64_t now_us) {
  local_->Hold(amount, charged_at_us, now_us);
}

LimitUsage SharedLimiter::Usage(int64_t now_us) {
  LimitUsage u = local_->Usage(now_us);
  Roll(now_us);
  const int64_t cluster =
      sat::SatAdd(share_->remaining_seen(), share_->available());
  if (cluster < u.remaining) {
    u.remaining = cluster;
    // Held here, or (a quota) held across the cluster as Redis last said.
    if (spec_->algorithm == Algorithm::kQuota) {
      u.held = std::max(u.held, share_->held_seen());
    }
    u.used = std::max<int64_t>(0, u.limit - cluster - u.held);
  }
  return u;
}

int64_t SharedLimiter::Remaining(int64_t now_us) {
  return Usage(now_us).remaining;
}

void SharedLimiter::Reset(int64_t now_us) { local_->Reset(now_us); }

void SharedLimiter::AppendState(std::vector<int64_t>* out) const {
  local_->AppendState(out);
}

bool SharedLimiter::RestoreState(const std::vector<int64_t>& state) {
  return local_->RestoreState(state);
}

void SharedLimiter::SpecChanged() {
  local_->Reconfigure(spec_);
  share_->set_limit(LimitFor(period_start_us_));
}

std::unique_ptr<Limiter> MakeClusterLimiter(cluster::Shares* shares,
                                            const std::string& prefix,
                                            const std::string& scope,
                                            SpecRef spec, int64_t now_us) {
  std::unique_ptr<Limiter> local = MakeLimiter(spec, now_us);
  if (!Shareable(*spec.ptr)) return local;
  std::string base = ShareKeyBase(prefix, scope, *spec.ptr);
  return std::make_unique<SharedLimiter>(std::move(spec), std::move(local),
                                         shares, std::move(base), now_us);
}

}  // namespace brake::cluster
