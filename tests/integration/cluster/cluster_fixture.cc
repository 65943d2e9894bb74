#include "tests/integration/cluster/cluster_fixture.h"

#include <stdexcept>

namespace brake::integration {

ClusterFixture::ClusterFixture(int nodes, const json& policies,
                               const json& prices, const json& extra, bool aof)
    : redis_(redis_dir_.path(), aof) {
  if (!redis_.Start()) {
    throw std::runtime_error("redis-server did not start: " +
                             ReadFile(redis_dir_.File("redis.log")));
  }
  for (int i = 0; i < nodes; ++i) {
    json config = {{"cluster",
                    {{"redis", redis_.address()},
                     {"node", "n" + std::to_string(i)},
                     {"prefix", kClusterPrefix}}}};
    if (!policies.is_null()) config["policies"] = policies;
    if (!prices.is_null()) config["prices"] = prices;
    if (extra.is_object()) {
      for (const auto& [key, value] : extra.items()) {
        if (key == "cluster") {
          for (const auto& [k, v] : value.items()) config["cluster"][k] = v;
        } else {
          config[key] = value;
        }
      }
    }
    dirs_.push_back(std::make_unique<TempDir>());
    daemons_.push_back(std::make_unique<Daemon>(dirs_.back()->path(), config));
    if (!daemons_.back()->Start()) {
      throw std::runtime_error("braked n" + std::to_string(i) +
                               " did not start: " + daemons_.back()->log());
    }
  }
}

ClusterFixture::~ClusterFixture() {
  daemons_.clear();
  redis_.Kill9();
}

std::string ClusterFixture::CapKey(const std::string& scope,
                                   const std::string& limit,
                                   const std::string& resource,
                                   const std::string& period) {
  return std::string(kClusterPrefix) + "cap|" + scope + "|" + limit + "|" +
         resource + "|" + period;
}

std::string ClusterFixture::BucketKey(const std::string& scope,
                                      const std::string& limit,
                                      const std::string& resource) {
  return std::string(kClusterPrefix) + "bucket|" + scope + "|" + limit + "|" +
         resource;
}

std::string ClusterFixture::Logs() const {
  std::string out;
  for (const auto& d : daemons_) out += d->log_path() + ":\n" + d->log() + "\n";
  return out;
}

}  // namespace brake::integration
