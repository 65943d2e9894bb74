#include "daemon/decider.h"

#include <algorithm>

#include <nlohmann/json.hpp>

#include "breaker/fingerprint.h"
#include "daemon/breaker_codec.h"

namespace brake {
namespace {

std::string DefaultOf(const std::string& scope) {
  size_t colon = scope.find(':');
  return colon == std::string::npos ? "" : scope.substr(0, colon + 1) + "*";
}

breaker::Outcome OutcomeOf(const std::string& name) {
  breaker::Outcome o = breaker::Outcome::kOk;
  breaker::ParseOutcome(name, &o);
  return o;
}

}  // namespace

Decider::Decider(Engine* engine) : engine_(engine) {}

void Decider::SetPolicy(const std::string& scope, Policy policy) {
  std::optional<breaker::BreakerSpec> spec;
  if (!policy.breaker_json.empty()) {
    auto parsed = ParseBreaker(nlohmann::json::parse(policy.breaker_json),
                               "breaker");
    if (parsed.ok()) spec = *parsed;
  }
  SetPolicy(scope, std::move(policy), spec);
}

void Decider::SetPolicy(const std::string& scope, Policy policy,
                        const std::optional<breaker::BreakerSpec>& spec) {
  if (spec) {
    specs_[scope] = *spec;
  } else {
    specs_.erase(scope);
  }
  engine_->SetPolicy(scope, std::move(policy));
}

bool Decider::DeletePolicy(const std::string& scope) {
  specs_.erase(scope);
  return engine_->DeletePolicy(scope);
}

std::optional<breaker::BreakerSpec> Decider::SpecFor(
    const std::string& scope) const {
  // A scope's own policy decides alone when it has one (as for limits).
  if (engine_->GetPolicy(scope) != nullptr) {
    auto it = specs_.find(scope);
    if (it == specs_.end()) return std::nullopt;
    return it->second;
  }
  auto it = specs_.find(DefaultOf(scope));
  if (it == specs_.end()) return std::nullopt;
  return it->second;
}

breaker::Breaker* Decider::For(const std::string& scope,
                               bool create_default) {
  // With no BREAKER policy anywhere SpecFor finds nothing, and its policy
  // lookups (which build the default scope's name) cost about a tenth of
  // a granted acquire through the dispatcher: skip them.
  std::optional<breaker::BreakerSpec> spec;
  if (!specs_.empty()) spec = SpecFor(scope);
  auto it = breakers_.find(scope);
  if (it != breakers_.end()) {
    if (spec && !(it->second->spec() == *spec)) {
      it->second->Reconfigure(*spec);
    }
    return it->second.get();
  }
  if (!spec && !create_default) return nullptr;
  auto made = std::make_unique<breaker::Breaker>(spec ? *spec
                                                      : breaker::BreakerSpec{});
  breaker::Breaker* b = made.get();
  breakers_.emplace(scope, std::move(made));
  return b;
}

void Decider::Touch(const std::string& scope, breaker::Breaker* b,
                    bool changed) {
  std::vector<breaker::Transition> transitions = b->TakeTransitions();
  if (changed || !transitions.empty()) {
    dirty_.insert(scope);
    ++mutations_;
  }
  const bool shared = share_breakers_ && !applying_shared_ &&
                      (scope == "global" || scope.rfind("resource:", 0) == 0);
  for (const breaker::Transition& t : transitions) {
    if (shared && (t.to == breaker::BreakerState::kOpen ||
                   (t.to == breaker::BreakerState::kClosed &&
                    t.cause == breaker::Cause::kNone &&
                    t.from == breaker::BreakerState::kOpen))) {
      shared_changes_.push_back(SharedBreaker{
          scope, t.to == breaker::BreakerState::kOpen ? t.cause
                                                      : breaker::Cause::kNone,
          t.to == breaker::BreakerState::kOpen ? b->View(t.at_us).open_until_us
                                               : 0});
    }
    if (t.to == breaker::BreakerState::kOpen &&
        t.from != breaker::BreakerState::kOpen &&
        static_cast<size_t>(t.cause) < trips_.size()) {
      ++trips_[static_cast<size_t>(t.cause)];
    }
    std::string line = "breaker " + scope + " " +
                       std::string(breaker::StateName(t.from)) + " -> " +
                       std::string(breaker::StateName(t.to));
    if (t.cause != breaker::Cause::kNone) {
      line += " (" + std::string(breaker::CauseName(t.cause));
      if (!t.figures.empty()) line += ": " + t.figures;
      line += ")";
    }
    log_.push_back(std::move(line));
  }
}

Status Decider::Acquire(const AcquireRequest& request, uint64_t conn,
                        int64_t now_us, AcquireOutcome* out) {
  // No breaker exists and no policy makes one: For() would find none for
  // any scope, so skip building the scopes to ask.
  if (specs_.empty() && breakers_.empty()) {
    return engine_->Acquire(request, now_us, out);
  }
  std::vector<std::string> scopes;
  if (Status s = engine_->ScopesFor(request, &scopes); !s.ok()) return s;
  struct Asked {
    std::string scope;
    breaker::Breaker* b;
    bool probe;
  };
  std::vector<Asked> asked;
  for (const std::string& scope : scopes) {
    breaker::Breaker* b = For(scope, /*create_default=*/false);
    if (b == nullptr) continue;
    breaker::Admission a = b->Check(now_us);
    Touch(scope, b, /*changed=*/false);  // only a transition is a change
    if (!a.admit) {
      *out = AcquireOutcome{};
      // Half-open with every probe slot taken: when it frees is unknown,
      // but it is not "never"; suggest one open period.
      // The scope as the breaker's key: the denial's views outlive
      // `scopes`.
      out->denial = Denial{Reason::kBreakerOpen, breakers_.find(scope)->first,
                           "breaker",
                           a.retry_after_us == breaker::kNever
                               ? b->spec().open_ms * 1000
                               : a.retry_after_us,
                           breaker::CauseName(a.cause)};
      return Status::Ok();
    }
    asked.push_back({scope, b, a.probe});
  }
  if (Status s = engine_->Acquire(request, now_us, out);
      !s.ok() || !out->granted || request.dry_run) {
    return s;
  }
  Probe probe;
  probe.conn = conn;
  for (Asked& a : asked) {
    a.b->OnAdmitted(a.probe, now_us);
    if (a.probe) probe.scopes.push_back(a.scope);
    Touch(a.scope, a.b, true);
  }
  if (!probe.scopes.empty()) probes_[out->lease] = std::move(probe);
  if (!request.fingerprint.empty()) {
    std::string task_scope = "task:" + request.task;
    if (breaker::Breaker* b = For(task_scope, false)) {
      b->OnFingerprint(breaker::HashFingerprint(request.fingerprint), now_us);
      Touch(task_scope, b, true);
    }
  }
  return Status::Ok();
}

Result<Settlement> Decider::Commit(const CommitRequest& request,
                                   int64_t retry_after_ms, int64_t now_us) {
  const breaker::Outcome outcome = OutcomeOf(request.outcome);
  std::vector<std::string> scopes;
  std::string resource;
  std::string task;
  // The lease is gone after Engine::Commit: keep what the breakers need.
  // Without any breaker (none tripped, no BREAKER policy) For() finds none
  // for these scopes, and only `throttled` creates one, so the copies (three
  // allocations per commit) are skipped then.
  const bool may_feed = !breakers_.empty() || !specs_.empty() ||
                        outcome == breaker::Outcome::kThrottled;
  if (const Lease* lease =
          may_feed ? engine_->FindLease(request.lease) : nullptr) {
    for (uint32_t i = 0; i < lease->reserved; ++i) {
      scopes.push_back(*lease->scopes[i]);
    }
    resource = lease->resource();
    task = lease->task();
  }
  auto settled = engine_->Commit(request, now_us);
  if (!settled.ok() || settled->duplicate) return settled;
  std::set<std::string> probing;
  if (auto p = probes_.find(request.lease); p != probes_.end()) {
    probing.insert(p->second.scopes.begin(), p->second.scopes.end());
    probes_.erase(p);
  }
  for (const std::string& scope : scopes) {
    breaker::Breaker* b = For(scope, false);
    if (b == nullptr) continue;
    b->OnOutcome(request.latency_ms, outcome, probing.count(scope) > 0,
                 now_us);
    b->OnSpend(settled->charged_tokens, now_us);
    Touch(scope, b, true);
  }
  if (outcome == breaker::Outcome::kThrottled) {
    // The downstream said "wait": hold it open for everyone, not just the
    // task that heard it.
    std::string held = resource.empty() ? "task:" + task : "resource:" + resource;
    breaker::Breaker* b = For(held, /*create_default=*/true);
    b->OnThrottled(retry_after_ms, now_us);
    Touch(held, b, true);
  }
  return settled;
}

void Decider::ReleaseProbes(const std::string& lease, int64_t now_us) {
  auto p = probes_.find(lease);
  if (p == probes_.end()) return;
  for (const std::string& scope : p->second.scopes) {
    if (breaker::Breaker* b = For(scope, false)) {
      b->ReleaseProbe(now_us);
      Touch(scope, b, true);
    }
  }
  probes_.erase(p);
}

Result<bool> Decider::Cancel(const std::string& lease, int64_t now_us) {
  auto r = engine_->Cancel(lease, now_us);
  if (r.ok()) ReleaseProbes(lease, now_us);
  return r;
}

int Decider::ExpireLeases(int64_t now_us) {
  std::vector<std::string> expired;
  int n = engine_->ExpireLeases(now_us, &expired);
  for (const std::string& id : expired) ReleaseProbes(id, now_us);
  return n;
}

void Decider::DropConnection(uint64_t conn, int64_t now_us) {
  std::vector<std::string> leases;
  for (const auto& [id, probe] : probes_)
    if (probe.conn == conn) leases.push_back(id);
  for (const std::string& id : leases) ReleaseProbes(id, now_us);
}

void Decider::Trip(const std::string& scope, int64_t open_ms, int64_t now_us) {
  breaker::Breaker* b = For(scope, /*create_default=*/true);
  b->Trip(open_ms, now_us);
  Touch(scope, b, true);
}

void Decider::Reset(const std::string& scope, int64_t now_us) {
  auto it = breakers_.find(scope);
  if (it == breakers_.end()) return;
  it->second->Reset(now_us);
  if (share_breakers_ && !applying_shared_ &&
      (scope == "global" || scope.rfind("resource:", 0) == 0)) {
    shared_changes_.push_back(SharedBreaker{scope, breaker::Cause::kNone, 0});
  }
  Touch(scope, it->second.get(), true);
}

std::vector<SharedBreaker> Decider::TakeSharedChanges() {
  std::vector<SharedBreaker> out;
  out.swap(shared_changes_);
  return out;
}

void Decider::ApplyShared(const SharedBreaker& shared, int64_t now_us) {
  applying_shared_ = true;
  if (shared.cause == breaker::Cause::kNone) {
    Reset(shared.scope, now_us);
  } else {
    breaker::Breaker* b = For(shared.scope, /*create_default=*/true);
    b->OpenUntil(shared.cause, shared.open_until_us,
                 "opened on another daemon of the cluster", now_us);
    Touch(shared.scope, b, true);
  }
  applying_shared_ = false;
}

std::vector<BreakerView> Decider::Views(const std::vector<std::string>& scopes,
                                        int64_t now_us) {
  std::vector<BreakerView> out;
  for (const std::string& scope : scopes) {
    auto it = breakers_.find(scope);
    if (it != breakers_.end()) {
      out.push_back(BreakerView{scope, it->second->View(now_us)});
    }
  }
  return out;
}

std::vector<BreakerView> Decider::OpenViews(int64_t now_us) {
  std::vector<BreakerView> out;
  for (const auto& [scope, b] : breakers_) {
    breaker::Snapshot s = b->View(now_us);
    if (s.state != breaker::BreakerState::kClosed) {
      out.push_back(BreakerView{scope, s});
    }
  }
  std::sort(out.begin(), out.end(),
            [](const BreakerView& a, const BreakerView& b) {
              return a.scope < b.scope;
            });
  return out;
}

void Decider::RestoreBreaker(const BreakerRow& row) {
  breaker::Breaker* b = For(row.scope, /*create_default=*/true);
  if (!b->RestoreState(row.state)) b->Reset(0);
  b->TakeTransitions();
}

size_t Decider::DropFresh(int64_t now_us, size_t max_scan) {
  if (breakers_.empty()) return 0;
  std::vector<std::string> fresh;
  const size_t buckets = breakers_.bucket_count();
  for (size_t n = 0; n < max_scan && n < buckets; ++n) {
    const size_t b = drop_cursor_++ % buckets;
    for (auto it = breakers_.begin(b); it != breakers_.end(b); ++it) {
      if (!engine_->IsResident(it->first) && it->second->IsFresh(now_us)) {
        fresh.push_back(it->first);
      }
    }
  }
  drop_cursor_ %= buckets;
  for (std::string& scope : fresh) {
    breakers_.erase(scope);
    dirty_.erase(scope);
    dropped_.push_back(std::move(scope));
  }
  return fresh.size();
}

bool Decider::Drain(Batch* batch) {
  bool any = !dropped_.empty();
  // Deletes run before puts in a batch: a breaker made anew since it was
  // dropped is put after its old row goes.
  for (std::string& scope : dropped_) {
    batch->breakers_deleted.push_back(std::move(scope));
  }
  dropped_.clear();
  for (const std::string& scope : dirty_) {
    auto it = breakers_.find(scope);
    if (it == breakers_.end()) continue;
    any = true;
    batch->breakers_put.push_back(BreakerRow{scope, it->second->SaveState()});
  }
  dirty_.clear();
  return any;
}

std::vector<std::string> Decider::TakeLog() {
  std::vector<std::string> out;
  out.swap(log_);
  return out;
}

}  // namespace brake
