// Cluster: this daemon's part in cluster mode.
//
// Several braked with the same `prefix` share their limits through one
// Redis (../docs/CLUSTER.md). The Cluster owns the shares this daemon holds
// (Shares, filled by the engine's SharedLimiters: MakerFor) and the link to
// Redis, and on each Tick makes the script calls the shares want: leases,
// renewals, debts, give-backs, many in flight at once. A request that found
// a slice short is held (Hold) until every call in flight has answered,
// then handled again; a lost link answers them at once (the daemon then
// refuses with `unavailable`, or grants from the local share). Decisions
// never wait on Redis while the slice holds enough. Loop thread only.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <uv.h>

#include "budget/engine.h"
#include "cluster/cluster_config.h"
#include "cluster/gate.h"
#include "cluster/redis_link.h"
#include "cluster/shares.h"

namespace brake::cluster {

struct ClusterCounters {
  uint64_t share_calls = 0;   // script calls answered
  uint64_t refills = 0;       // answers that granted units
  uint64_t give_backs = 0;    // calls that gave units back
  uint64_t failed_calls = 0;  // calls with no answer, or an error
  uint64_t held_requests = 0; // requests held for a call
};

class Cluster final : public Gate {
 public:
  Cluster(uv_loop_t* loop, ClusterConfig config,
          std::function<int64_t()> now_us, ShareTuning tuning = {});
  ~Cluster() override;
  Cluster(const Cluster&) = delete;
  Cluster& operator=(const Cluster&) = delete;

  // The engine's limiter maker: shared limiters for shareable limits.
  Engine::LimiterMaker MakerFor();
  Shares& shares() { return shares_; }
  const ClusterConfig& config() const { return config_; }

  // Keeps the link (reconnects, timeouts) and makes the calls due: those
  // of shares marked short, or with `scan_all` every share's.
  void Tick(int64_t now_us, bool scan_all) override;
  bool urgent() const override { return shares_.urgent(); }
  bool up() const override { return link_.up(); }
  bool TakeShort() override { return shares_.TakeShort(); }
  bool fails_closed() const override {
    return config_.on_unavailable == OnUnavailable::kClosed;
  }
  // The error `unavailable` carries while Redis is away.
  std::string UnavailableMessage() const override;

  // Holds a request whose decision found a slice short: `redo` runs once
  // every call in flight has answered (or failed). False when it may not
  // be held (the link is down, or it was held as often as allowed): the
  // request is answered now.
  bool Hold(std::function<void()> redo) override;
  // Runs after each round of answers (capacity may have appeared).
  void set_on_answers(std::function<void()> f) override {
    on_answers_ = std::move(f);
  }

  void PublishPolicy(const std::string& scope,
                     const std::string& json) override;
  void PublishBreaker(const std::string& scope, const std::string& cause,
                      int64_t open_until_us) override;
  void set_on_policies(
      std::function<void(const PolicyMap&, bool first)> f) override {
    on_policies_ = std::move(f);
  }
  void set_on_breakers(std::function<void(const BreakerMap&)> f) override {
    on_breakers_ = std::move(f);
  }

  bool ResetShared(const std::string& scope, const std::vector<SharedKey>& keys,
                   int64_t now_us) override;
  void set_on_resets(
      std::function<void(const ResetMap&, bool first)> f) override {
    on_resets_ = std::move(f);
  }

  // Gives back what every share holds, then disconnects.
  void Close(int64_t now_us) override;
  void Abort() override { link_.Abort(); }

  // cluster.status: the node, the link, what this daemon holds.
  nlohmann::json Status(int64_t now_us) const override;
  const ClusterCounters& counters() const { return counters_; }
  const LinkStats& link_stats() const { return link_.stats(); }
  // Seconds without a usable link, to `now_us`.
  double down_seconds(int64_t now_us) const;

 private:
  // The scripts, by their index in the link (cluster.cc's Scripts()).
  static constexpr size_t kCapScript = 0;
  static constexpr size_t kBucketScript = 1;
  static constexpr size_t kResetScript = 2;

  void Call(Share* share, const ShareCall& call, int64_t now_us);
  void OnAnswer(const std::string& key, const redisReply* reply);
  void RedoHeld();
  // The link went away or came back since the last Tick.
  void OnLinkChange(bool up, int64_t now_us);
  // Reads the shared policies' and breakers' versions, and what changed.
  void Poll(int64_t now_us);
  // HGETALL of PREFIX `name`; `done` gets its fields (not called when the
  // link fails).
  void ReadHash(const std::string& name,
                std::function<void(const std::map<std::string, std::string>&)>
                    done);
  void ReadPolicies(const std::string& version);
  void ReadBreakers(const std::string& version);
  void ReadResets(const std::string& version);
  // `scope`'s limits were reset: what Redis said of them no longer holds,
  // and each share of a cap recounts what it holds.
  void RecountScope(const std::string& scope);
  // Every second: this node's entry in PREFIX nodes (when it was seen, its
  // link, what it holds), and every node's, for cluster.status.
  void Heartbeat(int64_t now_us);
  // Sends what was published (policies, breakers), once Redis is there.
  void Flush(int64_t now_us);
  std::string NextSeq();

  ClusterConfig config_;
  std::function<int64_t()> now_us_;
  Shares shares_;
  std::vector<Share*> due_;  // Tick's, kept for its capacity
  struct Held {
    int attempts;
    std::function<void()> redo;
  };
  std::vector<Held> held_;
  int redo_attempts_ = 0;  // while a held request is handled again
  bool was_up_ = false;
  int64_t next_poll_us_ = 0;
  bool polling_ = false;
  bool policies_read_ = false;  // once since start
  std::string policies_version_ = "?";  // never matches a version
  std::string breakers_version_ = "?";
  std::string resets_version_ = "?";
  bool resets_read_ = false;
  std::map<std::string, int64_t> own_resets_;  // scope -> when, made here
  std::function<void(const ResetMap&, bool)> on_resets_;
  std::function<void(const PolicyMap&, bool)> on_policies_;
  std::function<void(const BreakerMap&)> on_breakers_;
  std::vector<std::vector<std::string>> outbox_;
  int64_t next_heartbeat_us_ = 0;
  nlohmann::json nodes_ = nlohmann::json::array();  // as last read
  int64_t live_nodes_ = 1;  // of nodes_
  std::string run_nonce_;  // calls are named run_nonce_-N
  uint64_t calls_begun_ = 0;
  std::function<void()> on_answers_;
  ClusterCounters counters_;
  // Last: destroyed first, its calls answered while the rest still lives.
  RedisLink link_;
};

}  // namespace brake::cluster
