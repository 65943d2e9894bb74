#include "daemon/ops.h"

#include <cmath>

#include "cluster/shared_limiter.h"
#include "daemon/json_fields.h"
#include "daemon/observe_ops.h"
#include "daemon/policy_codec.h"
#include "daemon/replies.h"
#include "daemon/waiters.h"
#include "storage/store.h"

namespace brake {

using json = nlohmann::json;

namespace {

constexpr int64_t kMaxTokens = 1'000'000'000'000;  // 1e12 per call
constexpr int64_t kMaxRequests = 1'000'000;
constexpr int64_t kMaxWaitMs = 3'600'000;
constexpr int64_t kMaxLatencyMs = 86'400'000;

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

std::string Str(const json& req, const char* key) {
  auto it = req.find(key);
  return it == req.end() || it->is_null() ? "" : it->get<std::string>();
}

int64_t Int(const json& req, const char* key, int64_t fallback) {
  auto it = req.find(key);
  return it == req.end() || it->is_null() ? fallback : it->get<int64_t>();
}

}  // namespace

Status MayActAs(const Peer& peer, const Config& config,
                std::string_view user) {
  if (peer.admin || config.uid_users.empty()) return Status::Ok();
  auto it = config.uid_users.find(peer.uid);
  const std::string name(user);
  if (it != config.uid_users.end() && it->second.count(name)) {
    return Status::Ok();
  }
  return Status(ErrorCode::kForbidden,
                "user: uid " + std::to_string(peer.uid) +
                    " may not act as " + name + " (uid_users)");
}

Status MayActAs(const OpContext& ctx, const Config& config,
                std::string_view user) {
  return MayActAs(ctx.peer, config, user);
}

// Handlers reach the dispatcher's counters through this friend.
struct OpHandlers {
  // Defers the request until the `missing` subjects are loaded from storage
  // (then it is handled again); false when none are missing. Without
  // deferred ops (unit tests) the engine refuses to decide instead.
  static bool LoadFirst(OpContext& ctx, std::vector<std::string> missing) {
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
  static Status HoldForCluster(OpContext& ctx) {
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

  // Cluster mode: a reset of one subject clears its shared limits in Redis
  // too, and every daemon resets its own counters of it. (A whole kind,
  // user:*, is refused before: it is not reset across the cluster.)
  static Status ResetShared(OpContext& ctx, const std::string& scope) {
    cluster::Gate* c = ctx.dispatcher->cluster_;
    std::vector<cluster::Gate::SharedKey> keys;
    if (const Policy* policy = ctx.engine->EffectivePolicy(scope)) {
      for (const LimitSpec& spec : policy->limits) {
        if (!cluster::Shareable(spec)) continue;
        keys.push_back({cluster::ShareKeyAt(
                            ctx.dispatcher->config_->cluster->prefix, scope,
                            spec, ctx.now_us),
                        spec.algorithm == Algorithm::kTokenBucket, spec.burst});
      }
    }
    if (!c->ResetShared(scope, keys, ctx.now_us)) {
      return Status::Unavailable(c->UnavailableMessage());
    }
    return Status::Ok();
  }

  static Status Ping(OpContext& ctx) {
    (*ctx.reply)["version"] = BRAKE_VERSION;
    return Status::Ok();
  }

  static Status Acquire(OpContext& ctx) {
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
  static Status MayTouchLease(const OpContext& ctx,
                              const std::string& lease_id) {
    const Lease* lease = ctx.engine->FindLease(lease_id);
    if (lease == nullptr) return Status::Ok();  // unknown or settled
    return MayActAs(ctx, *ctx.dispatcher->config_, lease->user());
  }

  static Status Commit(OpContext& ctx) {
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

  static Status Cancel(OpContext& ctx) {
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

  static Status StatusOp(OpContext& ctx) {
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
      if (Status s = MayActAs(ctx, *ctx.dispatcher->config_, Str(req, "user"));
          !s.ok())
        return s;
    } else if (req.contains("task") && !req["task"].is_null()) {
      std::string owner = ctx.engine->TaskOwner(Str(req, "task"));
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

  static Status PolicySet(OpContext& ctx) {
    const json& req = ctx.request.body();
    std::string scope = Str(req, "scope");
    json body = json::object();
    // null is absent, as everywhere in the protocol.
    for (const char* key : {"limits", "breaker"}) {
      if (auto it = req.find(key); it != req.end() && !it->is_null()) {
        body[key] = *it;
      }
    }
    if (body.empty()) {
      // A misspelt (or null) "limits" must not silently set a policy with
      // none: that would exempt the scope from its kind's default.
      return Status::BadRequest(
          "limits: is required (or breaker); to remove a policy use "
          "policy.delete");
    }
    auto policy = ParsePolicy(body, "");
    if (!policy.ok()) return policy.status();
    if (Status s = CheckPolicyScope(scope, *policy, ""); !s.ok()) return s;
    if (ctx.dispatcher->cluster_ != nullptr) {
      if (Status s = CheckClusterPolicy(*policy, ""); !s.ok()) return s;
    }
    json canonical = json::parse(policy->json);
    if (ctx.dispatcher->cluster_ != nullptr) {
      ctx.dispatcher->cluster_->PublishPolicy(scope, policy->json);
    }
    ctx.dispatcher->decider_.SetPolicy(scope, std::move(*policy));
    (*ctx.reply)["scope"] = scope;
    (*ctx.reply)["policy"] = std::move(canonical);
    return Status::Ok();
  }

  static Status PolicyGet(OpContext& ctx) {
    std::string scope = Str(ctx.request.body(), "scope");
    const Policy* p = ctx.engine->GetPolicy(scope);
    (*ctx.reply)["scope"] = scope;
    (*ctx.reply)["policy"] = p ? json::parse(p->json) : json(nullptr);
    return Status::Ok();
  }

  static Status PolicyList(OpContext& ctx) {
    json list = json::array();
    for (const auto& [scope, policy] : ctx.engine->policies()) {
      json entry = json::parse(policy.json);
      entry["scope"] = scope;
      list.push_back(std::move(entry));
    }
    (*ctx.reply)["policies"] = std::move(list);
    return Status::Ok();
  }

  static Status PolicyDelete(OpContext& ctx) {
    const std::string scope = Str(ctx.request.body(), "scope");
    if (ctx.dispatcher->cluster_ != nullptr) {
      ctx.dispatcher->cluster_->PublishPolicy(scope, "");
    }
    (*ctx.reply)["deleted"] = ctx.dispatcher->decider_.DeletePolicy(scope);
    return Status::Ok();
  }

  static Status Reset(OpContext& ctx) {
    std::string scope = Str(ctx.request.body(), "scope");
    if (ctx.dispatcher->cluster_ != nullptr && scope.ends_with("*")) {
      return Status::BadRequest(
          "scope: in cluster mode reset takes one subject (user:NAME, "
          "task:NAME, resource:NAME or global), not a whole kind");
    }
    if (LoadFirst(ctx, ctx.engine->MissingForScope(scope))) return Status::Ok();
    if (ctx.dispatcher->cluster_ != nullptr) {
      if (Status s = ResetShared(ctx, scope); !s.ok()) return s;
    }
    ctx.engine->Reset(scope, ctx.now_us);
    (*ctx.reply)["scope"] = scope;
    return Status::Ok();
  }

  static Status PricesSet(OpContext& ctx) {
    const json& req = ctx.request.body();
    Price p{UsdToNano(req["input_usd_per_mtok"].get<double>()),
            UsdToNano(req["output_usd_per_mtok"].get<double>())};
    ctx.engine->SetPrice(Str(req, "model"), p);
    return Status::Ok();
  }

  static json BreakersJson(const std::vector<BreakerView>& views) {
    json list = json::array();
    for (const BreakerView& v : views) {
      json entry = {{"scope", v.scope},
                    {"state", breaker::StateName(v.snapshot.state)},
                    {"retry_in_ms", RetryAfterMs(v.snapshot.retry_in_us)}};
      if (v.snapshot.cause != breaker::Cause::kNone) {
        entry["cause"] = breaker::CauseName(v.snapshot.cause);
      }
      list.push_back(std::move(entry));
    }
    return list;
  }

  static Status BreakerTrip(OpContext& ctx) {
    std::string scope = Str(ctx.request.body(), "scope");
    if (scope.size() > 2 && scope.compare(scope.size() - 2, 2, ":*") == 0) {
      // Acquires consult concrete scopes; a breaker on "user:*" itself
      // would never be asked, so refuse rather than pretend.
      return Status::BadRequest(
          "scope: trip a concrete scope (global, user:NAME, task:NAME, "
          "resource:NAME), not a default");
    }
    ctx.dispatcher->decider_.Trip(scope, Int(ctx.request.body(), "open_ms", 0),
                                  ctx.now_us);
    (*ctx.reply)["breakers"] = BreakersJson(
        ctx.dispatcher->decider_.Views({scope}, ctx.now_us));
    return Status::Ok();
  }

  static Status BreakerReset(OpContext& ctx) {
    std::string scope = Str(ctx.request.body(), "scope");
    ctx.dispatcher->decider_.Reset(scope, ctx.now_us);
    (*ctx.reply)["breakers"] = BreakersJson(
        ctx.dispatcher->decider_.Views({scope}, ctx.now_us));
    return Status::Ok();
  }

  static Status BreakerList(OpContext& ctx) {
    (*ctx.reply)["breakers"] =
        BreakersJson(ctx.dispatcher->decider_.OpenViews(ctx.now_us));
    return Status::Ok();
  }

  static Status ClusterStatus(OpContext& ctx) {
    const cluster::Gate* c = ctx.dispatcher->cluster_;
    if (c == nullptr) {
      (*ctx.reply)["mode"] = "single";
      return Status::Ok();
    }
    json status = c->Status(ctx.now_us);
    (*ctx.reply)["mode"] = "cluster";
    for (auto& [key, value] : status.items()) (*ctx.reply)[key] = value;
    return Status::Ok();
  }

  static Status Usage(OpContext& ctx) {
    Dispatcher& d = *ctx.dispatcher;
    if (d.deferred_ops_ == nullptr) {
      return Status::Unavailable("usage: the ledger is not available here");
    }
    const json& req = ctx.request.body();
    if (Status s = MayActAs(ctx, *d.config_, Str(req, "user")); !s.ok()) {
      return s;
    }
    UsageQuery q;
    q.user = Str(req, "user");
    q.task = Str(req, "task");
    q.since_ms = Int(req, "since_ms", 0);
    q.by = Str(req, "by");  // "" when absent or null
    if (q.by.empty()) q.by = "task";
    if (q.by == "total") q.by = "";
    auto id = req.find("id");
    d.deferred_ops_->Usage(ctx.peer.conn, id == req.end() ? json(nullptr) : *id,
                           std::move(q));
    d.deferred_ = true;
    ctx.parked = true;
    return Status::Ok();
  }
};

namespace {

const FieldSpec kScopeField{"scope", FieldKind::kScope, true};

// Each field's FastKey, for requests the scanner read.
std::vector<Dispatcher::Op> WithScannerKeys(std::vector<Dispatcher::Op> ops) {
  for (Dispatcher::Op& op : ops)
    for (FieldSpec& f : op.fields) f.key = FastKeyOf(f.name);
  return ops;
}

const std::vector<Dispatcher::Op> kOps = WithScannerKeys({
    {"ping", false, "liveness and version", {}, &OpHandlers::Ping},
    {"acquire",
     false,
     "may this call go ahead? reserves its budget and answers a lease",
     {{"user", FieldKind::kName, true},
      {"task", FieldKind::kName, true},
      {"tokens", FieldKind::kInt, false, 0, kMaxTokens},
      {"requests", FieldKind::kInt, false, 0, kMaxRequests},
      {"model", FieldKind::kName},
      {"resource", FieldKind::kName},
      {"fingerprint", FieldKind::kName},
      {"parent", FieldKind::kName},
      {"wait_ms", FieldKind::kInt, false, 0, kMaxWaitMs}},
     &OpHandlers::Acquire},
    {"commit",
     false,
     "settles a lease with the real usage",
     {{"lease", FieldKind::kString, true},
      {"tokens", FieldKind::kInt, false, 0, kMaxTokens},
      {"input_tokens", FieldKind::kInt, false, 0, kMaxTokens},
      {"output_tokens", FieldKind::kInt, false, 0, kMaxTokens},
      {"latency_ms", FieldKind::kInt, false, 0, kMaxLatencyMs},
      {"outcome", FieldKind::kEnum, false, 0, 0,
       "ok|error|timeout|throttled"},
      {"retry_after_ms", FieldKind::kInt, false, 0, kMaxLatencyMs}},
     &OpHandlers::Commit},
    {"cancel",
     false,
     "releases a lease as if the call never happened",
     {{"lease", FieldKind::kString, true}},
     &OpHandlers::Cancel},
    {"status",
     false,
     "limits, spend and reservations of one user, task or resource",
     {{"user", FieldKind::kName},
      {"task", FieldKind::kName},
      {"resource", FieldKind::kName}},
     &OpHandlers::StatusOp},
    {"policy.set",
     true,
     "sets the limits (and breaker) of a scope",
     {kScopeField,
      {"limits", FieldKind::kArray},
      {"breaker", FieldKind::kObject}},
     &OpHandlers::PolicySet},
    {"policy.get", true, "the policy of a scope", {kScopeField},
     &OpHandlers::PolicyGet},
    {"policy.list", true, "every policy", {}, &OpHandlers::PolicyList},
    {"policy.delete", true, "removes the policy of a scope", {kScopeField},
     &OpHandlers::PolicyDelete},
    {"reset", true, "clears the counters and spend of a scope", {kScopeField},
     &OpHandlers::Reset},
    {"prices.set",
     true,
     "sets a model's prices in usd per million tokens",
     {{"model", FieldKind::kModel, true},
      {"input_usd_per_mtok", FieldKind::kNumber, true, 0, 1'000'000},
      {"output_usd_per_mtok", FieldKind::kNumber, true, 0, 1'000'000}},
     &OpHandlers::PricesSet},
    {"breaker.trip",
     true,
     "opens a scope's breaker by hand (cause manual)",
     {kScopeField, {"open_ms", FieldKind::kInt, false, 1, 2592000000}},
     &OpHandlers::BreakerTrip},
    {"breaker.reset", true, "closes a scope's breaker", {kScopeField},
     &OpHandlers::BreakerReset},
    {"breaker.list", false, "every breaker that is not closed", {},
     &OpHandlers::BreakerList},
    {"usage",
     false,
     "settled usage of a user from the ledger, by task, model or day",
     {{"user", FieldKind::kName, true},
      {"task", FieldKind::kName},
      {"since_ms", FieldKind::kInt, false, 0, 253402300799999},
      {"by", FieldKind::kEnum, false, 0, 0, "task|model|day|total"}},
     &OpHandlers::Usage},
    {"cluster.status", true,
     "cluster mode: this node, its link to Redis, the shares it holds", {},
     &OpHandlers::ClusterStatus},
    {"metrics", false, "Prometheus text exposition", {},
     &MetricsOp},
    {"top",
     false,
     "the busiest users, tasks or resources since braked started",
     {{"by", FieldKind::kEnum, true, 0, 0, "user|task|resource"},
      {"limit", FieldKind::kInt, false, 1, kTopMaxRows}},
     &TopOp},
});

}  // namespace

const std::vector<Dispatcher::Op>& AllOps() { return kOps; }

const Dispatcher::Op* FindOp(std::string_view name) {
  for (const Dispatcher::Op& op : kOps)
    if (name == op.name) return &op;
  return nullptr;
}

}  // namespace brake
