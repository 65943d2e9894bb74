// Config: braked's settings, declared once in a table.
//
// Each setting has a name, type, bounds, unit, default, whether SIGHUP may
// change it, and a line of documentation. The same table parses and
// validates the config file and prints `braked --help-config`. The file also
// carries `policies` and `prices`, which are validated here and applied by the
// daemon. Loop thread only (parsing itself is stateless).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "budget/engine.h"
#include "budget/pricing.h"
#include "cluster/cluster_config.h"
#include "common/status.h"
#include "front/front_config.h"

namespace brake {

enum class Durability { kStrict, kBatched };

struct Config {
  std::vector<int64_t> admin_uids;
  int64_t socket_mode = 0660;
  Durability durability = Durability::kStrict;
  int64_t flush_interval_ms = 10;
  int64_t lease_ttl_ms = 600'000;
  int64_t max_line_bytes = 65'536;
  int64_t max_connections = 4096;
  int64_t max_output_bytes = 16 << 20;
  int64_t max_waiters_per_scope = 1000;
  int64_t partial_line_timeout_ms = 10'000;
  int64_t subject_idle_ms = 3'600'000;  // 0: never evict
  int64_t max_subjects = 2'000'000;
  int64_t max_open_leases = 1'000'000;
  int64_t top_max_subjects = 10'000;  // per kind (users, tasks, resources)
  int64_t metrics_top_users = 10;     // per-user series in metrics; 0: none
  // uid -> the users it may act as (acquire, commit, cancel, status, usage).
  // Empty: no restriction. Admins are never restricted.
  std::map<int64_t, std::set<std::string>> uid_users;
  bool fail_open = false;  // on_storage_error: "open"
  std::string metrics_listen;
  std::map<std::string, Policy> policies;
  std::map<std::string, Price> prices;
  // Cluster mode (docs/CLUSTER.md); none: a single node.
  std::optional<cluster::ClusterConfig> cluster;
  // The OpenAI-compatible HTTP front (docs/FRONT.md); none: not served.
  std::optional<front::FrontConfig> http;
};

// Parses a config file's text. Errors name the setting ("lease_ttl_ms: must
// be an integer between 1000 and 604800000").
Result<Config> ParseConfig(const std::string& text);
// Reads and parses FILE.
Result<Config> LoadConfigFile(const std::string& path);
// Settings that differ between `a` and `b` but may not change on reload.
std::vector<std::string> FixedSettingsChanged(const Config& a, const Config& b);
// The settings table as text, for --help-config.
std::string ConfigHelp();

}  // namespace brake
