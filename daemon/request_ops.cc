// The ops agents call: ping, acquire, commit, cancel, status, usage, and
// the deferrals they share (op_handlers.h).
#include <string>
#include <utility>
#include <vector>

#include "daemon/json_fields.h"
#include "daemon/op_handlers.h"
#include "daemon/replies.h"
#include "daemon/waiters.h"
#include "storage/store.h"

namespace brake {

using json = nlohmann::json;

namespace {

json OptionalMs(int64_t us) {
  if (us == kNever) return nullptr;
  return (us + 999) / 1000;  // round up: waiting that long is enough
}

json TotalsJson(const Totals& t) {
  return {{"requests", t.requests},
          {"tokens", t.tokens},
          {"usd", NanoToUsd(t.usd_nano)}};
}

json Amount(Resource r, int64_t v) {
  if (r == Resource::kUsd) return NanoToUsd(v);
  return v;
}

}  // namespace

// Defers the request until the `missing` subjects are loaded from storage
// (then it is handled again); false when none are missing. Without
// deferred ops (unit tests) the engine refuses to decide instead.
bool OpHandlers::LoadFirst(OpContext& ctx, std::vector<std::string> missing) {
  Dispatcher& d = *ctx.dispatcher;
  if (missing.empty() || d.deferred_ops_ == nullptr) return false;
  d.deferred_ops_->Load(ctx.peer.conn, ctx.request.IdJson(),
                        std::move(missing), std::string(ctx.line));
  d.deferred_ = true;
  ctx.parked = true;
  return true;
}

// A refusal because this daemon's slice of a shared limit was short:
// held until Redis answers, then handled again. Redis away: unavailable
// (fail closed). Held too often already: the refusal is the answer.
Status OpHandlers::HoldForCluster(OpContext& ctx) {
  Dispatcher& d = *ctx.dispatcher;
  if (!d.cluster_->up()) {
    if (!d.cluster_->fails_closed()) return Status::Ok();  // the refusal
    return Status::Unavailable(d.cluster_->UnavailableMessage());
  }
  if (d.deferred_ops_ == nullptr) return Status::Ok();
  DeferredOps* ops = d.deferred_ops_;
  const uint64_t conn = ctx.peer.conn;
  if (d.cluster_->Hold([ops, conn, line = std::string(ctx.line)]() mutable {
        ops->Redo(conn, std::move(line));
      })) {
    d.deferred_ = true;
    ctx.parked = true;
  }
  return Status::Ok();
}

Status OpHandlers::Ping(OpContext& ctx) {
  (*ctx.reply)["version"] = BRAKE_VERSION;
  return Status::Ok();
}

Status OpHandlers::Acquire(OpContext& ctx) {
  Dispatcher& d = *ctx.dispatcher;
  Request& r = ctx.request;
  const bool storage_down = !d.storage_ok_;
  if (storage_down && !d.config_->fail_open) {
    return Status::Unavailable(
        "storage: the database cannot be written; acquires fail closed "
        "until it recovers");
  }
  AcquireRequest& a = r.acquire;
  a.user.assign(r.Text(FastKey::kUser));
  if (Status s = MayActAs(ctx, *d.config_, a.user); !s.ok()) return s;
  a.task.assign(r.Text(FastKey::kTask));
  a.resource.assign(r.Text(FastKey::kResource));
  a.model.assign(r.Text(FastKey::kModel));
  a.parent.assign(r.Text(FastKey::kParent));
  a.fingerprint.assign(r.Text(FastKey::kFingerprint));
  a.tokens = r.Int(FastKey::kTokens, 0);
  a.requests = r.Int(FastKey::kRequests, 1);
  a.dry_run = false;
  if (LoadFirst(ctx, ctx.engine->MissingFor(a))) return Status::Ok();
  if (static_cast<int64_t>(ctx.engine->resident_subjects()) >=
          d.config_->max_subjects &&
      ctx.engine->AddsSubjects(a)) {
    d.stats_->limit_hits.Add(LimitHit::kMaxSubjects);
    return Status::Unavailable(
        "user: " + std::to_string(ctx.engine->resident_subjects()) +
        " subjects in memory (max_subjects); no room for a new one until "
        "idle ones are evicted");
  }
  if (int64_t wait_ms = r.Int(FastKey::kWaitMs, 0);
      wait_ms > 0 && d.waiters_ != nullptr) {
    d.waiters_->Acquire(
        ParkRequest{ctx.peer.conn, r.IdJson(), AcquireRequest(a), wait_ms});
    ctx.parked = true;
    return Status::Ok();
  }
  AcquireOutcome* outcome = &r.outcome;
  if (d.cluster_ != nullptr) d.cluster_->TakeShort();  // a waiter's
  if (Status s = d.decider_.Acquire(a, ctx.peer.conn, ctx.now_us, outcome);
      !s.ok()) {
    return s;
  }
  if (!outcome->granted && d.cluster_ != nullptr &&
      d.cluster_->TakeShort()) {
    if (Status s = HoldForCluster(ctx); !s.ok() || ctx.parked) return s;
  }
  d.CountAcquireLater(AcquireAnswer{&a, outcome->granted,
                                    outcome->denial.reason,
                                    outcome->usd_nano});
  if (outcome->granted && storage_down) ++d.counters_.fail_open_grants;
  AppendAcquireReply(r, *outcome, ctx.out);
  ctx.written = true;
  return Status::Ok();
}

// A lease may be settled only by a peer allowed to act as its user.
Status OpHandlers::MayTouchLease(const OpContext& ctx,
                                 const std::string& lease_id) {
  const Lease* lease = ctx.engine->FindLease(lease_id);
  if (lease == nullptr) return Status::Ok();  // unknown or settled
  return MayActAs(ctx, *ctx.dispatcher->config_, lease->user());
}

Status OpHandlers::Commit(OpContext& ctx) {
  Request& r = ctx.request;
  CommitRequest& c = r.commit;
  c.lease.assign(r.Text(FastKey::kLease));
  if (Status s = MayTouchLease(ctx, c.lease); !s.ok()) return s;
  c.tokens = r.OptInt(FastKey::kTokens);
  c.input_tokens = r.OptInt(FastKey::kInputTokens);
  c.output_tokens = r.OptInt(FastKey::kOutputTokens);
  c.latency_ms = r.Int(FastKey::kLatencyMs, -1);
  const std::string_view outcome = r.Text(FastKey::kOutcome);
  c.outcome.assign(outcome.empty() ? std::string_view("ok") : outcome);
  c.estimated = r.Text(FastKey::kUsage) == "estimated";
  if (c.tokens && (c.input_tokens || c.output_tokens) &&
      *c.tokens < c.input_tokens.value_or(0) + c.output_tokens.value_or(0)) {
    return Status::BadRequest(
        "tokens: smaller than input_tokens + output_tokens");
  }
  auto s = ctx.dispatcher->decider_.Commit(
      c, r.Int(FastKey::kRetryAfterMs, 0), ctx.now_us);
  if (!s.ok()) return s.status();
  ++ctx.dispatcher->counters_.commits;
  AppendCommitReply(r, *s, ctx.out);
  ctx.written = true;
  return Status::Ok();
}

Status OpHandlers::Cancel(OpContext& ctx) {
  Request& r = ctx.request;
  std::string& lease_id = r.commit.lease;
  lease_id.assign(r.Text(FastKey::kLease));
  if (Status s = MayTouchLease(ctx, lease_id); !s.ok()) return s;
  auto dup = ctx.dispatcher->decider_.Cancel(lease_id, ctx.now_us);
  if (!dup.ok()) return dup.status();
  ++ctx.dispatcher->counters_.cancels;
  AppendCancelReply(r, *dup, ctx.out);
  ctx.written = true;
  return Status::Ok();
}

Status OpHandlers::StatusOp(OpContext& ctx) {
  const json& req = ctx.request.body();
  std::string scope;
  int given = 0;
  for (const char* kind : {"user", "task", "resource"}) {
    if (req.contains(kind) && !req[kind].is_null()) {
      ++given;
      scope = std::string(kind) + ":" + req[kind].get<std::string>();
    }
  }
  if (given != 1) {
    return Status::BadRequest(
        "user: exactly one of user, task or resource is required");
  }
  if (LoadFirst(ctx, ctx.engine->MissingForScope(scope))) return Status::Ok();
  if (req.contains("user") && !req["user"].is_null()) {
    if (Status s = MayActAs(ctx, *ctx.dispatcher->config_, BodyStr(req, "user"));
        !s.ok())
      return s;
  } else if (req.contains("task") && !req["task"].is_null()) {
    std::string owner = ctx.engine->TaskOwner(BodyStr(req, "task"));
    if (!owner.empty()) {
      if (Status s = MayActAs(ctx, *ctx.dispatcher->config_, owner); !s.ok())
        return s;
    }
  }
  StatusReport report = ctx.engine->Report(scope, ctx.now_us);
  json limits = json::array();
  for (const LimitStatus& l : report.limits) {
    json entry = {{"scope", l.scope},
                  {"name", l.spec.name},
                  {"resource", ResourceName(l.spec.resource)},
                  {"algorithm", AlgorithmName(l.spec.algorithm)},
                  {"limit", Amount(l.spec.resource, l.usage.limit)},
                  {"used", Amount(l.spec.resource, l.usage.used)},
                  {"held", Amount(l.spec.resource, l.usage.held)},
                  {"remaining", Amount(l.spec.resource, l.usage.remaining)},
                  {"resets_in_ms", OptionalMs(l.usage.resets_in_us)}};
    if (l.spec.shadow) entry["shadow"] = true;
    limits.push_back(std::move(entry));
  }
  json& reply = *ctx.reply;
  reply["scope"] = report.scope;
  reply["limits"] = std::move(limits);
  reply["spend"] = TotalsJson(report.spend);
  reply["reserved"] = TotalsJson(report.reserved);
  reply["breakers"] = BreakersJson(ctx.dispatcher->decider_.Views(
      ctx.engine->StatusScopes(scope), ctx.now_us));
  if (ctx.dispatcher->waiters_ != nullptr) {
    reply["waiters"] = ctx.dispatcher->waiters_->CountFor(scope);
  }
  return Status::Ok();
}

Status OpHandlers::Usage(OpContext& ctx) {
  Dispatcher& d = *ctx.dispatcher;
  if (d.deferred_ops_ == nullptr) {
    return Status::Unavailable("usage: the ledger is not available here");
  }
  const json& req = ctx.request.body();
  if (Status s = MayActAs(ctx, *d.config_, BodyStr(req, "user")); !s.ok()) {
    return s;
  }
  UsageQuery q;
  q.user = BodyStr(req, "user");
  q.task = BodyStr(req, "task");
  q.since_ms = BodyInt(req, "since_ms", 0);
  q.by = BodyStr(req, "by");  // "" when absent or null
  if (q.by.empty()) q.by = "task";
  if (q.by == "total") q.by = "";
  auto id = req.find("id");
  d.deferred_ops_->Usage(ctx.peer.conn, id == req.end() ? json(nullptr) : *id,
                         std::move(q));
  d.deferred_ = true;
  ctx.parked = true;
  return Status::Ok();
}

}  // namespace brake
