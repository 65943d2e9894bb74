// OpHandlers: the handlers of the ops table (ops.cc), a friend of the
// Dispatcher so that they reach its counters, engine and decider.
//
// request_ops.cc holds what agents call (ping, acquire, commit, cancel,
// status, usage) with the deferrals they share (subjects to load first, a
// request held for Redis); admin_ops.cc what operators call (policies,
// resets, prices, breakers, cluster.status). Every handler sees a request
// the table has validated. Loop thread only.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "daemon/ops.h"

namespace brake {

// A validated request's string field, "" when absent or null.
inline std::string BodyStr(const nlohmann::json& req, const char* key) {
  auto it = req.find(key);
  return it == req.end() || it->is_null() ? "" : it->get<std::string>();
}
// A validated request's integer field, `fallback` when absent or null.
inline int64_t BodyInt(const nlohmann::json& req, const char* key,
                       int64_t fallback) {
  auto it = req.find(key);
  return it == req.end() || it->is_null() ? fallback : it->get<int64_t>();
}

struct OpHandlers {
  // --- request_ops.cc ---
  // Defers the request until the `missing` subjects are loaded from storage
  // (then it is handled again); false when none are missing. Without
  // deferred ops (unit tests) the engine refuses to decide instead.
  static bool LoadFirst(OpContext& ctx, std::vector<std::string> missing);
  // A refusal because this daemon's slice of a shared limit was short:
  // held until Redis answers, then handled again. Redis away: unavailable
  // (fail closed). Held too often already: the refusal is the answer.
  static Status HoldForCluster(OpContext& ctx);
  static Status Ping(OpContext& ctx);
  static Status Acquire(OpContext& ctx);
  // A lease may be settled only by a peer allowed to act as its user.
  static Status MayTouchLease(const OpContext& ctx,
                              const std::string& lease_id);
  static Status Commit(OpContext& ctx);
  static Status Cancel(OpContext& ctx);
  static Status StatusOp(OpContext& ctx);
  static Status Usage(OpContext& ctx);

  // --- admin_ops.cc ---
  static Status PolicySet(OpContext& ctx);
  static Status PolicyGet(OpContext& ctx);
  static Status PolicyList(OpContext& ctx);
  static Status PolicyDelete(OpContext& ctx);
  // Cluster mode: a reset of one subject clears its shared limits in Redis
  // too, and every daemon resets its own counters of it. (A whole kind,
  // user:*, is refused before: it is not reset across the cluster.)
  static Status ResetShared(OpContext& ctx, const std::string& scope);
  static Status Reset(OpContext& ctx);
  static Status PricesSet(OpContext& ctx);
  // The `breakers` array of status and the breaker ops.
  static nlohmann::json BreakersJson(const std::vector<BreakerView>& views);
  static Status BreakerTrip(OpContext& ctx);
  static Status BreakerReset(OpContext& ctx);
  static Status BreakerList(OpContext& ctx);
  static Status ClusterStatus(OpContext& ctx);
};

}  // namespace brake
