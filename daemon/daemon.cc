#include "daemon/daemon.h"

#include <fcntl.h>
#include <sys/random.h>
#include <unistd.h>

#include <algorithm>
#include <cinttypes>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string_view>
#include <utility>
#include <vector>

#include "daemon/json_fields.h"
#include "daemon/log.h"
#include "daemon/observe_ops.h"
#include "daemon/replies.h"
#include "daemon/lease_codec.h"
#include "daemon/lease_snapshot.h"
#include "daemon/policy_codec.h"

namespace brake {
namespace {

constexpr uint64_t kHousekeepingMs = 100;

// Lease ids carry a random prefix per run, so ids of leases restored from an
// earlier run never collide with new ones.
std::string RandomPrefix() {
  uint64_t r = 0;
  if (getrandom(&r, sizeof(r), 0) != sizeof(r)) {
    r = static_cast<uint64_t>(uv_hrtime());
  }
  char buf[24];
  std::snprintf(buf, sizeof(buf), "%012" PRIx64 "-", static_cast<uint64_t>(r & 0xffffffffffffULL));
  return buf;
}

template <typename T>
T* Self(void* data) {
  return static_cast<T*>(data);
}

}  // namespace

Daemon::Daemon(DaemonOptions options) : options_(std::move(options)) {
  uv_loop_init(&loop_);
}

Daemon::~Daemon() {
  // Run() closed everything; a Daemon that never ran owns no open handles
  // besides the loop, whose close may fail harmlessly.
  uv_loop_close(&loop_);
}

// Starting is five steps: the config and the database, restored
// (OpenStore); the storage thread, the server and the waiters, listening
// (Serve); the metrics endpoint, if configured (ServeMetrics); the signal
// handlers and timers (StartHandles); and the marker of a running daemon.
Status Daemon::Start() {
  Result<std::unique_ptr<Store>> store = OpenStore();
  if (!store.ok()) return store.status();
  if (Status s = Serve(std::move(*store)); !s.ok()) return s;
  ServeMetrics();
  StartHandles();
  Seal();  // persist what the config file changed
  MarkRunning();
  Log(LogLevel::kInfo, "braked %s listening on %s (durability %s)",
      BRAKE_VERSION, options_.socket_path.c_str(),
      config_.durability == Durability::kStrict ? "strict" : "batched");
  return Status::Ok();
}

Result<std::unique_ptr<Store>> Daemon::OpenStore() {
  if (!options_.config_path.empty()) {
    auto config = LoadConfigFile(options_.config_path);
    if (!config.ok()) return config.status();
    config_ = std::move(*config);
  }
  engine_ = std::make_unique<Engine>(RandomPrefix(),
                                     config_.lease_ttl_ms * 1000);
  dispatcher_ = std::make_unique<Dispatcher>(engine_.get(), &config_, &stats_);
  if (Status s = StartCluster(); !s.ok()) return s;

  // A marker file lives while the daemon runs: found at startup, the last
  // run did not stop cleanly, and the database is checked whatever its log
  // says.
  running_marker_ = options_.db_path + ".running";
  StoreOptions store_options;
  store_options.quick_check_only_after_unclean_stop =
      ::access(running_marker_.c_str(), F_OK) != 0;
  // One braked to a database: a second one fails to start.
  store_options.exclusive = true;
  auto store = Store::Open(options_.db_path, store_options);
  if (!store.ok()) return store.status();
  Log(LogLevel::kInfo, "database %s: %s", options_.db_path.c_str(),
      (*store)->quick_checked()
          ? "unclean stop before: quick_check ok"
          : "clean stop before: quick_check skipped");
  // Subjects (tasks, limiter states, spend) stay on disk until used.
  auto snapshot = (*store)->Load(Store::LoadWhat::kWithoutSubjects);
  if (!snapshot.ok()) return snapshot.status();
  if (Status s = Restore(*snapshot, **store); !s.ok()) return s;
  ApplyConfig(config_, nullptr);
  Log(LogLevel::kInfo,
      "database %s: %zu policies, %zu open leases restored, %zu subjects "
      "in memory, the rest loaded when used",
      options_.db_path.c_str(), snapshot->policies.size(),
      snapshot->leases.size(), engine_->resident_subjects());
  return store;
}

Status Daemon::Serve(std::unique_ptr<Store> store) {
  worker_ = std::make_unique<StorageWorker>(
      &loop_, std::move(store),
      [this](const StorageWorker::Done& d) { OnStorageDone(d); },
      [path = options_.db_path] {
        StoreOptions reopen;
        reopen.exclusive = true;
        return Store::Open(path, reopen);
      },
      EncodeSnapshots);
  server_ = std::make_unique<Server>(&loop_, dispatcher_.get(), &config_,
                                     &stats_, this);
  waiters_ = std::make_unique<Waiters>(
      &loop_, dispatcher_->decider(), [this] { return clock_.NowUs(); },
      [this](uint64_t conn, std::string line) {
        server_->Deliver(conn, std::move(line));
        // Answered from a timer: this turn's check (Seal, writes) must not
        // wait for the next event to end the poll.
        Kick();
      },
      config_.max_waiters_per_scope);
  waiters_->set_on_answer([this](const AcquireAnswer& answer) {
    dispatcher_->CountAcquire(answer);
  });
  waiters_->set_limit_hits(&stats_.limit_hits);
  dispatcher_->set_waiters(waiters_.get());
  dispatcher_->set_deferred(this);
  Status s = server_->Listen(options_.socket_path,
                             static_cast<int>(config_.socket_mode));
  if (s.ok()) {
    s = StartFront();
    if (!s.ok()) server_->Close(nullptr);
  }
  if (!s.ok()) {  // undo: the storage thread stops, nothing is left open
    dispatcher_->set_waiters(nullptr);
    waiters_->Close(nullptr);
    worker_->Stop(nullptr);
    uv_run(&loop_, UV_RUN_DEFAULT);
    worker_.reset();
  }
  return s;
}

// A metrics endpoint that cannot listen is logged; braked serves without it.
void Daemon::ServeMetrics() {
  if (config_.metrics_listen.empty()) return;
  metrics_http_ = std::make_unique<MetricsHttp>(&loop_, [this] {
    return MetricsExposition(*dispatcher_, clock_.NowUs());
  });
  if (Status s = metrics_http_->Listen(config_.metrics_listen); !s.ok()) {
    Log(LogLevel::kError, "%s; serving without it", s.message().c_str());
    metrics_http_->Close(nullptr);
  } else {
    Log(LogLevel::kInfo, "metrics on http://%s/metrics",
        config_.metrics_listen.c_str());
  }
}

void Daemon::StartHandles() {
  uv_signal_init(&loop_, &sigterm_);
  uv_signal_init(&loop_, &sigint_);
  uv_signal_init(&loop_, &sighup_);
  uv_timer_init(&loop_, &housekeeping_);
  uv_timer_init(&loop_, &flush_);
  uv_check_init(&loop_, &check_);
  uv_idle_init(&loop_, &kick_);
  for (uv_handle_t* h :
       {reinterpret_cast<uv_handle_t*>(&kick_),
        reinterpret_cast<uv_handle_t*>(&sigterm_),
        reinterpret_cast<uv_handle_t*>(&sigint_),
        reinterpret_cast<uv_handle_t*>(&sighup_),
        reinterpret_cast<uv_handle_t*>(&housekeeping_),
        reinterpret_cast<uv_handle_t*>(&flush_),
        reinterpret_cast<uv_handle_t*>(&check_)}) {
    h->data = this;
  }
  handles_open_ = true;
  uv_signal_start(&sigterm_, [](uv_signal_t* h, int) {
    Self<Daemon>(h->data)->BeginShutdown("SIGTERM");
  }, SIGTERM);
  uv_signal_start(&sigint_, [](uv_signal_t* h, int) {
    Self<Daemon>(h->data)->BeginShutdown("SIGINT");
  }, SIGINT);
  uv_signal_start(&sighup_, [](uv_signal_t* h, int) {
    Self<Daemon>(h->data)->Reload();
  }, SIGHUP);
  uv_timer_start(&housekeeping_, [](uv_timer_t* h) {
    Self<Daemon>(h->data)->Housekeeping();
  }, kHousekeepingMs, kHousekeepingMs);
  if (config_.durability == Durability::kBatched) {
    uint64_t every = static_cast<uint64_t>(config_.flush_interval_ms);
    uv_timer_start(&flush_, [](uv_timer_t* h) {
      Self<Daemon>(h->data)->Seal();
    }, every, every);
  }
  uv_check_start(&check_, [](uv_check_t* h) {
    Self<Daemon>(h->data)->OnLoopTurn();
  });
  StartClusterTimer();
}

void Daemon::MarkRunning() {
  if (int fd = ::open(running_marker_.c_str(),
                      O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
      fd >= 0) {
    ::close(fd);
  } else {
    Log(LogLevel::kWarn, "cannot create %s: %s; a crash will not force a "
        "quick_check at the next start", running_marker_.c_str(),
        strerror(errno));
  }
}

// The config file declares policies and prices; it wins over what was set at
// run time for the same scope or model. A scope dropped from the file on
// reload loses its policy.
void Daemon::ApplyConfig(const Config& config, const Config* previous) {
  // Cluster mode: a reload's changes go to every daemon; at start the
  // first read of the shared policies puts the file's on top of them
  // (AdoptSharedPolicies).
  cluster::Gate* publish = previous != nullptr ? cluster_.get() : nullptr;
  if (previous != nullptr) {
    for (const auto& [scope, policy] : previous->policies) {
      if (!config.policies.count(scope)) {
        dispatcher_->decider()->DeletePolicy(scope);
        if (publish != nullptr) publish->PublishPolicy(scope, "");
      }
    }
  }
  for (const auto& [scope, policy] : config.policies) {
    const Policy* current = engine_->GetPolicy(scope);
    if (current == nullptr || current->json != policy.json) {
      dispatcher_->decider()->SetPolicy(scope, policy);
      if (publish != nullptr) publish->PublishPolicy(scope, policy.json);
    }
  }
  for (const auto& [model, price] : config.prices) {
    const Price* current = engine_->GetPrice(model);
    if (current == nullptr ||
        current->input_nano_per_mtok != price.input_nano_per_mtok ||
        current->output_nano_per_mtok != price.output_nano_per_mtok) {
      engine_->SetPrice(model, price);
    }
  }
  engine_->set_lease_ttl_us(config.lease_ttl_ms * 1000);
  engine_->set_max_open_leases(config.max_open_leases);
}

// After each loop turn's I/O: wake waiters if a lease was settled (capacity
// may have appeared) and, in strict mode, seal the turn's changes into one
// batch.
void Daemon::OnLoopTurn() {
  uv_idle_stop(&kick_);
  if (cluster_ && cluster_->urgent()) cluster_->Tick(clock_.NowUs(), false);
  if (engine_->settlements() != settlements_seen_) {
    settlements_seen_ = engine_->settlements();
    waiters_->Poke();
  }
  for (const std::string& line : dispatcher_->decider()->TakeLog()) {
    Log(LogLevel::kInfo, "%s", line.c_str());
  }
  if (config_.durability == Durability::kStrict) Seal();
  server_->FlushWrites();
  server_->ResumeReading();
  // Lines the front sent while its replies were delivered: their replies
  // need another turn, which must not wait for the next event.
  if (server_->channel_work_pending()) Kick();
  dispatcher_->FlushCounts();  // after the writes
}

void Daemon::Kick() {
  // Stopped by the check (OnLoopTurn): an idle callback that stopped
  // itself would run before the poll and leave it blocking.
  if (uv_is_closing(reinterpret_cast<uv_handle_t*>(&kick_))) return;
  uv_idle_start(&kick_, [](uv_idle_t*) {});
}

bool Daemon::Dirty() const {
  return engine_->dirty() || dispatcher_->decider()->dirty();
}

void Daemon::OnConnectionClosed(uint64_t conn) {
  waiters_->DropConnection(conn);
  dispatcher_->decider()->DropConnection(conn, clock_.NowUs());
}

bool Daemon::ReplyChangedState() {
  uint64_t now = engine_->mutations() + dispatcher_->decider()->mutations();
  bool changed = now != mutations_seen_;
  mutations_seen_ = now;
  return changed;
}

uint64_t Daemon::SeqForReply() {
  if (config_.durability == Durability::kBatched) {
    const bool lagging =
        !pending_.empty() && clock_.NowUs() - pending_.front().second >
                                 config_.flush_interval_ms * 1000;
    if (!lagging) return 0;
    // The disk is behind by more than a flush interval: answer nothing
    // more until it catches up, so a crash still loses at most about one
    // interval of acknowledged changes.
  }
  // A reply waits for every change made before it, its own included.
  return Dirty() ? open_seq_ : sealed_seq_;
}

void Daemon::Seal() {
  if (!Dirty()) return;
  Batch batch = worker_->TakeSpare();
  batch.seq = open_seq_;
  engine_->Drain(&batch, AppendLeaseSnapshot);
  dispatcher_->decider()->Drain(&batch);
  pending_.emplace_back(open_seq_, clock_.NowUs());
  sealed_seq_ = open_seq_++;
  worker_->Submit(std::move(batch));
}

void Daemon::OnStorageDone(const StorageWorker::Done& done) {
  if (done.status.ok()) {
    auto settled = pending_.begin();
    while (settled != pending_.end() && settled->first <= done.seq) ++settled;
    pending_.erase(pending_.begin(), settled);
  }
  if (done.status.ok()) {
    ++stats_.storage_batches;
    stats_.storage_commit_us_total += done.commit_us;
    if (!dispatcher_->storage_ok()) {
      Log(LogLevel::kInfo, "storage recovered; acquires are served again");
    }
    dispatcher_->set_storage_ok(true);
    server_->Release(done.seq);
  } else {
    ++stats_.storage_failures;
    if (dispatcher_->storage_ok()) {
      Log(LogLevel::kError, "%s; %s", done.status.message().c_str(),
          config_.fail_open ? "acquires are let through (on_storage_error "
                              "open)"
                            : "acquires fail closed until it recovers");
    }
    dispatcher_->set_storage_ok(false);
    server_->Fail(done.seq, done.status.message());
  }
  if (stopping_ && !worker_->busy()) FinishShutdown();
}

void Daemon::Housekeeping() {
  server_->ExpireSlowClients(clock_.NowUs());
  if (stopping_) return;  // only slow clients may hold up the shutdown
  int expired = dispatcher_->decider()->ExpireLeases(clock_.NowUs());
  if (expired > 0) {
    Log(LogLevel::kInfo, "%d lease(s) expired and were settled at their "
        "estimate", expired);
  }
  EvictIdle();
  // A failed batch waits inside the worker; an empty batch retries it.
  if (!dispatcher_->storage_ok() && !worker_->busy()) {
    Batch retry;
    retry.seq = open_seq_;
    pending_.emplace_back(open_seq_, clock_.NowUs());
    sealed_seq_ = open_seq_++;
    worker_->Submit(std::move(retry));
  }
}

void Daemon::Reload() {
  if (options_.config_path.empty()) {
    Log(LogLevel::kInfo, "SIGHUP: no config file to reload");
    return;
  }
  auto config = LoadConfigFile(options_.config_path);
  if (!config.ok()) {
    Log(LogLevel::kError, "SIGHUP: keeping the current config: %s",
        config.status().message().c_str());
    return;
  }
  for (const std::string& name : FixedSettingsChanged(config_, *config)) {
    Log(LogLevel::kWarn, "SIGHUP: %s changes only on restart; ignored",
        name.c_str());
  }
  Config next = std::move(*config);
  // Settings that need a restart keep their running values.
  next.socket_mode = config_.socket_mode;
  next.durability = config_.durability;
  next.flush_interval_ms = config_.flush_interval_ms;
  next.metrics_listen = config_.metrics_listen;
  next.top_max_subjects = config_.top_max_subjects;
  if (config_.http && next.http) {
    front::FrontConfig running = *config_.http;  // listen, upstreams, ...
    running.keys = next.http->keys;
    running.default_max_tokens = next.http->default_max_tokens;
    running.wait_ms = next.http->wait_ms;
    next.http = running;
  } else {
    next.http = config_.http;
  }
  next.cluster = config_.cluster;
  Config previous = std::move(config_);
  config_ = std::move(next);
  ApplyConfig(config_, &previous);
  if (front_ && config_.http) front_->Reconfigure(*config_.http);
  Log(LogLevel::kInfo, "SIGHUP: reloaded %s (%zu policies, %zu prices)",
      options_.config_path.c_str(), config_.policies.size(),
      config_.prices.size());
}

void Daemon::BeginShutdown(const char* why) {
  if (stopping_) return;
  stopping_ = true;
  Log(LogLevel::kInfo, "%s: stopping; flushing state", why);
  // Housekeeping keeps running, for ExpireSlowClients only.
  StopFront();  // its calls in flight are settled: committed below
  server_->StopAccepting();
  dispatcher_->set_waiters(nullptr);
  waiters_->Close(nullptr);  // answers every waiter: braked is stopping
  StopCluster();  // gives back every slice; held requests are answered
  Seal();
  if (!worker_->busy()) FinishShutdown();
}

void Daemon::FinishShutdown() {
  if (finishing_) return;
  finishing_ = true;
  if (!dispatcher_->storage_ok()) {
    Log(LogLevel::kError, "stopping with storage failing: the last changes "
        "were not saved");
    exit_code_ = 1;
  }
  if (metrics_http_) metrics_http_->Close(nullptr);
  server_->Close([this] {
    worker_->Stop([this] {
      for (uv_handle_t* h :
           {reinterpret_cast<uv_handle_t*>(&kick_),
            reinterpret_cast<uv_handle_t*>(&sigterm_),
            reinterpret_cast<uv_handle_t*>(&sigint_),
            reinterpret_cast<uv_handle_t*>(&sighup_),
            reinterpret_cast<uv_handle_t*>(&housekeeping_),
            reinterpret_cast<uv_handle_t*>(&flush_),
            reinterpret_cast<uv_handle_t*>(&check_)}) {
        uv_close(h, nullptr);
      }
      if (cluster_) {
        cluster_->Abort();
        uv_close(reinterpret_cast<uv_handle_t*>(&cluster_timer_), nullptr);
      }
      handles_open_ = false;
    });
  });
}

int Daemon::Run() {
  uv_run(&loop_, UV_RUN_DEFAULT);
  waiters_.reset();
  metrics_http_.reset();
  front_.reset();
  server_.reset();
  worker_.reset();
  int rc = uv_loop_close(&loop_);
  if (rc != 0) {
    Log(LogLevel::kError, "uv_loop_close: %s", uv_strerror(rc));
    return 1;
  }
  uv_loop_init(&loop_);  // so the destructor's close is harmless
  if (exit_code_ == 0) ::unlink(running_marker_.c_str());
  Log(LogLevel::kInfo, "stopped cleanly");
  return exit_code_;
}

}  // namespace brake
