#include "budget/dirty_log.h"

#include <utility>

namespace brake {

bool DirtyLog::Drain(
    Batch* batch,
    const std::function<const Policy*(const std::string&)>& policy_of,
    const PriceTable& prices) {
  bool any = false;
  // First: a kind's stored rows go before this batch's puts of its subjects
  // in memory (the store runs deletes before puts).
  for (const std::string& kind : kind_resets_) {
    any = true;
    batch->limiter_scopes_deleted.push_back(kind);
    batch->spend_deleted.push_back(kind);
  }
  for (const std::string& scope : policies_) {
    any = true;
    if (const Policy* p = policy_of(scope)) {
      batch->policies_put.push_back(PolicyRow{scope, p->json});
    } else {
      batch->policies_deleted.push_back(scope);
    }
  }
  for (const std::string& model : prices_) {
    any = true;
    const Price& p = prices.at(model);
    batch->prices_put.push_back(
        PriceRow{model, p.input_nano_per_mtok, p.output_nano_per_mtok});
  }
  for (const Resident& r : tasks_) {
    any = true;
    r.subject->task_unsaved = false;
    const TaskInfo& t = r.subject->task;
    batch->tasks_put.push_back(TaskRow{r.scope->substr(5), t.user, t.parent,
                                       t.created_ms});
  }
  // Every limiter of a listed subject is saved (one that changed is
  // usually charged with the others; one replaced since is saved too).
  for (const Resident& r : limiters_) {
    r.subject->limiters_unsaved = false;
    for (const auto& l : r.subject->limiters) {
      any = true;
      batch->limiters_put.Add(
          *r.scope, l->spec().name, AlgorithmName(l->spec().algorithm),
          [&](std::vector<int64_t>* state) { l->AppendState(state); });
    }
  }
  for (const Resident& r : spend_) {
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
  policies_.clear();
  prices_.clear();
  tasks_.clear();
  limiters_.clear();
  spend_.clear();
  kind_resets_.clear();
  return any;
}

}  // namespace brake
