#include "daemon/policy_codec.h"

#include <cstdint>
#include <set>

#include "cluster/shared_limiter.h"
#include "daemon/breaker_codec.h"
#include "daemon/json_fields.h"

namespace brake {
namespace {

constexpr int64_t kMaxCount = 1'000'000'000'000'000;  // 1e15 units
constexpr int64_t kMaxRate = 1'000'000'000;
constexpr int64_t kMaxMs = 10'000'000'000;  // ~115 days
constexpr double kMaxUsd = 1e9;

// Which fields each algorithm takes beyond name/resource/algorithm/shadow/
// local.
struct AlgorithmFields {
  Algorithm algorithm;
  std::set<std::string> fields;
};

const AlgorithmFields kFields[] = {
    {Algorithm::kTokenBucket, {"rate", "per_ms", "burst", "pay_later"}},
    {Algorithm::kWarmup, {"rate", "per_ms", "warmup_ms", "cold_factor"}},
    {Algorithm::kSlidingLog, {"limit", "window_ms"}},
    {Algorithm::kFixedWindow, {"limit", "window_ms"}},
    {Algorithm::kLeakyBucket, {"rate", "per_ms", "queue"}},
    {Algorithm::kQuota, {"limit", "period"}},
    {Algorithm::kConcurrency, {"limit"}},
};

const std::set<std::string> kCommonFields{"name", "resource", "algorithm",
                                          "shadow", "local"};

// What every limit has: its name, resource, algorithm and shadow flag;
// no field its algorithm does not take; a resource its algorithm can count.
// `allowed` is set to the algorithm's own fields.
Status ParseLimitHead(const json& j, const std::string& field, LimitSpec* spec,
                      const std::set<std::string>** allowed) {
  auto name = ReadString(j, "name", std::nullopt, field);
  if (!name.ok()) return name.status();
  if (Status s = ValidateName(*name, field + ".name"); !s.ok()) return s;
  if (name->size() > 64) {
    return Status::BadRequest(field + ".name: longer than 64 bytes");
  }
  spec->name = *name;
  auto resource = ReadString(j, "resource", std::nullopt, field);
  if (!resource.ok()) return resource.status();
  if (!ParseResource(*resource, &spec->resource)) {
    return Status::BadRequest(field +
                              ".resource: must be requests, tokens or usd");
  }
  auto algorithm = ReadString(j, "algorithm", std::nullopt, field);
  if (!algorithm.ok()) return algorithm.status();
  if (!ParseAlgorithm(*algorithm, &spec->algorithm)) {
    return Status::BadRequest(
        field +
        ".algorithm: must be token_bucket, warmup, sliding_log, "
        "fixed_window, leaky_bucket, quota or concurrency");
  }
  for (const auto& f : kFields)
    if (f.algorithm == spec->algorithm) *allowed = &f.fields;
  for (const auto& [key, value] : j.items()) {
    if (!kCommonFields.count(key) && !(*allowed)->count(key)) {
      return Status::BadRequest(field + "." + key + ": not a field of " +
                                *algorithm);
    }
  }
  auto shadow = ReadBool(j, "shadow", false, field);
  if (!shadow.ok()) return shadow.status();
  spec->shadow = *shadow;
  auto local = ReadBool(j, "local", false, field);
  if (!local.ok()) return local.status();
  spec->local = *local;

  if (spec->resource == Resource::kUsd &&
      spec->algorithm != Algorithm::kQuota &&
      spec->algorithm != Algorithm::kSlidingLog &&
      spec->algorithm != Algorithm::kFixedWindow) {
    return Status::BadRequest(field +
                              ".resource: usd limits must be quota, "
                              "sliding_log or fixed_window");
  }
  if (spec->algorithm == Algorithm::kConcurrency &&
      spec->resource != Resource::kRequests) {
    return Status::BadRequest(field +
                              ".resource: concurrency counts requests");
  }
  return Status::Ok();
}

// The fields of the limit's algorithm (`allowed`), each within its bounds.
Status ParseLimitFields(const json& j, const std::string& field,
                        const std::set<std::string>& allowed,
                        LimitSpec* spec) {
  if (allowed.count("rate")) {
    auto rate = ReadInt(j, "rate", 1, kMaxRate, std::nullopt, field);
    if (!rate.ok()) return rate.status();
    spec->rate = *rate;
    auto per = ReadInt(j, "per_ms", 1, kMaxMs, 1000, field);
    if (!per.ok()) return per.status();
    spec->per_ms = *per;
  }
  if (allowed.count("burst")) {
    auto burst = ReadInt(j, "burst", 1, kMaxCount, spec->rate, field);
    if (!burst.ok()) return burst.status();
    spec->burst = *burst;
    auto pay_later = ReadBool(j, "pay_later", false, field);
    if (!pay_later.ok()) return pay_later.status();
    spec->pay_later = *pay_later;
  }
  if (allowed.count("warmup_ms")) {
    auto warmup = ReadInt(j, "warmup_ms", 1, kMaxMs, std::nullopt, field);
    if (!warmup.ok()) return warmup.status();
    spec->warmup_ms = *warmup;
    auto cold = ReadNumber(j, "cold_factor", 1.0, 1000.0, 3.0, field);
    if (!cold.ok()) return cold.status();
    spec->cold_factor = *cold;
  }
  if (allowed.count("limit")) {
    if (spec->resource == Resource::kUsd) {
      auto limit = ReadNumber(j, "limit", 0.0, kMaxUsd, std::nullopt, field);
      if (!limit.ok()) return limit.status();
      spec->limit = UsdToNano(*limit);
    } else {
      auto limit = ReadInt(j, "limit", 1, kMaxCount, std::nullopt, field);
      if (!limit.ok()) return limit.status();
      spec->limit = *limit;
    }
  }
  if (allowed.count("window_ms")) {
    auto window = ReadInt(j, "window_ms", 1, kMaxMs, std::nullopt, field);
    if (!window.ok()) return window.status();
    spec->window_ms = *window;
  }
  if (allowed.count("queue")) {
    auto queue = ReadInt(j, "queue", 0, 1'000'000, 0, field);
    if (!queue.ok()) return queue.status();
    spec->queue = *queue;
  }
  if (allowed.count("period")) {
    auto period = ReadString(j, "period", std::nullopt, field);
    if (!period.ok()) return period.status();
    if (!ParsePeriod(*period, &spec->period)) {
      return Status::BadRequest(
          field + ".period: must be hour, day, week, month or total");
    }
  }
  return Status::Ok();
}

}  // namespace

Result<LimitSpec> ParseLimit(const json& j, const std::string& field) {
  if (!j.is_object()) {
    return Status::BadRequest(field + ": must be an object");
  }
  LimitSpec spec;
  const std::set<std::string>* allowed = nullptr;
  if (Status s = ParseLimitHead(j, field, &spec, &allowed); !s.ok()) return s;
  if (Status s = ParseLimitFields(j, field, *allowed, &spec); !s.ok()) {
    return s;
  }
  return spec;
}

json LimitToJson(const LimitSpec& spec) {
  json j = {{"name", spec.name},
            {"resource", ResourceName(spec.resource)},
            {"algorithm", AlgorithmName(spec.algorithm)}};
  const bool usd = spec.resource == Resource::kUsd;
  switch (spec.algorithm) {
    case Algorithm::kTokenBucket:
      j["rate"] = spec.rate;
      j["per_ms"] = spec.per_ms;
      j["burst"] = spec.burst;
      if (spec.pay_later) j["pay_later"] = true;
      break;
    case Algorithm::kWarmup:
      j["rate"] = spec.rate;
      j["per_ms"] = spec.per_ms;
      j["warmup_ms"] = spec.warmup_ms;
      j["cold_factor"] = spec.cold_factor;
      break;
    case Algorithm::kSlidingLog:
    case Algorithm::kFixedWindow:
      if (usd) {
        j["limit"] = NanoToUsd(spec.limit);
      } else {
        j["limit"] = spec.limit;
      }
      j["window_ms"] = spec.window_ms;
      break;
    case Algorithm::kLeakyBucket:
      j["rate"] = spec.rate;
      j["per_ms"] = spec.per_ms;
      j["queue"] = spec.queue;
      break;
    case Algorithm::kQuota:
      if (usd) {
        j["limit"] = NanoToUsd(spec.limit);
      } else {
        j["limit"] = spec.limit;
      }
      j["period"] = PeriodName(spec.period);
      break;
    case Algorithm::kConcurrency:
      j["limit"] = spec.limit;
      break;
  }
  if (spec.shadow) j["shadow"] = true;
  if (spec.local) j["local"] = true;
  return j;
}

Result<Policy> ParsePolicy(const json& j, const std::string& field) {
  std::string prefix = field.empty() ? "" : field + ".";
  if (!j.is_object()) {
    return Status::BadRequest((field.empty() ? "policy" : field) +
                              ": must be an object");
  }
  // An unknown key is refused, not ignored: a misspelt "limits" in a config
  // file must not silently become a policy without limits.
  for (const auto& [key, value] : j.items()) {
    if (key != "limits" && key != "breaker") {
      return Status::BadRequest(prefix + key + ": not a field of a policy");
    }
  }
  Policy policy;
  json canonical = json::object();
  json limits = json::array();
  if (auto it = j.find("limits"); it != j.end() && !it->is_null()) {
    if (!it->is_array()) {
      return Status::BadRequest(prefix + "limits: must be an array");
    }
    if (it->size() > 64) {
      return Status::BadRequest(prefix + "limits: at most 64 limits");
    }
    std::set<std::string> names;
    for (size_t i = 0; i < it->size(); ++i) {
      std::string f = prefix + "limits[" + std::to_string(i) + "]";
      auto spec = ParseLimit((*it)[i], f);
      if (!spec.ok()) return spec.status();
      if (!names.insert(spec->name).second) {
        return Status::BadRequest(f + ".name: duplicate limit name " +
                                  spec->name);
      }
      limits.push_back(LimitToJson(*spec));
      policy.limits.push_back(std::move(*spec));
    }
  }
  canonical["limits"] = std::move(limits);
  if (auto it = j.find("breaker"); it != j.end() && !it->is_null()) {
    auto spec = ParseBreaker(*it, prefix + "breaker");
    if (!spec.ok()) return spec.status();
    canonical["breaker"] = BreakerToJson(*spec);
    policy.breaker_json = canonical["breaker"].dump();
  }
  policy.json = canonical.dump();
  return policy;
}

Result<Policy> ParsePolicyText(std::string_view text) {
  json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return Status::BadRequest("policy: not valid JSON");
  return ParsePolicy(j, "policy");
}

Status CheckPolicyScope(const std::string& scope, const Policy& policy,
                        const std::string& field) {
  if (policy.breaker_json.empty() || scope.rfind("task:", 0) == 0) {
    return Status::Ok();
  }
  json breaker = json::parse(policy.breaker_json, nullptr, false);
  if (breaker.is_object() && breaker.contains("loop")) {
    return Status::BadRequest(
        (field.empty() ? "" : field + ".") +
        "breaker.loop: only a task's breaker sees fingerprints; set it on "
        "task:* or task:NAME, not on " + scope);
  }
  return Status::Ok();
}

Status CheckClusterPolicy(const Policy& policy, const std::string& field) {
  for (size_t i = 0; i < policy.limits.size(); ++i) {
    const LimitSpec& spec = policy.limits[i];
    if (spec.local || spec.shadow ||
        cluster::AlgorithmShareable(spec.algorithm)) {
      continue;
    }
    return Status::BadRequest(
        (field.empty() ? "" : field + ".") + "limits[" + std::to_string(i) +
        "].algorithm: " + std::string(AlgorithmName(spec.algorithm)) +
        " is not shared across daemons in cluster mode (quota, "
        "fixed_window and token_bucket are); mark the limit \"local\": "
        "true to keep it per daemon");
  }
  return Status::Ok();
}

}  // namespace brake
