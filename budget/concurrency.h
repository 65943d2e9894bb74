// Concurrency: at most `limit` leases open at once.
//
// Counts leases, not units: Check admits iff one more lease fits, Charge opens
// one, Release closes one, whatever their amounts. Capacity returns only when
// a lease ends, which the limiter cannot foresee, so a denial's retry time is
// kNever and the daemon re-checks on release. The open count is not persisted:
// after a restart the daemon rebuilds it from its open leases (SetOpen or one
// Hold per lease). Loop thread only.
#pragma once

#include <cstdint>
#include <vector>

#include "budget/limiter.h"

namespace brake {

class Concurrency final : public Limiter {
 public:
  // No open leases.
  Concurrency(SpecRef spec, int64_t now_us);

  // kAdmit iff open + 1 <= limit; kDeny with kNever otherwise; kTooLarge when
  // the limit is below 1. `amount` is ignored.
  Decision Check(int64_t amount, int64_t now_us) override;
  void Charge(int64_t amount, int64_t now_us) override;
  // No-op: the lease count does not depend on amounts.
  void Settle(int64_t delta, int64_t charged_at_us, int64_t now_us) override;
  void Release(int64_t amount, int64_t charged_at_us, int64_t now_us) override;
  // As Charge: one lease more is open.
  void Hold(int64_t amount, int64_t /*charged_at_us*/, int64_t now_us) override {
    Charge(amount, now_us);
  }
  // used = open leases; resets_in_us is 0 with none open, else kNever.
  LimitUsage Usage(int64_t now_us) override;
  void Reset(int64_t now_us) override;
  // Always empty; RestoreState accepts only an empty state (and keeps the
  // current count).
  void AppendState(std::vector<int64_t>* out) const override;
  bool RestoreState(const std::vector<int64_t>& state) override;

  int64_t open() const { return open_; }
  // Sets the open lease count (negative counts are taken as 0).
  void SetOpen(int64_t open) { open_ = open > 0 ? open : 0; }

 private:
  int64_t open_ = 0;
};

}  // namespace brake
