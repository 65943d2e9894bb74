#include "budget/sliding_log.h"

#include <algorithm>
#include <utility>

#include "common/sat_math.h"

namespace brake {

using sat::kMax;
using sat::kMin;
using sat::MsToUs;
using sat::SatAdd;
using sat::SatSub;
using sat::Until;

SlidingLog::SlidingLog(SpecRef spec, int64_t /*now_us*/)
    : Limiter(std::move(spec)) {}

int64_t SlidingLog::WindowUs() const {
  return std::max<int64_t>(MsToUs(spec_->window_ms), 0);
}

void SlidingLog::Expire(int64_t now_us) {
  const int64_t horizon = SatSub(now_us, WindowUs());
  while (!log_.empty() && log_.front().t_us <= horizon) {
    sum_ = SatSub(sum_, log_.front().amount);
    log_.pop_front();
  }
  if (log_.empty()) sum_ = 0;  // forget any saturation error
}

void SlidingLog::Append(int64_t amount, int64_t now_us) {
  // Never go back in time, so the log stays sorted even if the clock does.
  if (!log_.empty() && log_.back().t_us >= now_us) {
    log_.back().amount = SatAdd(log_.back().amount, amount);
  } else {
    log_.push_back({now_us, amount});
  }
  sum_ = SatAdd(sum_, amount);
}

int64_t SlidingLog::Sum(int64_t now_us) {
  Expire(now_us);
  return sum_;
}

Decision SlidingLog::Check(int64_t amount, int64_t now_us) {
  if (amount <= 0) return {};
  if (amount > spec_->limit) return {Verdict::kTooLarge, 0};
  Expire(now_us);
  if (SatAdd(sum_, amount) <= spec_->limit) return {};
  // The earliest instant at which enough of the oldest entries have expired.
  // Entries expire in order, so walking from the front finds it exactly.
  int64_t rest = sum_;
  for (const Entry& e : log_) {
    rest = SatSub(rest, e.amount);
    if (SatAdd(rest, amount) <= spec_->limit) {
      return {Verdict::kDeny, Until(SatAdd(e.t_us, WindowUs()), now_us)};
    }
  }
  return {Verdict::kDeny, kNever};  // unreachable: amount <= limit
}

void SlidingLog::Charge(int64_t amount, int64_t now_us) {
  if (amount <= 0) return;
  Expire(now_us);
  Append(amount, now_us);
}

void SlidingLog::Settle(int64_t delta, int64_t charged_at_us, int64_t now_us) {
  Expire(now_us);
  if (delta > 0) {
    Append(delta, now_us);
    return;
  }
  if (delta == 0) return;
  int64_t refund = delta == kMin ? kMax : -delta;
  // Entries at `charged_at_us` sit together; reduce from the newest of them.
  auto first =
      std::lower_bound(log_.begin(), log_.end(), charged_at_us,
                       [](const Entry& e, int64_t t) { return e.t_us < t; });
  auto last = first;
  while (last != log_.end() && last->t_us == charged_at_us) ++last;
  for (auto it = last; it != first && refund > 0;) {
    --it;
    int64_t take = std::min(refund, it->amount);
    it->amount -= take;
    refund -= take;
    sum_ = SatSub(sum_, take);
  }
  log_.erase(
      std::remove_if(first, last, [](const Entry& e) { return e.amount == 0; }),
      last);
  if (log_.empty()) sum_ = 0;
}

LimitUsage SlidingLog::Usage(int64_t now_us) {
  Expire(now_us);
  LimitUsage u;
  u.limit = spec_->limit;
  u.used = sum_;
  u.remaining = SatSub(spec_->limit, sum_);
  u.resets_in_us =
      log_.empty() ? 0 : Until(SatAdd(log_.back().t_us, WindowUs()), now_us);
  return u;
}

void SlidingLog::Reset(int64_t /*now_us*/) {
  log_.clear();
  sum_ = 0;
}

void SlidingLog::AppendState(std::vector<int64_t>* out) const {
  // No reserve: `out` holds a whole batch's states, and reserving exactly
  // what each limiter adds would copy them all again for every log.
  for (const Entry& e : log_) {
    out->push_back(e.t_us);
    out->push_back(e.amount);
  }
}

bool SlidingLog::RestoreState(const std::vector<int64_t>& state) {
  if (state.size() % 2 != 0) return false;
  std::deque<Entry> log;
  int64_t sum = 0;
  for (size_t i = 0; i < state.size(); i += 2) {
    Entry e{state[i], state[i + 1]};
    if (e.amount <= 0) return false;
    if (!log.empty() && e.t_us < log.back().t_us) return false;
    log.push_back(e);
    sum = SatAdd(sum, e.amount);
  }
  log_ = std::move(log);
  sum_ = sum;
  return true;
}

}  // namespace brake
