// SharedLimiter: a limit shared by every daemon of a cluster.
//
// Wraps the limiter the limit would have on one node (which keeps the
// limit's own semantics: periods, settlement rules, too-large requests,
// state for storage) and adds the cluster's bound: a grant must also fit
// in this daemon's slice of the limit (Share). When the slice is short the
// limiter refuses and marks the share short; the daemon then holds the
// request until Redis answers and decides it again (Shares::TakeShort).
// When Redis had nothing left a moment ago (the share is dry), the refusal
// is the answer, with when to retry; for a quota, held (kHeld) while what
// all daemons' leases settled (the share's spent, which settlements here
// report) leaves room for the request, spent (kDeny until the period ends)
// once it does not.
//
// Shared: quotas, fixed windows (a cap per period or window, in cap.lua)
// and token buckets (bucket.lua). Other algorithms, shadow limits and limits
// marked local stay per daemon (Shareable). Pure; loop thread only.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "budget/limiter.h"
#include "cluster/shares.h"

namespace brake::cluster {

// Whether `spec` is shared across the cluster rather than kept per daemon.
bool Shareable(const LimitSpec& spec);
// Whether `algorithm` has a shared form at all.
bool AlgorithmShareable(Algorithm algorithm);

// The Redis key of the limit `name` of `scope` (before any period suffix).
std::string ShareKeyBase(const std::string& prefix, const std::string& scope,
                         const LimitSpec& spec);
// The start of the period (a cap) holding `now_us`: the key's suffix; 0 for
// a bucket or a total quota.
int64_t SharePeriodOf(const LimitSpec& spec, int64_t now_us);
// The whole key at `now_us`: the base, and a cap's period.
std::string ShareKeyAt(const std::string& prefix, const std::string& scope,
                       const LimitSpec& spec, int64_t now_us);

class SharedLimiter final : public Limiter {
 public:
  // `local` is the per-node limiter of the same `spec`; `shares` outlives
  // the limiter.
  SharedLimiter(SpecRef spec, std::unique_ptr<Limiter> local, cluster::Shares* shares,
                std::string key_base, int64_t now_us);
  ~SharedLimiter() override;

  Decision Check(int64_t amount, int64_t now_us) override;
  void Charge(int64_t amount, int64_t now_us) override;
  void Settle(int64_t delta, int64_t charged_at_us, int64_t now_us) override;
  void Release(int64_t amount, int64_t charged_at_us, int64_t now_us) override;
  void Hold(int64_t amount, int64_t charged_at_us, int64_t now_us) override;
  // The cluster's view: remaining is what Redis last said is left plus
  // what this daemon holds unused (never more than the local view).
  LimitUsage Usage(int64_t now_us) override;
  int64_t Remaining(int64_t now_us) override;
  // Resets the local counters only: the shared ones are Redis's.
  void Reset(int64_t now_us) override;
  void AppendState(std::vector<int64_t>* out) const override;
  bool RestoreState(const std::vector<int64_t>& state) override;

  const Share& share() const { return *share_; }

 private:
  void SpecChanged() override;
  // The start of the period (a cap) holding `now_us`; 0 for a bucket.
  int64_t PeriodOf(int64_t now_us) const;
  // Moves the share to the key of the period holding `now_us`.
  void Roll(int64_t now_us);
  ShareLimit LimitFor(int64_t period_start_us) const;
  // A quota's settled units here (its local view), to report what a
  // settlement spent to the share; 0 for other limits.
  int64_t SpentHere(int64_t now_us);
  void NoteSpent(int64_t before, int64_t now_us);

  std::unique_ptr<Limiter> local_;
  cluster::Shares* shares_;
  std::string key_base_;
  Share* share_;
  int64_t period_start_us_;
};

// Makes SharedLimiters for shareable specs and plain ones otherwise: the
// engine's limiter maker in cluster mode.
std::unique_ptr<Limiter> MakeClusterLimiter(cluster::Shares* shares,
                                            const std::string& prefix,
                                            const std::string& scope,
                                            SpecRef spec, int64_t now_us);

}  // namespace brake::cluster
