// Reading and resetting: the limits that apply to a scope with their usage
// (status), and clearing a scope's counters and spend (reset).
#include <algorithm>
#include <string>
#include <vector>

#include "budget/engine.h"

namespace brake {
namespace {


bool IsWildcard(const std::string& scope) {
  return scope.size() >= 2 && scope.compare(scope.size() - 2, 2, ":*") == 0;
}

}  // namespace

std::vector<std::string> Engine::StatusScopes(const std::string& scope) const {
  std::vector<std::string> scopes{"global"};
  if (scope.rfind("task:", 0) == 0) {
    if (const TaskInfo* task = subjects_.FindTask(std::string_view(scope).substr(5))) {
      scopes.push_back("user:" + task->user);
      scopes.push_back(scope);
      const std::string* parent = &task->parent;
      for (size_t depth = 0; !parent->empty() && depth < SubjectTable::kMaxTaskDepth;
           ++depth) {
        scopes.push_back("task:" + *parent);
        const TaskInfo* p = subjects_.FindTask(*parent);
        if (p == nullptr) break;
        parent = &p->parent;
      }
    } else {
      scopes.push_back(scope);
    }
  } else if (scope != "global") {
    scopes.push_back(scope);
  }
  return scopes;
}

StatusReport Engine::Report(const std::string& scope, int64_t now_us) {
  StatusReport report;
  report.scope = scope;
  std::vector<std::string> scopes = StatusScopes(scope);
  std::vector<Applied> applied;
  CollectLimits(scopes, now_us, &applied);
  for (const Applied& a : applied) {
    LimitUsage usage;
    if (a.limiter != nullptr) {
      usage = a.limiter->Usage(now_us);
    } else {
      usage = MakeLimiter(*a.spec, now_us)->Usage(now_us);  // never used yet
    }
    report.limits.push_back(LimitStatus{*a.scope, *a.spec, usage});
  }
  if (const auto* e = subjects_.find(scope)) {
    report.spend = e->second.spend;
    report.reserved = e->second.reserved;
  }
  return report;
}

void Engine::Reset(const std::string& scope, int64_t now_us) {
  ++mutations_;
  const bool wildcard = IsWildcard(scope);
  // A `*` scope resets every subject of its kind in memory (and, through
  // the dirty log, those stored).
  const std::string_view kind =
      std::string_view(scope).substr(0, scope.size() - 1);
  auto covers = [&](const std::string& name) {
    return wildcard ? name.starts_with(kind) : name == scope;
  };
  // Counters and spend go (reservations stay: their leases are still open).
  // A reset is a use: the subjects it changes stay in memory until stored.
  auto reset = [&](Resident r) {
    Subject& subject = *r.subject;
    subject.used_us = std::max(subject.used_us, now_us);
    for (auto& limiter : subject.limiters) limiter->Reset(now_us);
    if (!subject.limiters.empty()) dirty_.MarkLimiters(r);
    if (subject.spend.requests != 0 || subject.spend.tokens != 0 ||
        subject.spend.usd_nano != 0) {
      subject.spend = Totals{};
      dirty_.MarkSpend(r);
    }
  };
  if (wildcard) {
    ++kind_resets_;
    dirty_.MarkKindReset(scope);
    for (auto& [name, subject] : subjects_) {
      if (covers(name)) reset(Resident{&name, &subject});
    }
  } else {
    reset(subjects_.Use("", scope, now_us));
  }
  // Open leases still hold what they reserved: re-charge concurrency so the
  // count of open leases stays true.
  leases_.ForEachOpen([&](Lease& lease) {
    for (const LeaseCharge& c : lease.charges) {
      const std::string& charged = lease.ScopeOf(c);
      if (!covers(charged)) continue;
      Limiter* l = FindLimiter(charged, c.limit);
      if (l != nullptr && l->spec().algorithm == Algorithm::kConcurrency) {
        l->Charge(c.amount, now_us);
      }
    }
  });
}

}  // namespace brake
