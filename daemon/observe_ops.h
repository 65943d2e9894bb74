// The read-only ops that observe braked as a whole: `metrics` (Prometheus
// text, see metrics_text.h) and `top` (the busiest users, tasks or
// resources, see top_tracker.h). Rows of the ops table (ops.cc); they read
// the dispatcher through its public accessors and change nothing. Loop
// thread only.
#pragma once

#include <cstdint>
#include <string>

#include "common/status.h"
#include "daemon/ops.h"

namespace brake {

inline constexpr int64_t kTopDefaultRows = 20;
inline constexpr int64_t kTopMaxRows = 1000;

// The Prometheus text exposition of everything braked counts, as `metrics`
// answers it and GET /metrics serves it.
std::string MetricsExposition(Dispatcher& dispatcher, int64_t now_us);
// {"text": MetricsExposition}.
Status MetricsOp(OpContext& ctx);
// {"by","rows":[{"subject","grants","denials","tokens","usd",
// "uncounted_max","waiters"}]}, busiest first. With uid_users a non-admin
// peer sees only its users and their tasks; `by` resource is kForbidden to
// it (a resource's counts mix every user's acquires).
Status TopOp(OpContext& ctx);

}  // namespace brake
