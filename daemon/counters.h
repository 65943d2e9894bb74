// Counters: what braked counts for `metrics`, as plain values.
//
// Counters holds the dispatcher's (requests, acquire answers, settlements,
// waits); ServerStats what the server and the storage worker report;
// LimitHits how often each resource limit refused or disconnected something,
// counted where the limit acts (server, dispatcher, waiters). All are plain
// structs: counting is an increment, never an allocation. Loop thread only.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

#include "budget/engine.h"
#include "daemon/wait_histogram.h"

namespace brake {

// The resource limits of braked itself; the wire names are the settings
// that configure them (max_depth is fixed: JSON nested deeper than 32).
enum class LimitHit {
  kMaxLineBytes,          // line_too_long, connection closed
  kMaxDepth,              // bad_json without parsing
  kMaxConnections,        // too_many_connections, connection closed
  kMaxOutputBytes,        // a client not reading its replies, closed
  kPartialLineTimeoutMs,  // a slow-loris connection, closed
  kMaxWaitersPerScope,    // a waiting acquire refused queue_full
  kMaxSubjects,           // an acquire for new subjects refused unavailable
  kMaxOpenLeases,         // an acquire refused unavailable (the engine counts)
};
inline constexpr size_t kLimitHitCount = 8;
std::string_view LimitHitName(LimitHit limit);

struct LimitHits {
  std::array<int64_t, kLimitHitCount> by_limit{};
  void Add(LimitHit limit) { ++by_limit[static_cast<size_t>(limit)]; }
  int64_t Of(LimitHit limit) const {
    return by_limit[static_cast<size_t>(limit)];
  }
};

struct Counters {
  int64_t requests = 0;  // request lines handled
  int64_t errors = 0;    // answered with an error
  int64_t acquires_granted = 0;
  std::array<int64_t, kReasonCount> acquires_denied{};  // by Reason
  int64_t commits = 0;
  int64_t cancels = 0;
  int64_t fail_open_grants = 0;
  WaitHistogram waits;  // acquires with wait_ms > 0
};

// What the server tells the dispatcher about itself, for metrics.
struct ServerStats {
  int64_t connections = 0;
  int64_t connections_total = 0;
  int64_t storage_batches = 0;
  int64_t storage_failures = 0;
  int64_t storage_commit_us_total = 0;
  // Replies written only once a storage commit came (strict: each that
  // changed state and each queued behind one; batched: while the disk lagged).
  int64_t replies_held = 0;
  int64_t subject_loads = 0;     // requests deferred to load subjects
  int64_t subjects_evicted = 0;  // idle subjects dropped from memory
  LimitHits limit_hits;  // every limit, whoever counts it
};

// One acquire's answer (granted or refused; not an error), as counted.
struct AcquireAnswer {
  const AcquireRequest* request = nullptr;
  bool granted = false;
  Reason reason = Reason::kRateLimited;  // when refused
  int64_t usd_nano = 0;  // what a grant reserved
  int64_t waited_us = -1;  // >= 0 for a waiting acquire (wait_ms > 0)
};

}  // namespace brake
