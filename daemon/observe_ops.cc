#include "daemon/observe_ops.h"

#include <functional>
#include <string>

#include "daemon/json_fields.h"
#include "daemon/metrics_text.h"
#include "daemon/waiters.h"

namespace brake {

std::string MetricsExposition(Dispatcher& d, int64_t now_us) {
  d.FlushCounts();  // the busiest users count every answer given
  const Engine* engine = d.engine();
  MetricsSources src;
  src.counters = &d.counters();
  src.server = &d.stats();
  src.leases_open = static_cast<int64_t>(engine->open_leases());
  src.lease_cap_refusals =
      static_cast<int64_t>(engine->lease_cap_refusals());
  src.tasks = static_cast<int64_t>(engine->task_count());
  src.subjects = static_cast<int64_t>(engine->resident_subjects());
  src.prefetched = static_cast<int64_t>(engine->prefetched_decisions());
  src.waiters = d.waiters() ? static_cast<int64_t>(d.waiters()->size()) : 0;
  src.spend = engine->SpendOf("global");
  for (const BreakerView& v : d.decider()->OpenViews(now_us)) {
    if (v.snapshot.state == breaker::BreakerState::kHalfOpen) {
      ++src.breakers_half_open;
    } else {
      ++src.breakers_open;
    }
  }
  src.storage_ok = d.storage_ok();
  for (size_t i = 0; i < src.breaker_trips.size(); ++i) {
    src.breaker_trips[i] = d.decider()->trips(static_cast<breaker::Cause>(i));
  }
  src.top_users = d.top()
                      .Of(TopKind::kUser)
                      .Top(static_cast<size_t>(d.config().metrics_top_users));
  if (d.cluster() != nullptr) src.cluster = d.cluster()->Status(now_us);
  return MetricsText(src) + d.ExtraMetrics();
}

Status MetricsOp(OpContext& ctx) {
  (*ctx.reply)["text"] = MetricsExposition(*ctx.dispatcher, ctx.now_us);
  return Status::Ok();
}

Status TopOp(OpContext& ctx) {
  const Dispatcher& d = *ctx.dispatcher;
  const Config& config = d.config();
  // Validated against the ops table: `by` is one of the three.
  const std::string by = ctx.request.body()["by"].get<std::string>();
  const TopKind kind = by == "user"   ? TopKind::kUser
                       : by == "task" ? TopKind::kTask
                                      : TopKind::kResource;
  int64_t limit = kTopDefaultRows;
  if (auto it = ctx.request.body().find("limit");
      it != ctx.request.body().end() && !it->is_null()) {
    limit = it->get<int64_t>();
  }
  std::function<bool(const std::string&)> keep;
  if (!ctx.peer.admin && !config.uid_users.empty()) {
    if (kind == TopKind::kResource) {
      return Status(ErrorCode::kForbidden,
                    "by: resource rows count every user's acquires; only "
                    "admins may see them when uid_users is set");
    }
    keep = [&ctx, &config, kind](const std::string& subject) {
      const std::string user =
          kind == TopKind::kUser ? subject : ctx.engine->TaskOwner(subject);
      return !user.empty() && MayActAs(ctx, config, user).ok();
    };
  }
  json rows = json::array();
  for (const SubjectActivity& a :
       d.top().Of(kind).Top(static_cast<size_t>(limit), keep)) {
    json row = {
        {"subject", a.subject},         {"grants", a.grants},
        {"denials", a.denials},         {"tokens", a.tokens},
        {"usd", NanoToUsd(a.usd_nano)}, {"uncounted_max", a.uncounted_max}};
    if (d.waiters() != nullptr) {
      row["waiters"] = d.waiters()->CountFor(by + ":" + a.subject);
    }
    rows.push_back(std::move(row));
  }
  (*ctx.reply)["by"] = by;
  (*ctx.reply)["rows"] = std::move(rows);
  return Status::Ok();
}

}  // namespace brake
