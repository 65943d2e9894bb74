// Gate: what the daemon needs of cluster mode.
//
// Implemented by Cluster (cluster.h), which needs hiredis; the dispatcher
// sees only this, so braked builds without hiredis (and then refuses a
// `cluster` config). Loop thread only.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace brake::cluster {

class Gate {
 public:
  virtual ~Gate() = default;
  // Whether a decision since the last call found a shared slice short (the
  // request should be held for Redis's answer); clears it.
  virtual bool TakeShort() = 0;
  // Holds the request: `redo` handles it again once Redis has answered.
  // False when it may not be held (Redis is away, or it was held as often
  // as allowed): answer it now.
  virtual bool Hold(std::function<void()> redo) = 0;
  virtual bool up() const = 0;
  // on_unavailable: closed. Otherwise (local) a request the local share
  // cannot serve while Redis is away is refused as the limit refuses it.
  virtual bool fails_closed() const = 0;
  // The message of `unavailable` while Redis is away.
  virtual std::string UnavailableMessage() const = 0;
  // cluster.status's answer.
  virtual nlohmann::json Status(int64_t now_us) const = 0;

  // Policies and breakers shared by the cluster (the daemon decides what
  // to do with them). Publish: `json` "" deletes the scope's policy.
  virtual void PublishPolicy(const std::string& scope,
                             const std::string& json) = 0;
  // A resource: or global breaker opened here until `open_until_us` with
  // `cause` ("" when it was reset).
  virtual void PublishBreaker(const std::string& scope,
                              const std::string& cause,
                              int64_t open_until_us) = 0;
  // Called with every shared policy (scope -> canonical JSON) when they
  // changed; `first` on the first read since start.
  using PolicyMap = std::map<std::string, std::string>;
  virtual void set_on_policies(
      std::function<void(const PolicyMap&, bool first)> f) = 0;
  // Called with every shared breaker (scope -> {cause, open_until_us})
  // when they changed.
  struct SharedOpen {
    std::string cause;
    int64_t open_until_us = 0;
  };
  using BreakerMap = std::map<std::string, SharedOpen>;
  virtual void set_on_breakers(std::function<void(const BreakerMap&)> f) = 0;

  // The reset op of one scope: the shared limits at `keys` forget what
  // they counted (but what daemons still hold), and every daemon resets its
  // own counters of the scope. False when Redis is away (nothing changed).
  struct SharedKey {
    std::string key;
    bool bucket = false;
    int64_t burst = 0;
  };
  virtual bool ResetShared(const std::string& scope,
                           const std::vector<SharedKey>& keys,
                           int64_t now_us) = 0;
  // Called with every reset made on any daemon (scope -> when, the daemon
  // clock) when they changed; `first` on the first read since start.
  using ResetMap = std::map<std::string, int64_t>;
  virtual void set_on_resets(
      std::function<void(const ResetMap&, bool first)> f) = 0;

  // The daemon's timer: keeps the link, makes the calls due (with
  // `scan_all`, every share's renewals and give-backs too).
  virtual void Tick(int64_t now_us, bool scan_all) = 0;
  // Calls due now for requests just found short (each loop turn).
  virtual bool urgent() const = 0;
  // Runs after each round of answers (capacity may have appeared).
  virtual void set_on_answers(std::function<void()> f) = 0;
  // Stopping: gives back every slice, answers held requests, disconnects
  // once the give-backs are sent.
  virtual void Close(int64_t now_us) = 0;
  // Stopped: drops the connection now, whatever is in flight.
  virtual void Abort() = 0;
};

}  // namespace brake::cluster
