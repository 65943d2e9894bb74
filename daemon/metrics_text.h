// MetricsText: braked's figures as Prometheus text (exposition format
// 0.0.4), for the `metrics` op and GET /metrics.
//
// PromText writes metric families (# HELP, # TYPE) and their samples, with
// label values escaped as the format requires. MetricsText() lays out every
// series braked exports from a MetricsSources snapshot that the dispatcher
// gathers; which series exist, and what they mean, is documented in
// docs/OPERATIONS.md. Pure: no clock, no IO. Any thread (the daemon calls it
// on the loop thread).
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "budget/engine.h"
#include "daemon/counters.h"
#include "daemon/top_tracker.h"

namespace brake {

class PromText {
 public:
  using Labels = std::vector<std::pair<std::string_view, std::string_view>>;

  // "# HELP name help" and "# TYPE name type" (counter, gauge, histogram).
  void Family(std::string_view name, std::string_view help,
              std::string_view type);
  // `name{label="value",...} value`; values are escaped (\\, \", \n).
  void Sample(std::string_view name, const Labels& labels, int64_t value);
  void Sample(std::string_view name, const Labels& labels, double value);

  std::string Take() { return std::move(text_); }

 private:
  void Head(std::string_view name, const Labels& labels);
  std::string text_;
};

// Everything MetricsText reports, read by the dispatcher at the time of the
// request.
struct MetricsSources {
  const Counters* counters = nullptr;
  const ServerStats* server = nullptr;
  int64_t leases_open = 0;
  int64_t lease_cap_refusals = 0;  // Engine::lease_cap_refusals()
  int64_t tasks = 0;     // in memory
  int64_t subjects = 0;  // users, tasks, resources and global in memory
  int64_t prefetched = 0;  // Engine::prefetched_decisions()
  int64_t waiters = 0;
  Totals spend;  // settled, all subjects
  int64_t breakers_open = 0;
  int64_t breakers_half_open = 0;
  bool storage_ok = true;
  std::array<int64_t, 7> breaker_trips{};  // by breaker::Cause (kNone unused)
  // The busiest users (at most metrics_top_users), busiest first.
  std::vector<SubjectActivity> top_users;
  // Cluster mode: cluster.status's answer (null for a single node).
  nlohmann::json cluster;
};

// The exposition: one family after another, each sample on its own line.
std::string MetricsText(const MetricsSources& sources);

}  // namespace brake
