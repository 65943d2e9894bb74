#include "breaker/breaker_spec.h"

#include "common/name_table.h"

#include <array>
#include <initializer_list>
#include <limits>
#include <string>
#include <utility>

namespace brake::breaker {
namespace {

constexpr std::array<std::pair<BreakerState, std::string_view>, 3> kStates{{
    {BreakerState::kClosed, "closed"},
    {BreakerState::kOpen, "open"},
    {BreakerState::kHalfOpen, "half_open"},
}};

constexpr std::array<std::pair<Cause, std::string_view>, 7> kCauses{{
    {Cause::kNone, "none"},
    {Cause::kLoop, "loop"},
    {Cause::kSlowCalls, "slow_calls"},
    {Cause::kErrors, "errors"},
    {Cause::kSpendVelocity, "spend_velocity"},
    {Cause::kThrottled, "throttled"},
    {Cause::kManual, "manual"},
}};

constexpr std::array<std::pair<Outcome, std::string_view>, 4> kOutcomes{{
    {Outcome::kOk, "ok"},
    {Outcome::kError, "error"},
    {Outcome::kTimeout, "timeout"},
    {Outcome::kThrottled, "throttled"},
}};

Status Bad(const std::string& field, const std::string& what) {
  return Status::BadRequest(field + ": " + what);
}

Status CheckRange(const std::string& field, int64_t v, int64_t lo, int64_t hi) {
  if (v < lo || v > hi) {
    return Bad(field, "must be an integer between " + std::to_string(lo) +
                          " and " + std::to_string(hi));
  }
  return Status::Ok();
}

Status CheckRatio(const std::string& field, double v) {
  // The negated comparison also refuses NaN.
  if (!(v >= 0.0 && v <= 1.0)) return Bad(field, "must be between 0 and 1");
  return Status::Ok();
}

Status FirstError(std::initializer_list<Status> checks) {
  for (const Status& st : checks) {
    if (!st.ok()) return st;
  }
  return Status::Ok();
}

}  // namespace

Status ValidateBreakerSpec(const BreakerSpec& s) {
  constexpr int64_t kBig = std::numeric_limits<int64_t>::max();
  if (s.loop) {
    Status st = FirstError({
        CheckRange("loop.repeats", s.loop->repeats, 2, kMaxRepeats),
        CheckRange("loop.window_ms", s.loop->window_ms, 1, kMaxWindowMs),
    });
    if (!st.ok()) return st;
  }
  if (s.slow) {
    Status st = FirstError({
        CheckRange("slow.max_rt_ms", s.slow->max_rt_ms, 0, kBig),
        CheckRatio("slow.ratio", s.slow->ratio),
        CheckRange("slow.min_calls", s.slow->min_calls, 1, kBig),
        CheckRange("slow.window_ms", s.slow->window_ms, 1, kMaxWindowMs),
    });
    if (!st.ok()) return st;
  }
  if (s.errors) {
    Status st = FirstError({
        CheckRatio("errors.ratio", s.errors->ratio),
        CheckRange("errors.min_calls", s.errors->min_calls, 1, kBig),
        CheckRange("errors.window_ms", s.errors->window_ms, 1, kMaxWindowMs),
    });
    if (!st.ok()) return st;
  }
  if (s.spend_velocity) {
    Status st = FirstError({
        CheckRange("spend_velocity.tokens", s.spend_velocity->tokens, 1, kBig),
        CheckRange("spend_velocity.window_ms", s.spend_velocity->window_ms, 1,
                   kMaxWindowMs),
    });
    if (!st.ok()) return st;
  }
  Status st = CheckRange("open_ms", s.open_ms, 1, kMaxOpenMs);
  if (!st.ok()) return st;
  // The negated comparison also refuses NaN.
  if (!(s.open_backoff >= 1.0 && s.open_backoff <= kMaxOpenBackoff)) {
    return Bad("open_backoff", "must be between 1 and 1000");
  }
  if (s.max_open_ms < s.open_ms || s.max_open_ms > kMaxOpenMs) {
    return Bad("max_open_ms", "must be an integer between open_ms and " +
                                  std::to_string(kMaxOpenMs));
  }
  return CheckRange("half_open_probes", s.half_open_probes, 1,
                    kMaxHalfOpenProbes);
}

std::string_view StateName(BreakerState state) {
  return NameOf(kStates, state);
}
std::string_view CauseName(Cause cause) { return NameOf(kCauses, cause); }
std::string_view OutcomeName(Outcome outcome) {
  return NameOf(kOutcomes, outcome);
}
bool ParseState(std::string_view name, BreakerState* out) {
  return LookupName(kStates, name, out);
}
bool ParseCause(std::string_view name, Cause* out) {
  return LookupName(kCauses, name, out);
}
bool ParseOutcome(std::string_view name, Outcome* out) {
  return LookupName(kOutcomes, name, out);
}

}  // namespace brake::breaker
