// Cluster mode's wiring into the daemon (docs/CLUSTER.md): the Cluster (the
// shares and the link to Redis) made before anything is restored, so that
// every limiter of a shared limit is a shared one; its timer; its stop.
#include "daemon/daemon.h"

#include "breaker/breaker_spec.h"
#include "daemon/json_fields.h"
#include "daemon/log.h"
#include "daemon/policy_codec.h"

#ifdef BRAKE_HAVE_HIREDIS
#include "cluster/cluster.h"
#endif

namespace brake {
namespace {

constexpr uint64_t kClusterTickMs = 10;
constexpr uint64_t kScanEveryTicks = 10;  // renewals and give-backs: 100 ms

}  // namespace

Status Daemon::StartCluster() {
  if (!config_.cluster) return Status::Ok();
#ifdef BRAKE_HAVE_HIREDIS
  auto c = std::make_unique<cluster::Cluster>(
      &loop_, *config_.cluster, [this] { return clock_.NowUs(); });
  engine_->set_limiter_maker(c->MakerFor());
  cluster_ = std::move(c);
  dispatcher_->set_cluster(cluster_.get());
  dispatcher_->decider()->set_share_breakers(true);
  cluster_->set_on_policies(
      [this](const cluster::Gate::PolicyMap& remote, bool first) {
        AdoptSharedPolicies(remote, first);
      });
  cluster_->set_on_breakers([this](const cluster::Gate::BreakerMap& remote) {
    AdoptSharedBreakers(remote);
  });
  cluster_->set_on_resets(
      [this](const cluster::Gate::ResetMap& remote, bool first) {
        AdoptSharedResets(remote, first);
      });
  cluster_->Tick(clock_.NowUs(), false);  // connects
  Log(LogLevel::kInfo, "cluster: node %s, prefix %s, redis %s (%s while it "
      "is away)", config_.cluster->node.c_str(),
      config_.cluster->prefix.c_str(), config_.cluster->redis.text.c_str(),
      config_.cluster->on_unavailable == cluster::OnUnavailable::kLocal
          ? "local shares"
          : "fail closed");
  return Status::Ok();
#else
  return Status::BadRequest(
      "cluster: this braked was built without hiredis (install "
      "libhiredis-dev and build again)");
#endif
}

void Daemon::StartClusterTimer() {
  if (!cluster_) return;
  cluster_->set_on_answers([this] { waiters_->Poke(); });
  uv_timer_init(&loop_, &cluster_timer_);
  cluster_timer_.data = this;
  uv_timer_start(&cluster_timer_, [](uv_timer_t* h) {
    auto* d = static_cast<Daemon*>(h->data);
    d->PublishBreakers();
    d->cluster_->Tick(d->clock_.NowUs(),
                      ++d->cluster_ticks_ % kScanEveryTicks == 0);
  }, kClusterTickMs, kClusterTickMs);
}

void Daemon::StopCluster() {
  if (!cluster_) return;
  uv_timer_stop(&cluster_timer_);
  cluster_->Close(clock_.NowUs());
}

// Redis holds the policies of the cluster. The first read after start: an
// empty store takes this daemon's policies (the first daemon of a cluster);
// otherwise the store's replace this daemon's, and then the config file's
// policies are set again on top (the file wins, as on one node). Later
// reads apply what changed.
void Daemon::AdoptSharedPolicies(const cluster::Gate::PolicyMap& remote,
                                 bool first) {
  if (first && remote.empty()) {
    for (const auto& [scope, policy] : engine_->policies()) {
      cluster_->PublishPolicy(scope, policy.json);
    }
    return;
  }
  for (const auto& [scope, text] : remote) {
    const Policy* current = engine_->GetPolicy(scope);
    if (current != nullptr && current->json == text) continue;
    auto policy = ParsePolicyText(text);
    Status s = policy.ok() ? ValidateScope(scope, "scope") : policy.status();
    if (s.ok()) s = CheckPolicyScope(scope, *policy, "");
    if (s.ok()) s = CheckClusterPolicy(*policy, "");
    if (!s.ok()) {
      Log(LogLevel::kWarn, "cluster: policy of %s in Redis ignored: %s",
          scope.c_str(), s.message().c_str());
      continue;
    }
    dispatcher_->decider()->SetPolicy(scope, std::move(*policy));
  }
  std::vector<std::string> gone;
  for (const auto& [scope, policy] : engine_->policies()) {
    if (!remote.count(scope)) gone.push_back(scope);
  }
  for (const std::string& scope : gone) {
    dispatcher_->decider()->DeletePolicy(scope);
  }
  if (first) {
    for (const auto& [scope, policy] : config_.policies) {
      auto it = remote.find(scope);
      if (it != remote.end() && it->second == policy.json) continue;
      dispatcher_->decider()->SetPolicy(scope, policy);
      cluster_->PublishPolicy(scope, policy.json);
    }
  }
}

// A resource: or global breaker open in Redis is opened here until the
// same time; one that left Redis (reset on another daemon) is reset here.
void Daemon::AdoptSharedBreakers(const cluster::Gate::BreakerMap& remote) {
  const int64_t now = clock_.NowUs();
  Decider& decider = *dispatcher_->decider();
  for (const auto& [scope, open] : remote) {
    breaker::Cause cause;
    if (open.open_until_us <= now || !breaker::ParseCause(open.cause, &cause) ||
        ValidateScope(scope, "scope").ok() == false) {
      continue;
    }
    std::vector<BreakerView> views = decider.Views({scope}, now);
    if (!views.empty() && views[0].snapshot.state == breaker::BreakerState::kOpen &&
        views[0].snapshot.open_until_us >= open.open_until_us) {
      continue;
    }
    decider.ApplyShared(SharedBreaker{scope, cause, open.open_until_us}, now);
  }
  for (const std::string& scope : shared_breakers_) {
    if (remote.count(scope)) continue;
    decider.ApplyShared(SharedBreaker{scope, breaker::Cause::kNone, 0}, now);
  }
  shared_breakers_.clear();
  for (const auto& [scope, open] : remote) shared_breakers_.insert(scope);
}

// A reset made on any daemon resets this daemon's counters of the scope
// (the shared ones were reset in Redis). Resets made before this daemon's
// first read are history: its stored state is what it is.
void Daemon::AdoptSharedResets(const cluster::Gate::ResetMap& remote,
                               bool first) {
  for (const auto& [scope, at_us] : remote) {
    int64_t& seen = resets_seen_[scope];
    if (at_us <= seen) continue;
    seen = at_us;
    if (first || !ValidateScope(scope, "scope").ok() || scope.ends_with("*")) {
      continue;
    }
    engine_->Reset(scope, clock_.NowUs());
  }
}

void Daemon::PublishBreakers() {
  for (const SharedBreaker& b : dispatcher_->decider()->TakeSharedChanges()) {
    cluster_->PublishBreaker(
        b.scope,
        b.cause == breaker::Cause::kNone ? std::string()
                                         : std::string(breaker::CauseName(b.cause)),
        b.open_until_us);
  }
}

void Daemon::Redo(uint64_t conn, std::string request) {
  server_->Redo(conn, std::move(request));
}

}  // namespace brake
