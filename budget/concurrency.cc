#include "budget/concurrency.h"

#include <utility>

#include "common/sat_math.h"

namespace brake {

using sat::SatAdd;
using sat::SatSub;

Concurrency::Concurrency(SpecRef spec, int64_t /*now_us*/)
    : Limiter(std::move(spec)) {}

Decision Concurrency::Check(int64_t /*amount*/, int64_t /*now_us*/) {
  if (spec_->limit < 1) return {Verdict::kTooLarge, 0};
  if (SatAdd(open_, 1) <= spec_->limit) return {};
  return {Verdict::kDeny, kNever};
}

void Concurrency::Charge(int64_t /*amount*/, int64_t /*now_us*/) {
  open_ = SatAdd(open_, 1);
}

void Concurrency::Settle(int64_t /*delta*/, int64_t /*charged_at_us*/,
                         int64_t /*now_us*/) {}

void Concurrency::Release(int64_t /*amount*/, int64_t /*charged_at_us*/,
                          int64_t /*now_us*/) {
  // A release without a matching charge (say, after a restart that lost
  // the count) must not open extra capacity.
  if (open_ > 0) --open_;
}

LimitUsage Concurrency::Usage(int64_t /*now_us*/) {
  LimitUsage u;
  u.limit = spec_->limit;
  u.used = open_;
  u.remaining = SatSub(spec_->limit, open_);
  u.resets_in_us = open_ == 0 ? 0 : kNever;
  return u;
}

void Concurrency::Reset(int64_t /*now_us*/) { open_ = 0; }

void Concurrency::AppendState(std::vector<int64_t>*) const {}

bool Concurrency::RestoreState(const std::vector<int64_t>& state) {
  return state.empty();
}

}  // namespace brake
