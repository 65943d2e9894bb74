#include "budget/fixed_window.h"

#include <algorithm>
#include <utility>

#include "common/sat_math.h"

namespace brake {

using sat::FloorDiv;
using sat::kMax;
using sat::kMin;
using sat::MsToUs;
using sat::SatAdd;
using sat::SatMul;
using sat::SatSub;
using sat::Until;

FixedWindow::FixedWindow(SpecRef spec, int64_t now_us)
    : Limiter(std::move(spec)), window_start_us_(AlignedStartUs(now_us)) {}

int64_t FixedWindow::WindowUs() const {
  return std::max<int64_t>(MsToUs(spec_->window_ms), 1);
}

int64_t FixedWindow::WindowEndUs() const {
  return SatAdd(window_start_us_, WindowUs());
}

int64_t FixedWindow::AlignedStartUs(int64_t now_us) const {
  return SatMul(FloorDiv(now_us, WindowUs()), WindowUs());
}

void FixedWindow::Roll(int64_t now_us) {
  // Rolling on "the current window has ended" rather than "the aligned start
  // differs" keeps the count when a reconfigured window length would align
  // differently; a clock that steps back never reopens a window.
  if (now_us >= WindowEndUs()) {
    window_start_us_ = AlignedStartUs(now_us);
    count_ = 0;
  }
}

Decision FixedWindow::Check(int64_t amount, int64_t now_us) {
  if (amount <= 0) return {};
  if (amount > spec_->limit) return {Verdict::kTooLarge, 0};
  Roll(now_us);
  if (SatAdd(count_, amount) <= spec_->limit) return {};
  return {Verdict::kDeny, Until(WindowEndUs(), now_us)};
}

void FixedWindow::Charge(int64_t amount, int64_t now_us) {
  if (amount <= 0) return;
  Roll(now_us);
  count_ = SatAdd(count_, amount);
}

void FixedWindow::Settle(int64_t delta, int64_t charged_at_us, int64_t now_us) {
  Roll(now_us);
  if (delta > 0) {
    count_ = SatAdd(count_, delta);
  } else if (delta < 0 && charged_at_us >= window_start_us_ &&
             charged_at_us < WindowEndUs()) {
    int64_t refund = delta == kMin ? kMax : -delta;
    count_ = std::max<int64_t>(SatSub(count_, refund), 0);
  }
}

LimitUsage FixedWindow::Usage(int64_t now_us) {
  Roll(now_us);
  LimitUsage u;
  u.limit = spec_->limit;
  u.used = count_;
  u.remaining = SatSub(spec_->limit, count_);
  u.resets_in_us = count_ == 0 ? 0 : Until(WindowEndUs(), now_us);
  return u;
}

void FixedWindow::Reset(int64_t now_us) {
  window_start_us_ = AlignedStartUs(now_us);
  count_ = 0;
}

void FixedWindow::AppendState(std::vector<int64_t>* out) const {
  out->insert(out->end(), {window_start_us_, count_});
}

bool FixedWindow::RestoreState(const std::vector<int64_t>& state) {
  if (state.size() != 2 || state[1] < 0) return false;
  window_start_us_ = state[0];
  count_ = state[1];
  return true;
}

}  // namespace brake
