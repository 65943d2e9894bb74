// Engine persistence: restoring state loaded at startup and draining the
// changes made since the last batch. Split from engine.cc; same class.
#include <utility>

#include "budget/engine.h"

namespace brake {

void Engine::RestoreTask(const TaskRow& row, int64_t now_us) {
  SetTaskRecord(*Use("task:", row.task, now_us).subject,
                TaskInfo{row.parent, row.user, row.created_ms});
}

void Engine::SetTaskRecord(Subject& s, TaskInfo record) {
  if (!s.has_task) ++task_count_;
  // Its user's subject when in memory (a grant has just used it; a load
  // brings it with the task), so that its first decision finds it cached.
  auto* user = subjects_.find(ScopeRef{"user:", record.user});
  s.owner = user != nullptr ? CachedSubject{subject_epoch_, user}
                            : CachedSubject{};
  s.task = std::move(record);
  s.has_task = true;
}

void Engine::MarkTaskUnsaved(Resident r) {
  if (r.subject->task_unsaved) return;
  r.subject->task_unsaved = true;
  dirty_tasks_.push_back(r);
}

void Engine::RestoreLimiter(const LimiterRow& row, int64_t now_us) {
  const Policy* policy = PolicyFor(row.scope);
  if (policy == nullptr) return;
  for (size_t i = 0; i < policy->limits.size(); ++i) {
    const LimitSpec& spec = policy->limits[i];
    if (spec.name != row.name || AlgorithmName(spec.algorithm) != row.algorithm)
      continue;
    Resident r = Use("", row.scope, now_us);
    Limiter* l = Instance(*r.subject, *r.scope, *policy, i, now_us,
                          /*create=*/true);
    if (!l->RestoreState(row.state)) l->Reset(now_us);
    return;
  }
}

void Engine::RestoreSpend(const SpendRow& row) {
  subjects_[row.scope].spend = Totals{row.requests, row.tokens, row.usd_nano};
}

void Engine::RestoreLease(Lease lease, int64_t now_us) {
  Totals reserved{lease.requests, lease.tokens, lease.usd_nano};
  // Its reserved scopes point at their subjects' keys from now on (its
  // own copies may go with it).
  for (uint32_t i = 0; i < lease.reserved; ++i) {
    Resident r = Use("", *lease.scopes[i], now_us);
    ++r.subject->leases;
    AddTotals(r.subject->reserved, reserved, 1);
    lease.scopes[i] = r.scope;
  }
  // Concurrency counts are derived from open leases, not persisted: a
  // concurrency limiter without a stored row is made from its policy.
  for (const LeaseCharge& c : lease.charges) {
    const std::string& scope = lease.ScopeOf(c);
    Limiter* l = FindLimiter(scope, c.limit);
    const Policy* policy = l == nullptr ? PolicyFor(scope) : nullptr;
    for (size_t i = 0; policy != nullptr && i < policy->limits.size(); ++i) {
      const LimitSpec& spec = policy->limits[i];
      if (spec.name == std::string_view(c.limit) && spec.algorithm == Algorithm::kConcurrency) {
        Resident r = Use("", scope, now_us);
        l = Instance(*r.subject, *r.scope, *policy, i, now_us,
                     /*create=*/true);
      }
    }
    if (l != nullptr && l->spec().algorithm == Algorithm::kConcurrency) {
      l->Charge(c.amount, now_us);
    }
  }
  // Lease ids of an earlier run carry its prefix, so they never collide.
  leases_.Restore(std::move(lease));
}

bool Engine::Drain(Batch* batch, const LeaseEncoder& encode) {
  bool any = false;
  // First: a kind's stored rows go before this batch's puts of its subjects
  // in memory (the store runs deletes before puts).
  for (const std::string& kind : dirty_kind_resets_) {
    any = true;
    batch->limiter_scopes_deleted.push_back(kind);
    batch->spend_deleted.push_back(kind);
  }
  for (const std::string& scope : dirty_policies_) {
    any = true;
    if (const Policy* p = GetPolicy(scope)) {
      batch->policies_put.push_back(PolicyRow{scope, p->json});
    } else {
      batch->policies_deleted.push_back(scope);
    }
  }
  for (const std::string& model : dirty_prices_) {
    any = true;
    const Price& p = prices_.at(model);
    batch->prices_put.push_back(
        PriceRow{model, p.input_nano_per_mtok, p.output_nano_per_mtok});
  }
  for (const Resident& r : dirty_tasks_) {
    any = true;
    r.subject->task_unsaved = false;
    const TaskInfo& t = r.subject->task;
    batch->tasks_put.push_back(TaskRow{r.scope->substr(5), t.user, t.parent,
                                       t.created_ms});
  }
  // Every limiter of a listed subject is saved (one that changed is
  // usually charged with the others; one replaced since is saved too).
  for (const Resident& r : dirty_limiters_) {
    r.subject->limiters_unsaved = false;
    for (const auto& l : r.subject->limiters) {
      any = true;
      batch->limiters_put.Add(
          *r.scope, l->spec().name, AlgorithmName(l->spec().algorithm),
          [&](std::vector<int64_t>* state) { l->AppendState(state); });
    }
  }
  for (const Resident& r : dirty_spend_) {
    any = true;
    r.subject->spend_unsaved = false;
    const Totals spend = r.subject->spend;
    if (spend.requests == 0 && spend.tokens == 0 && spend.usd_nano == 0) {
      batch->spend_deleted.push_back(*r.scope);  // a reset: no row is zero
    } else {
      batch->spend_put.Copy(
          SpendView{*r.scope, spend.requests, spend.tokens, spend.usd_nano});
    }
  }
  if (leases_.Drain(batch, encode)) any = true;
  if (!ledger_.empty()) {
    any = true;
    // The rows move to the batch, whose room (a recycled batch's) the
    // ledger takes in exchange; the next rows get room for as many as
    // these.
    const size_t rows = ledger_.size();
    const size_t bytes = ledger_.text_size();
    batch->ledger_append.Append(std::move(ledger_));
    ledger_.reserve(rows, bytes);
  }
  dirty_policies_.clear();
  dirty_prices_.clear();
  dirty_tasks_.clear();
  dirty_limiters_.clear();
  dirty_spend_.clear();
  dirty_kind_resets_.clear();
  return any;
}

}  // namespace brake
