// The ops operators call: policies, resets, prices, breakers and
// cluster.status (op_handlers.h).
#include <string>
#include <utility>
#include <vector>

#include "cluster/shared_limiter.h"
#include "daemon/json_fields.h"
#include "daemon/op_handlers.h"
#include "daemon/policy_codec.h"
#include "daemon/replies.h"

namespace brake {

using json = nlohmann::json;

Status OpHandlers::PolicySet(OpContext& ctx) {
  const json& req = ctx.request.body();
  std::string scope = BodyStr(req, "scope");
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
    ctx.dispatcher->cluster_->PublishPolicy(scope, policy->json);
  }
  json canonical = json::parse(policy->json);
  ctx.dispatcher->decider_.SetPolicy(scope, std::move(*policy));
  (*ctx.reply)["scope"] = scope;
  (*ctx.reply)["policy"] = std::move(canonical);
  return Status::Ok();
}

Status OpHandlers::PolicyGet(OpContext& ctx) {
  std::string scope = BodyStr(ctx.request.body(), "scope");
  const Policy* p = ctx.engine->GetPolicy(scope);
  (*ctx.reply)["scope"] = scope;
  (*ctx.reply)["policy"] = p ? json::parse(p->json) : json(nullptr);
  return Status::Ok();
}

Status OpHandlers::PolicyList(OpContext& ctx) {
  json list = json::array();
  for (const auto& [scope, policy] : ctx.engine->policies()) {
    json entry = json::parse(policy.json);
    entry["scope"] = scope;
    list.push_back(std::move(entry));
  }
  (*ctx.reply)["policies"] = std::move(list);
  return Status::Ok();
}

Status OpHandlers::PolicyDelete(OpContext& ctx) {
  const std::string scope = BodyStr(ctx.request.body(), "scope");
  if (ctx.dispatcher->cluster_ != nullptr) {
    ctx.dispatcher->cluster_->PublishPolicy(scope, "");
  }
  (*ctx.reply)["deleted"] = ctx.dispatcher->decider_.DeletePolicy(scope);
  return Status::Ok();
}

// Cluster mode: a reset of one subject clears its shared limits in Redis
// too, and every daemon resets its own counters of it. (A whole kind,
// user:*, is refused before: it is not reset across the cluster.)
Status OpHandlers::ResetShared(OpContext& ctx, const std::string& scope) {
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

Status OpHandlers::Reset(OpContext& ctx) {
  std::string scope = BodyStr(ctx.request.body(), "scope");
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

Status OpHandlers::PricesSet(OpContext& ctx) {
  const json& req = ctx.request.body();
  Price p{UsdToNano(req["input_usd_per_mtok"].get<double>()),
          UsdToNano(req["output_usd_per_mtok"].get<double>())};
  ctx.engine->SetPrice(BodyStr(req, "model"), p);
  return Status::Ok();
}

json OpHandlers::BreakersJson(const std::vector<BreakerView>& views) {
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

Status OpHandlers::BreakerTrip(OpContext& ctx) {
  std::string scope = BodyStr(ctx.request.body(), "scope");
  if (scope.size() > 2 && scope.compare(scope.size() - 2, 2, ":*") == 0) {
    // Acquires consult concrete scopes; a breaker on "user:*" itself
    // would never be asked, so refuse rather than pretend.
    return Status::BadRequest(
        "scope: trip a concrete scope (global, user:NAME, task:NAME, "
        "resource:NAME), not a default");
  }
  ctx.dispatcher->decider_.Trip(scope, BodyInt(ctx.request.body(), "open_ms", 0),
                                ctx.now_us);
  (*ctx.reply)["breakers"] = BreakersJson(
      ctx.dispatcher->decider_.Views({scope}, ctx.now_us));
  return Status::Ok();
}

Status OpHandlers::BreakerReset(OpContext& ctx) {
  std::string scope = BodyStr(ctx.request.body(), "scope");
  ctx.dispatcher->decider_.Reset(scope, ctx.now_us);
  (*ctx.reply)["breakers"] = BreakersJson(
      ctx.dispatcher->decider_.Views({scope}, ctx.now_us));
  return Status::Ok();
}

Status OpHandlers::BreakerList(OpContext& ctx) {
  (*ctx.reply)["breakers"] =
      BreakersJson(ctx.dispatcher->decider_.OpenViews(ctx.now_us));
  return Status::Ok();
}

Status OpHandlers::ClusterStatus(OpContext& ctx) {
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

}  // namespace brake
