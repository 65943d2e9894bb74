// The engine's vocabulary: what an acquire asks and is answered, a policy,
// a commit, totals and status reports.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "budget/limit_spec.h"
#include "budget/limiter.h"

namespace brake {

// Why an acquire was refused; wire names in ReasonName().
enum class Reason {
  kRateLimited,
  kQuotaExhausted,
  kCostCap,
  kBreakerOpen,
  kConcurrency,
  kQueueFull,
  kTimeout,
  kTooLarge,
  kReserved,  // a cap held by open leases, not spent (Verdict::kHeld)
};
// How many Reasons there are (kReserved is the last).
inline constexpr size_t kReasonCount =
    static_cast<size_t>(Reason::kReserved) + 1;
std::string_view ReasonName(Reason r);

struct Policy {
  std::vector<LimitSpec> limits;
  std::string json;  // the policy object as set, canonical serialization
  // The policy's BREAKER object (canonical JSON), "" when none. Breakers are
  // not the engine's business (see daemon/decider.h); it only keeps them
  // with the policy.
  std::string breaker_json;
  // limits[i], shared read-only with the limiters made from it (one copy per
  // policy limit, not one per subject). Filled by Engine::SetPolicy.
  std::vector<std::shared_ptr<const LimitSpec>> shared;
};

struct AcquireRequest {
  std::string user;
  std::string task;
  std::string resource;     // "" when none
  std::string model;        // "" when none
  std::string parent;       // "" when none
  std::string fingerprint;  // "" when none
  int64_t tokens = 0;
  int64_t requests = 1;
  // Evaluate only: answer as Acquire would, but charge nothing and create
  // no lease (granted comes back without one).
  bool dry_run = false;
};

// Why an acquire was refused. Its strings are views, not copies (a denial
// is answered at once, and copying them was an eighth of a decision): the
// engine's point at its own subject scope and limit name, valid until the
// engine next changes (a policy set, a subject leaving memory). A denial
// kept longer is held as a HeldDenial.
struct Denial {
  Reason reason = Reason::kRateLimited;
  std::string_view scope;  // concrete scope, e.g. "user:alice"
  std::string_view limit;  // limit name
  int64_t retry_after_us = kNever;
  std::string_view cause;  // breaker_open: loop, slow_calls, errors, ...
  // For a quota or cost cap: the units open leases hold on it, in its
  // resource (usd in nano-usd); -1 for other limits.
  int64_t held = -1;
  Resource resource = Resource::kRequests;  // the refusing limit's
};

// A Denial that owns its strings.
struct HeldDenial {
  HeldDenial() = default;
  explicit HeldDenial(const Denial& d)
      : reason(d.reason),
        scope(d.scope),
        limit(d.limit),
        retry_after_us(d.retry_after_us),
        cause(d.cause),
        held(d.held),
        resource(d.resource) {}
  // A view of this one, valid while it is neither changed nor gone.
  Denial view() const {
    return {reason, scope, limit, retry_after_us, cause, held, resource};
  }

  Reason reason = Reason::kRateLimited;
  std::string scope;
  std::string limit;
  int64_t retry_after_us = kNever;
  std::string cause;
  int64_t held = -1;
  Resource resource = Resource::kRequests;
};

// What is left under the tightest limit of each resource (absent when no
// limit of that resource applies), and that limit's Capacity().
struct Remaining {
  std::optional<int64_t> requests;
  std::optional<int64_t> tokens;
  std::optional<int64_t> usd_nano;
  int64_t requests_capacity = 0;
  int64_t tokens_capacity = 0;
  int64_t usd_capacity_nano = 0;
};

struct AcquireOutcome {
  bool granted = false;
  std::string lease;  // when granted
  int64_t usd_nano = 0;  // what the grant reserved (0 for a dry run)
  Denial denial;      // when not
  // Granted: under the tightest limits; refused by a quota or cost cap:
  // under that one (neither spent nor held).
  Remaining remaining;
  std::vector<std::string> shadow;  // "scope/limit" of shadow limits that denied
};

struct CommitRequest {
  std::string lease;
  std::optional<int64_t> tokens;
  std::optional<int64_t> input_tokens;
  std::optional<int64_t> output_tokens;
  int64_t latency_ms = -1;
  std::string outcome = "ok";
  // The figures are the client's estimate, not the downstream's report
  // (commit's `usage`: estimated); the ledger records which.
  bool estimated = false;
};

struct Totals {
  int64_t requests = 0;
  int64_t tokens = 0;
  int64_t usd_nano = 0;
};

struct LimitStatus {
  std::string scope;
  LimitSpec spec;
  LimitUsage usage;
};

struct StatusReport {
  std::string scope;
  std::vector<LimitStatus> limits;
  Totals spend;
  Totals reserved;
};

}  // namespace brake
