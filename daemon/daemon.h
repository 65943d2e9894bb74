// Daemon: braked itself. Wires the engine, the store, the socket and the
// timers onto one libuv loop.
//
// Start() opens the database (refusing a damaged or too new one), restores
// every persisted budget, applies the config file, and listens. Run() serves
// until SIGTERM or SIGINT, then stops accepting, commits what is pending,
// answers what is held, closes every handle and returns 0 once
// uv_loop_close() succeeds. SIGHUP reloads the config file (an invalid file
// is logged and ignored). Storage batches are sealed once per loop turn
// (strict) or every flush_interval_ms (batched). Loop thread only.
#pragma once

#include <cstdint>
#include <utility>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include <uv.h>

#include "budget/engine.h"
#include "cluster/gate.h"
#include "common/status.h"
#include "daemon/clock.h"
#include "daemon/config.h"
#include "daemon/dispatcher.h"
#include "daemon/metrics_http.h"
#include "daemon/server.h"
#include "daemon/storage_worker.h"
#include "daemon/waiters.h"

namespace brake {

// The HTTP front as the daemon holds it (daemon_front.cc): there only when
// braked was built with the front's libraries and `http` is configured.
class FrontLink {
 public:
  virtual ~FrontLink() = default;
  virtual void Reconfigure(const front::FrontConfig& config) = 0;
  // Stops accepting and settles the calls in flight.
  virtual void Close(std::function<void()> on_closed) = 0;
  virtual std::string MetricsText() const = 0;
};

struct DaemonOptions {
  std::string socket_path;  // required
  std::string db_path;      // required
  std::string config_path;  // "" for the embedded defaults
};

class Daemon : public Server::Gate, public DeferredOps {
 public:
  explicit Daemon(DaemonOptions options);
  ~Daemon() override;

  // Errors: kUnavailable (database, socket), kBadRequest/kBadJson (config).
  Status Start();
  // Serves until a stop signal; returns the process exit code.
  int Run();

  uint64_t SeqForReply() override;
  bool ReplyChangedState() override;
  int64_t NowUs() override { return clock_.NowUs(); }
  void OnConnectionClosed(uint64_t conn) override;
  void Usage(uint64_t conn, nlohmann::json id, UsageQuery query) override;
  void Load(uint64_t conn, nlohmann::json id, std::vector<std::string> scopes,
            std::string request) override;
  void Redo(uint64_t conn, std::string request) override;

 private:
  // Start's steps.
  Result<std::unique_ptr<Store>> OpenStore();
  // Cluster mode (daemon_cluster.cc): the link to Redis and the engine's
  // shared limiters, before anything is restored; its timer; its stop.
  Status StartCluster();
  void StartClusterTimer();
  void StopCluster();
  // The HTTP front (daemon_front.cc), after the socket listens; its stop.
  Status StartFront();
  void StopFront();
  void AdoptSharedPolicies(const cluster::Gate::PolicyMap& remote, bool first);
  void AdoptSharedBreakers(const cluster::Gate::BreakerMap& remote);
  void AdoptSharedResets(const cluster::Gate::ResetMap& remote, bool first);
  void PublishBreakers();
  Status Serve(std::unique_ptr<Store> store);
  void ServeMetrics();
  void StartHandles();
  void MarkRunning();
  Status Restore(const Snapshot& snapshot, Store& store);
  void ApplyConfig(const Config& config, const Config* previous);
  void Seal();
  // Changes not yet sealed into a batch (limits, leases, breakers).
  bool Dirty() const;
  void OnLoopTurn();
  // Makes the loop's next poll return at once (an active idle handle), so
  // the check after it runs without waiting for an event.
  void Kick();
  void OnStorageDone(const StorageWorker::Done& done);
  void BeginShutdown(const char* why);
  void FinishShutdown();
  void Reload();
  void Housekeeping();
  // Evicts idle subjects once every change sealed by the previous call has
  // committed (so that what is evicted is surely stored).
  void EvictIdle();

  DaemonOptions options_;
  uv_loop_t loop_;
  Clock clock_;
  Config config_;
  // Before the engine: its shared limiters hold the cluster's shares.
  std::unique_ptr<cluster::Gate> cluster_;
  std::unique_ptr<Engine> engine_;
  ServerStats stats_;
  std::unique_ptr<Dispatcher> dispatcher_;
  std::unique_ptr<StorageWorker> worker_;
  std::unique_ptr<Server> server_;
  std::unique_ptr<Waiters> waiters_;
  std::unique_ptr<MetricsHttp> metrics_http_;
  std::unique_ptr<FrontLink> front_;
  uint64_t settlements_seen_ = 0;
  uint64_t mutations_seen_ = 0;

  uv_signal_t sigterm_;
  uv_signal_t sigint_;
  uv_signal_t sighup_;
  uv_timer_t housekeeping_;
  uv_timer_t flush_;
  uv_check_t check_;
  uv_idle_t kick_;  // keeps the loop turning while channels have work
  uv_timer_t cluster_timer_;  // cluster mode only
  uint64_t cluster_ticks_ = 0;
  std::set<std::string> shared_breakers_;  // in Redis at the last read
  std::map<std::string, int64_t> resets_seen_;  // scope -> the last applied
  bool handles_open_ = false;

  // Sealed batches not yet committed, with when they were sealed: in
  // batched mode replies are held once the oldest is older than
  // flush_interval_ms, so a lagging disk cannot stretch what a crash loses.
  // A vector, not a deque: a deque took and freed a block every few seals,
  // and strict mode seals every loop turn.
  std::vector<std::pair<uint64_t, int64_t>> pending_;
  uint64_t open_seq_ = 1;     // the batch being gathered
  uint64_t sealed_seq_ = 0;   // the last batch handed to storage
  // EvictIdle's barrier: the batch sealed at its last call, and when.
  uint64_t evict_barrier_seq_ = 0;
  int64_t evict_barrier_us_ = 0;
  std::string running_marker_;  // db_path + ".running" while serving
  bool stopping_ = false;
  bool finishing_ = false;
  int exit_code_ = 0;
};

}  // namespace brake
