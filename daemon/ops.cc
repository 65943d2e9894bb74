// The ops table: every op braked answers, its fields and its handler
// (op_handlers.h), and who may act as whom.
#include "daemon/ops.h"

#include "daemon/observe_ops.h"
#include "daemon/op_handlers.h"

namespace brake {

using json = nlohmann::json;

namespace {

constexpr int64_t kMaxTokens = 1'000'000'000'000;  // 1e12 per call
constexpr int64_t kMaxRequests = 1'000'000;
constexpr int64_t kMaxWaitMs = 3'600'000;
constexpr int64_t kMaxLatencyMs = 86'400'000;

}  // namespace

Status MayActAs(const Peer& peer, const Config& config,
                std::string_view user) {
  if (peer.admin || peer.front || config.uid_users.empty()) {
    return Status::Ok();
  }
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
      {"retry_after_ms", FieldKind::kInt, false, 0, kMaxLatencyMs},
      {"usage", FieldKind::kEnum, false, 0, 0, "reported|estimated"}},
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
