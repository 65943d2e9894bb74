// Cluster mode's wiring into the daemon (docs/CLUSTER.md): the Cluster (the
// shares and the link to Redis) made before anything is restored, so that
// every limiter of a shared limit is a shared one; its timer; its stop.
#include "daemon/daemon.h"

#include "daemon/log.h"

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
    d->cluster_->Tick(d->clock_.NowUs(),
                      ++d->cluster_ticks_ % kScanEveryTicks == 0);
  }, kClusterTickMs, kClusterTickMs);
}

void Daemon::StopCluster() {
  if (!cluster_) return;
  uv_timer_stop(&cluster_timer_);
  cluster_->Close(clock_.NowUs());
}

void Daemon::Redo(uint64_t conn, std::string request) {
  server_->Redo(conn, std::move(request));
}

}  // namespace brake
