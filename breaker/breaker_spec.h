// BreakerSpec: the rules and timings of one circuit breaker, as validated data.
//
// The daemon parses PROTOCOL.md's BREAKER object into a BreakerSpec and checks
// it with ValidateBreakerSpec(); breaker/ only relies on that for sensible
// behaviour, never for memory safety (a nonsensical rule simply never trips).
// Also the breaker's vocabulary: its states, the causes a breaker opens for,
// and the outcomes a call reports, each with its wire name. Values only; any
// thread.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "common/status.h"

namespace brake::breaker {

// The same call fingerprint `repeats` times within `window_ms` in one task
// is a retry loop.
struct LoopRule {
  int64_t repeats = 5;
  int64_t window_ms = 60000;
  bool operator==(const LoopRule&) const = default;
};

// Once at least `min_calls` outcomes with a known latency are in the stat
// window, more than `ratio` of them slower than `max_rt_ms` trips.
struct SlowRule {
  int64_t max_rt_ms = 2000;
  double ratio = 0.5;
  int64_t min_calls = 10;
  int64_t window_ms = 10000;
  bool operator==(const SlowRule&) const = default;
};

// Once at least `min_calls` outcomes are in the stat window, more than `ratio`
// of them `error` or `timeout` trips.
struct ErrorRule {
  double ratio = 0.5;
  int64_t min_calls = 10;
  int64_t window_ms = 10000;
  bool operator==(const ErrorRule&) const = default;
};

// More than `tokens` settled within `window_ms` trips (a runaway agent).
struct SpendVelocityRule {
  int64_t tokens = 200000;
  int64_t window_ms = 60000;
  bool operator==(const SpendVelocityRule&) const = default;
};

struct BreakerSpec {
  std::optional<LoopRule> loop;
  std::optional<SlowRule> slow;
  std::optional<ErrorRule> errors;
  std::optional<SpendVelocityRule> spend_velocity;
  // The first open lasts `open_ms`; the n-th consecutive re-open (a probe
  // failed) lasts open_ms * open_backoff^n, at most `max_open_ms`.
  int64_t open_ms = 30000;
  double open_backoff = 2.0;
  int64_t max_open_ms = 600000;
  // Acquires let through in half-open; all must succeed to close.
  int64_t half_open_probes = 3;
  bool operator==(const BreakerSpec&) const = default;
};

// Bounds that ValidateBreakerSpec enforces.
inline constexpr int64_t kMaxWindowMs = 30LL * 24 * 3600 * 1000;  // 30 days
inline constexpr int64_t kMaxOpenMs = 30LL * 24 * 3600 * 1000;
inline constexpr int64_t kMaxRepeats = 1000;
inline constexpr int64_t kMaxHalfOpenProbes = 1000000;
inline constexpr double kMaxOpenBackoff = 1000.0;

// Ok, or BadRequest naming the field relative to the BREAKER object, e.g.
// "slow.ratio: must be between 0 and 1". The rules: loop.repeats in
// [2, kMaxRepeats]; every window_ms in [1, kMaxWindowMs]; max_rt_ms >= 0;
// ratio in [0, 1]; min_calls >= 1; spend_velocity.tokens >= 1; open_ms in
// [1, kMaxOpenMs]; open_backoff in [1, kMaxOpenBackoff]; max_open_ms in
// [open_ms, kMaxOpenMs]; half_open_probes in [1, kMaxHalfOpenProbes].
Status ValidateBreakerSpec(const BreakerSpec& spec);

enum class BreakerState { kClosed, kOpen, kHalfOpen };

// Why a breaker is open (kNone while closed). Wire names as in PROTOCOL.md's
// breaker_open reason.
enum class Cause {
  kNone,
  kLoop,
  kSlowCalls,
  kErrors,
  kSpendVelocity,
  kThrottled,
  kManual,
};

// How a call ended, as committed (PROTOCOL.md's `outcome`).
enum class Outcome { kOk, kError, kTimeout, kThrottled };

// "closed", "open", "half_open".
std::string_view StateName(BreakerState state);
// "none" for kNone (never on the wire), "loop", "slow_calls", "errors",
// "spend_velocity", "throttled", "manual".
std::string_view CauseName(Cause cause);
// "ok", "error", "timeout", "throttled".
std::string_view OutcomeName(Outcome outcome);
// Inverse lookups; false (and *out unchanged) for an unknown name.
bool ParseState(std::string_view name, BreakerState* out);
bool ParseCause(std::string_view name, Cause* out);
bool ParseOutcome(std::string_view name, Outcome* out);

}  // namespace brake::breaker
