// Each subject's limiters, resolved against the current policies: made,
// reconfigured or replaced when a policy changed, and found by name.
#include <algorithm>
#include <memory>

#include "budget/engine.h"

namespace brake {
namespace {

// Where the subject's limiter `name` is held, or nullptr.
std::unique_ptr<Limiter>* LimiterSlot(Subject& s, std::string_view name) {
  for (auto& l : s.limiters) {
    if (l->spec().name == name) return &l;
  }
  return nullptr;
}

}  // namespace

Limiter* Engine::FindLimiter(const std::string& scope, std::string_view name) {
  auto* e = subjects_.find(scope);
  if (e == nullptr) return nullptr;
  std::unique_ptr<Limiter>* slot = LimiterSlot(e->second, name);
  return slot == nullptr ? nullptr : slot->get();
}

std::unique_ptr<Limiter> Engine::NewLimiter(
    const std::string& scope, const std::shared_ptr<const LimitSpec>& spec,
    int64_t now_us) const {
  if (make_limiter_) return make_limiter_(scope, spec, now_us);
  return MakeLimiter(spec, now_us);
}

Limiter* Engine::Instance(Subject& s, const std::string& scope,
                          const Policy& policy, size_t i, int64_t now_us,
                          bool create) {
  const std::shared_ptr<const LimitSpec>& spec = policy.shared[i];
  std::unique_ptr<Limiter>* slot = LimiterSlot(s, spec->name);
  if (slot == nullptr) {
    if (!create) return nullptr;
    s.limiters.push_back(NewLimiter(scope, spec, now_us));
    return s.limiters.back().get();
  }
  Limiter* l = slot->get();
  if (l->Shares(spec.get())) return l;
  // In cluster mode a limit turned local or shadow (or back) changes
  // which kind of limiter it needs.
  const bool same_sharing = !make_limiter_ ||
                            (l->spec().local == spec->local &&
                             l->spec().shadow == spec->shadow);
  if (l->spec().algorithm == spec->algorithm &&
      l->spec().resource == spec->resource && same_sharing) {
    l->Reconfigure(spec);
    return l;
  }
  if (!create) return nullptr;
  *slot = NewLimiter(scope, spec, now_us);
  BumpLimitsGen();  // subjects' resolved limiters are stale
  // Open leases charged the limiter just replaced, not this one: settling
  // them must neither refund nor release (a concurrency slot) here.
  leases_.ForEachOpen([&](Lease& lease) {
    auto& charges = lease.charges;
    auto gone = std::remove_if(charges.begin(), charges.end(),
                               [&](const LeaseCharge& c) {
                                 return lease.ScopeOf(c) == scope &&
                                        std::string_view(c.limit) == spec->name;
                               });
    if (gone != charges.end()) {
      charges.erase(gone, charges.end());
      leases_.MarkChanged(lease);
    }
  });
  return slot->get();
}

void Engine::CollectLimits(const std::vector<std::string>& scopes,
                           int64_t now_us, std::vector<Applied>* out) {
  for (const std::string& scope : scopes) {
    const Policy* policy = PolicyFor(scope);
    if (policy == nullptr) continue;
    auto* e = subjects_.find(scope);
    for (size_t i = 0; i < policy->shared.size(); ++i) {
      Limiter* limiter =
          e == nullptr ? nullptr
                       : Instance(e->second, scope, *policy, i, now_us, false);
      out->push_back(Applied{&scope, policy->shared[i].get(), limiter});
    }
  }
}

void Engine::Resolve(const std::string& scope, Subject& s, int64_t now_us) {
  if (s.limits_gen == limits_gen_) return;
  s.policy = PolicyFor(scope);
  if (s.policy != nullptr) {
    auto& mine = s.limiters;
    for (size_t i = 0; i < s.policy->shared.size(); ++i) {
      Limiter* l = Instance(s, scope, *s.policy, i, now_us, /*create=*/true);
      // Into place i; those before it are limits 0..i-1, named otherwise.
      auto at = std::find_if(
          mine.begin() + static_cast<std::ptrdiff_t>(i), mine.end(),
          [l](const std::unique_ptr<Limiter>& p) { return p.get() == l; });
      std::iter_swap(mine.begin() + static_cast<std::ptrdiff_t>(i), at);
    }
  }
  // Instance may have replaced one of them (and moved the generation on):
  // these are current as of now.
  s.limits_gen = limits_gen_;
}

void Engine::BumpLimitsGen() {
  if (++limits_gen_ != 0) return;
  // Wrapped: no subject may still hold a value that will come round again.
  for (auto& [scope, subject] : subjects_) subject.limits_gen = 0;
  limits_gen_ = 1;
}

}  // namespace brake
