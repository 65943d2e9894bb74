// Persistence: installing state loaded from storage (at startup, and
// subjects brought back on demand) and draining the changes since the last
// batch.
#include <string>
#include <unordered_set>
#include <utility>

#include "budget/amounts.h"
#include "budget/engine.h"

namespace brake {

void Engine::RestoreSubjects(const SubjectRows& rows, int64_t now_us) {
  // Only subjects not in memory take the stored rows: the others have
  // changed since and are newer.
  std::unordered_set<std::string> fresh;
  for (const std::string& scope : rows.scopes) {
    if (!SubjectTable::IsSubject(scope) || subjects_.IsResident(scope)) {
      continue;
    }
    fresh.insert(scope);
    subjects_.Use("", scope, now_us);
  }
  for (const TaskRow& row : rows.tasks) {
    if (fresh.count("task:" + row.task)) {
      RestoreTask(row, now_us);
    }
  }
  for (const LimiterRow& row : rows.limiters) {
    if (fresh.count(row.scope)) RestoreLimiter(row, now_us);
  }
  for (const SpendRow& row : rows.spend) {
    if (fresh.count(row.scope)) {
      subjects_[row.scope].spend =
          Totals{row.requests, row.tokens, row.usd_nano};
    }
  }
}

void Engine::RestoreTask(const TaskRow& row, int64_t now_us) {
  subjects_.SetTaskRecord(*subjects_.Use("task:", row.task, now_us).subject,
                          TaskInfo{row.parent, row.user, row.created_ms});
}

void Engine::RestoreLimiter(const LimiterRow& row, int64_t now_us) {
  const Policy* policy = PolicyFor(row.scope);
  if (policy == nullptr) return;
  for (size_t i = 0; i < policy->limits.size(); ++i) {
    const LimitSpec& spec = policy->limits[i];
    if (spec.name != row.name || AlgorithmName(spec.algorithm) != row.algorithm)
      continue;
    Resident r = subjects_.Use("", row.scope, now_us);
    Limiter* l = Instance(*r.subject, *r.scope, *policy, i, now_us,
                          /*create=*/true);
    if (!l->RestoreState(row.state)) l->Reset(now_us);
    return;
  }
}

void Engine::RestoreLease(Lease lease, int64_t now_us) {
  Totals reserved{lease.requests, lease.tokens, lease.usd_nano};
  // Its reserved scopes point at their subjects' keys from now on (its
  // own copies may go with it).
  for (uint32_t i = 0; i < lease.reserved; ++i) {
    Resident r = subjects_.Use("", *lease.scopes[i], now_us);
    ++r.subject->leases;
    AddTotals(r.subject->reserved, reserved, 1);
    lease.scopes[i] = r.scope;
  }
  // What open leases hold is not persisted (concurrency counts, a quota's
  // held part): each charge is held again. A concurrency limiter without a
  // stored row is made from its policy.
  for (const LeaseCharge& c : lease.charges) {
    const std::string& scope = lease.ScopeOf(c);
    Limiter* l = FindLimiter(scope, c.limit);
    const Policy* policy = l == nullptr ? PolicyFor(scope) : nullptr;
    for (size_t i = 0; policy != nullptr && i < policy->limits.size(); ++i) {
      const LimitSpec& spec = policy->limits[i];
      if (spec.name == std::string_view(c.limit) && spec.algorithm == Algorithm::kConcurrency) {
        Resident r = subjects_.Use("", scope, now_us);
        l = Instance(*r.subject, *r.scope, *policy, i, now_us,
                     /*create=*/true);
      }
    }
    if (l != nullptr) l->Hold(c.amount, lease.granted_at_us, now_us);
  }
  // Lease ids of another run carry its prefix, so they never collide.
  leases_.Restore(std::move(lease));
}

bool Engine::Drain(Batch* batch, const LeaseEncoder& encode) {
  const bool changes = dirty_.Drain(
      batch, [this](const std::string& scope) { return GetPolicy(scope); },
      prices_);
  const bool leases = leases_.Drain(batch, encode);
  return changes || leases;
}

}  // namespace brake
