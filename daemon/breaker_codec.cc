#include "daemon/breaker_codec.h"

#include <set>

#include "daemon/json_fields.h"

namespace brake {
namespace {

using json = nlohmann::json;
constexpr int64_t kMaxMs = breaker::kMaxWindowMs;

Status OnlyFields(const json& j, const std::set<std::string>& allowed,
                  const std::string& field) {
  if (!j.is_object()) return Status::BadRequest(field + ": must be an object");
  for (const auto& [key, value] : j.items()) {
    if (!allowed.count(key)) {
      return Status::BadRequest(field + "." + key + ": unknown field");
    }
  }
  return Status::Ok();
}

#define READ_INT(obj, key, min, max, dst, prefix)                     \
  do {                                                                \
    auto v_ = ReadInt(obj, key, min, max, dst, prefix);               \
    if (!v_.ok()) return v_.status();                                 \
    dst = *v_;                                                        \
  } while (0)
#define READ_NUM(obj, key, min, max, dst, prefix)                     \
  do {                                                                \
    auto v_ = ReadNumber(obj, key, min, max, dst, prefix);            \
    if (!v_.ok()) return v_.status();                                 \
    dst = *v_;                                                        \
  } while (0)

}  // namespace

Result<breaker::BreakerSpec> ParseBreaker(const json& j,
                                          const std::string& field) {
  breaker::BreakerSpec spec;
  if (Status s = OnlyFields(j,
                            {"loop", "slow", "errors", "spend_velocity",
                             "open_ms", "open_backoff", "max_open_ms",
                             "half_open_probes"},
                            field);
      !s.ok()) {
    return s;
  }
  if (auto it = j.find("loop"); it != j.end() && !it->is_null()) {
    std::string f = field + ".loop";
    if (Status s = OnlyFields(*it, {"repeats", "window_ms"}, f); !s.ok())
      return s;
    breaker::LoopRule r;
    READ_INT(*it, "repeats", 2, breaker::kMaxRepeats, r.repeats, f);
    READ_INT(*it, "window_ms", 1, kMaxMs, r.window_ms, f);
    spec.loop = r;
  }
  if (auto it = j.find("slow"); it != j.end() && !it->is_null()) {
    std::string f = field + ".slow";
    if (Status s = OnlyFields(*it, {"max_rt_ms", "ratio", "min_calls",
                                    "window_ms"}, f);
        !s.ok())
      return s;
    breaker::SlowRule r;
    READ_INT(*it, "max_rt_ms", 0, kMaxMs, r.max_rt_ms, f);
    READ_NUM(*it, "ratio", 0.0, 1.0, r.ratio, f);
    READ_INT(*it, "min_calls", 1, 1'000'000'000, r.min_calls, f);
    READ_INT(*it, "window_ms", 1, kMaxMs, r.window_ms, f);
    spec.slow = r;
  }
  if (auto it = j.find("errors"); it != j.end() && !it->is_null()) {
    std::string f = field + ".errors";
    if (Status s = OnlyFields(*it, {"ratio", "min_calls", "window_ms"}, f);
        !s.ok())
      return s;
    breaker::ErrorRule r;
    READ_NUM(*it, "ratio", 0.0, 1.0, r.ratio, f);
    READ_INT(*it, "min_calls", 1, 1'000'000'000, r.min_calls, f);
    READ_INT(*it, "window_ms", 1, kMaxMs, r.window_ms, f);
    spec.errors = r;
  }
  if (auto it = j.find("spend_velocity"); it != j.end() && !it->is_null()) {
    std::string f = field + ".spend_velocity";
    if (Status s = OnlyFields(*it, {"tokens", "window_ms"}, f); !s.ok())
      return s;
    breaker::SpendVelocityRule r;
    READ_INT(*it, "tokens", 1, 1'000'000'000'000'000, r.tokens, f);
    READ_INT(*it, "window_ms", 1, kMaxMs, r.window_ms, f);
    spec.spend_velocity = r;
  }
  READ_INT(j, "open_ms", 1, breaker::kMaxOpenMs, spec.open_ms, field);
  READ_NUM(j, "open_backoff", 1.0, breaker::kMaxOpenBackoff,
           spec.open_backoff, field);
  READ_INT(j, "max_open_ms", 1, breaker::kMaxOpenMs, spec.max_open_ms, field);
  READ_INT(j, "half_open_probes", 1, breaker::kMaxHalfOpenProbes,
           spec.half_open_probes, field);
  if (spec.max_open_ms < spec.open_ms) {
    return Status::BadRequest(field +
                              ".max_open_ms: must not be below open_ms");
  }
  if (Status s = breaker::ValidateBreakerSpec(spec); !s.ok()) {
    return Status::BadRequest(field + "." + s.message());
  }
  return spec;
}

json BreakerToJson(const breaker::BreakerSpec& spec) {
  json j = json::object();
  if (spec.loop) {
    j["loop"] = {{"repeats", spec.loop->repeats},
                 {"window_ms", spec.loop->window_ms}};
  }
  if (spec.slow) {
    j["slow"] = {{"max_rt_ms", spec.slow->max_rt_ms},
                 {"ratio", spec.slow->ratio},
                 {"min_calls", spec.slow->min_calls},
                 {"window_ms", spec.slow->window_ms}};
  }
  if (spec.errors) {
    j["errors"] = {{"ratio", spec.errors->ratio},
                   {"min_calls", spec.errors->min_calls},
                   {"window_ms", spec.errors->window_ms}};
  }
  if (spec.spend_velocity) {
    j["spend_velocity"] = {{"tokens", spec.spend_velocity->tokens},
                           {"window_ms", spec.spend_velocity->window_ms}};
  }
  j["open_ms"] = spec.open_ms;
  j["open_backoff"] = spec.open_backoff;
  j["max_open_ms"] = spec.max_open_ms;
  j["half_open_probes"] = spec.half_open_probes;
  return j;
}

}  // namespace brake
