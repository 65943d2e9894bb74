// DirtyLog: what changed in the engine since storage last took its changes.
//
// Policies and prices are listed by name; subjects (their spend, their
// limiters, their task record) by pointer, each listed once and flagged on
// the subject itself, which keeps it from being evicted until Drain; resets
// of a whole kind ("user:*") by name; settlements as ledger rows. Drain moves
// it all into a storage batch. Pure: no IO.
#pragma once

#include <functional>
#include <set>
#include <string>
#include <vector>

#include "budget/engine_types.h"
#include "budget/pricing.h"
#include "budget/subject.h"
#include "common/ledger_rows.h"
#include "common/records.h"

namespace brake {

class DirtyLog {
 public:
  void MarkPolicy(const std::string& scope) { policies_.insert(scope); }
  void MarkPrice(const std::string& model) { prices_.insert(model); }
  // A reset of every subject of a kind: its stored rows go.
  void MarkKindReset(const std::string& kind) { kind_resets_.push_back(kind); }
  // Inline: a grant and a settlement mark each of their subjects.
  void MarkLimiters(Resident r) {
    if (r.subject->limiters_unsaved) return;
    r.subject->limiters_unsaved = true;
    limiters_.push_back(r);
  }
  void MarkSpend(Resident r) {
    if (r.subject->spend_unsaved) return;
    r.subject->spend_unsaved = true;
    spend_.push_back(r);
  }
  void MarkTask(Resident r) {
    if (r.subject->task_unsaved) return;
    r.subject->task_unsaved = true;
    tasks_.push_back(r);
  }
  // Settlements, appended in order.
  LedgerRows& ledger() { return ledger_; }

  bool empty() const {
    return policies_.empty() && prices_.empty() && tasks_.empty() &&
           limiters_.empty() && spend_.empty() && kind_resets_.empty() &&
           ledger_.empty();
  }
  bool kind_reset_pending() const { return !kind_resets_.empty(); }

  // Moves every change into `batch`, reading what each listed policy and
  // price is now (`policy_of` answers nullptr for one deleted). Returns
  // false when there was nothing.
  bool Drain(Batch* batch,
             const std::function<const Policy*(const std::string&)>& policy_of,
             const PriceTable& prices);

 private:
  std::set<std::string> policies_;
  std::set<std::string> prices_;
  std::vector<Resident> tasks_;
  std::vector<Resident> limiters_;
  std::vector<Resident> spend_;
  std::vector<std::string> kind_resets_;
  LedgerRows ledger_;
};

}  // namespace brake
