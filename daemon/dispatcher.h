// Dispatcher: one request line in, one response line out.
//
// Ops are declared once, in a table (see ops.cc): name, fields with their
// types and bounds, admin or not, handler. The dispatcher parses the line
// once, validates the fields centrally against the table, checks the peer's
// rights, and only then runs the handler, so handlers see well-formed input
// and a bad request never changes state. No IO and no clock: the server
// passes `now_us` (sampled once per request) and the peer's identity. Loop
// thread only. Owns the counters that `metrics` reports and the tracker of
// the busiest subjects that `top` reports.
#pragma once

#include <array>
#include <functional>
#include <cstdint>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "budget/engine.h"
#include "cluster/gate.h"
#include "common/status.h"
#include "daemon/config.h"
#include "daemon/counters.h"
#include "daemon/decider.h"
#include "daemon/fast_request.h"
#include "daemon/request.h"
#include "daemon/top_tracker.h"

namespace brake {

struct Peer {
  uint32_t uid = 0;
  bool admin = false;
  uint64_t conn = 0;  // the server's id of the connection
  // The HTTP front: an agent's key named the user it acts for.
  bool front = false;
};

class Waiters;
struct OpContext;
struct UsageQuery;

// Ops answered off the loop thread (they read the database). The answer is
// given through Server::Resume; the connection reads nothing more until
// then, so replies stay in request order.
class DeferredOps {
 public:
  virtual ~DeferredOps() = default;
  virtual void Usage(uint64_t conn, nlohmann::json id, UsageQuery query) = 0;
  // Loads subjects that are not in memory (Engine::MissingFor), then handles
  // `request` (the line, again) through Server::Redo.
  virtual void Load(uint64_t conn, nlohmann::json id,
                    std::vector<std::string> scopes, std::string request) = 0;
  // Handles `request` (the line, again) through Server::Redo: cluster mode
  // holds a request until Redis answers (cluster::Gate::Hold).
  virtual void Redo(uint64_t conn, std::string request) = 0;
};

class Dispatcher {
 public:
  // `stats` is shared with the server, which fills most of it; the
  // dispatcher counts the limits it enforces there.
  Dispatcher(Engine* engine, const Config* config, ServerStats* stats);

  // Handles one request line (without its '\n') and appends exactly one
  // response line, '\n' included, to `out`.
  void Handle(const Peer& peer, std::string_view line, int64_t now_us,
              std::string* out);
  // The error line for a request that never reached Handle (line_too_long,
  // too_many_connections), '\n' included.
  static std::string ErrorLine(ErrorCode code, const std::string& message);

  // Counts an acquire's answer for metrics and `top` (waiters answer
  // outside Handle).
  void CountAcquire(const AcquireAnswer& answer);
  // As CountAcquire, but the `top` tracker's share (a hash lookup per
  // subject) waits for FlushCounts, the next count or the next line the
  // fast path does not answer (every op that reads the tracker), so that it
  // comes after the reply is written.
  void CountAcquireLater(const AcquireAnswer& answer);
  void FlushCounts();
  const Counters& counters() const { return counters_; }
  const TopTracker& top() const { return top_; }
  const ServerStats& stats() const { return *stats_; }
  const Config& config() const { return *config_; }
  // The waiters given to set_waiters, or nullptr.
  const Waiters* waiters() const { return waiters_; }

  const Engine* engine() const { return engine_; }
  // Limits and breakers together, over the engine given at construction.
  Decider* decider() { return &decider_; }

  // While false and the config fails closed, acquires answer unavailable.
  void set_storage_ok(bool ok) { storage_ok_ = ok; }
  bool storage_ok() const { return storage_ok_; }

  // Acquires with wait_ms > 0 are handed to `waiters`, which answers them
  // (now or later) itself; without one they are answered at once.
  void set_waiters(Waiters* waiters) { waiters_ = waiters; }
  void set_deferred(DeferredOps* deferred) { deferred_ops_ = deferred; }
  // Cluster mode: shared limits, held requests, cluster.status.
  void set_cluster(cluster::Gate* cluster) { cluster_ = cluster; }
  const cluster::Gate* cluster() const { return cluster_; }
  // More Prometheus text for `metrics` (the HTTP front's).
  void set_extra_metrics(std::function<std::string()> text) {
    extra_metrics_ = std::move(text);
  }
  std::string ExtraMetrics() const {
    return extra_metrics_ ? extra_metrics_() : std::string();
  }
  // True (once) when the last Handle deferred its answer.
  bool TakeDeferred() {
    bool d = deferred_;
    deferred_ = false;
    return d;
  }

  // Whether telling the engine of lines ahead pays (Engine::prefetch_pays:
  // its subjects outgrow the caches), and telling it: the task of `line`,
  // to be handled Engine::kPrefetchAhead lines from now (Engine::Prefetch).
  bool prefetch_pays() const { return engine_->prefetch_pays(); }
  void Prefetch(std::string_view line) { engine_->Prefetch(PeekTask(line)); }

  // `brakectl help`-style listing of the ops table.
  static std::string OpsHelp();

  struct Op;  // one row of the ops table (ops.cc)

 private:
  friend struct OpHandlers;
  // Rights, validation, then the handler.
  Status Run(const Op& op, OpContext& ctx);
  // CountAcquire's counters, not the tracker.
  void CountAnswer(const AcquireAnswer& answer);

  Engine* engine_;
  Decider decider_;
  const Config* config_;
  ServerStats* stats_;
  Waiters* waiters_ = nullptr;
  DeferredOps* deferred_ops_ = nullptr;
  cluster::Gate* cluster_ = nullptr;
  std::function<std::string()> extra_metrics_;
  bool deferred_ = false;
  bool storage_ok_ = true;
  Counters counters_;  // for metrics
  TopTracker top_;
  // The answer CountAcquireLater left for the tracker, if `top_pending_`.
  bool top_pending_ = false;
  bool top_granted_ = false;
  int64_t top_usd_nano_ = 0;
  AcquireRequest top_request_;  // its user, task, resource and tokens
  // The line being handled, decoded; reused from line to line.
  Request request_;
};

}  // namespace brake
