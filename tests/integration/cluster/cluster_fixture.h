// ClusterFixture: a real redis-server and N real braked sharing it, each in
// its own directory with cluster mode on (node n0, n1, ...; prefix "t:"),
// the given policies and prices. Clients connect to daemon i by index.
// Destroyed daemons first, then Redis, then the directories.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/integration/cluster/redis_server.h"
#include "tests/integration/harness.h"

namespace brake::integration {

inline constexpr const char* kClusterPrefix = "t:";

// A LIMIT: a quota of `limit` units of `resource` that never resets.
inline json TotalQuota(const std::string& name, const std::string& resource,
                       int64_t limit) {
  return {{"name", name}, {"resource", resource}, {"algorithm", "quota"},
          {"limit", limit}, {"period", "total"}};
}
// Policies giving every user these LIMITs.
inline json EveryUser(json limits) {
  return {{"user:*", {{"limits", std::move(limits)}}}};
}

class ClusterFixture {
 public:
  // Throws std::runtime_error (with the logs) when something does not
  // start. `extra` is merged into every daemon's config (its `cluster`
  // object too).
  // With `aof`, Redis keeps an append-only file (appendfsync always), so
  // that it can be killed and started again with what it had.
  ClusterFixture(int nodes, const json& policies, const json& prices = nullptr,
                 const json& extra = nullptr, bool aof = false);
  ~ClusterFixture();

  size_t size() const { return daemons_.size(); }
  Daemon& daemon(size_t i) { return *daemons_[i]; }
  RedisServer& redis() { return redis_; }
  Client Connect(size_t i) const { return daemons_[i]->Connect(); }
  // The Redis key of a cap: prefix, scope, limit name, resource and period
  // start (0 for a total quota).
  static std::string CapKey(const std::string& scope, const std::string& limit,
                            const std::string& resource,
                            const std::string& period = "0");
  static std::string BucketKey(const std::string& scope,
                               const std::string& limit,
                               const std::string& resource);
  // Every daemon's log, for failure messages.
  std::string Logs() const;

 private:
  TempDir redis_dir_;
  RedisServer redis_;
  std::vector<std::unique_ptr<TempDir>> dirs_;
  std::vector<std::unique_ptr<Daemon>> daemons_;
};

}  // namespace brake::integration
