// LimitSpec: one limit of a policy, as validated data.
//
// The daemon parses PROTOCOL.md's LIMIT objects into LimitSpec (see
// daemon/policy_codec.h); budget/ only ever sees validated specs. Amounts are
// integers in the unit of `resource`: requests, tokens, or nano-usd
// (1 usd = 1e9). Times are integer milliseconds as on the wire.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

namespace brake {

enum class Algorithm {
  kTokenBucket,
  kWarmup,
  kSlidingLog,
  kFixedWindow,
  kLeakyBucket,
  kQuota,
  kConcurrency,
};

enum class Resource { kRequests, kTokens, kUsd };

// Calendar periods of a quota, on UTC boundaries. Weeks start on Monday.
enum class Period { kHour, kDay, kWeek, kMonth, kTotal };

inline constexpr int64_t kNanoUsdPerUsd = 1'000'000'000;

struct LimitSpec {
  std::string name;
  Resource resource = Resource::kRequests;
  Algorithm algorithm = Algorithm::kTokenBucket;
  // token_bucket, warmup, leaky_bucket: `rate` units per `per_ms`.
  int64_t rate = 0;
  int64_t per_ms = 1000;
  // token_bucket: stored permits cap; defaults to `rate`.
  int64_t burst = 0;
  bool pay_later = false;
  // warmup
  int64_t warmup_ms = 0;
  double cold_factor = 3.0;
  // sliding_log, fixed_window, quota, concurrency: the cap, in resource units.
  int64_t limit = 0;
  // sliding_log, fixed_window
  int64_t window_ms = 0;
  // leaky_bucket: most waiters held at once
  int64_t queue = 0;
  // quota
  Period period = Period::kDay;
  // evaluated and counted, never denies
  bool shadow = false;
  // cluster mode: kept per daemon instead of shared by the cluster
  bool local = false;

  bool operator==(const LimitSpec&) const = default;
};

// What a limit holds at most: a rate limit's burst (its rate when it sets
// none), else its `limit`. The x-ratelimit-limit-* of the HTTP front.
inline int64_t Capacity(const LimitSpec& spec) {
  const bool rate = spec.algorithm == Algorithm::kTokenBucket ||
                    spec.algorithm == Algorithm::kWarmup ||
                    spec.algorithm == Algorithm::kLeakyBucket;
  if (!rate) return spec.limit;
  return spec.burst > 0 ? spec.burst : spec.rate;
}

// A limit shared, read-only, by its policy and every limiter made from it:
// one copy per policy limit rather than one per subject. A limiter keeps it
// alive after its policy is replaced or deleted. Made from a LimitSpec (a
// private copy, as tests and one-off limiters want) or a shared one.
struct SpecRef {
  SpecRef(LimitSpec spec)  // NOLINT: implicit, a copy is a valid SpecRef
      : ptr(std::make_shared<const LimitSpec>(std::move(spec))) {}
  SpecRef(std::shared_ptr<const LimitSpec> shared)  // NOLINT
      : ptr(std::move(shared)) {}
  std::shared_ptr<const LimitSpec> ptr;  // never null
};

std::string_view AlgorithmName(Algorithm a);
std::string_view ResourceName(Resource r);
std::string_view PeriodName(Period p);
// Inverse lookups; false when `name` is not a known value.
bool ParseAlgorithm(std::string_view name, Algorithm* out);
bool ParseResource(std::string_view name, Resource* out);
bool ParsePeriod(std::string_view name, Period* out);

}  // namespace brake
