// Helpers shared by the engine's unit tests: limit specs, requests, and
// acquire/commit shorthands with explicit clock values.
#pragma once

#include <catch2/catch.hpp>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "budget/calendar.h"
#include "budget/engine.h"
#include "daemon/lease_codec.h"
#include "daemon/policy_codec.h"

namespace brake::engine_test {


// 2024-03-01 10:00:00 UTC: 14 hours before a daily quota resets.
inline const int64_t kT0 = DaysFromCivil({2024, 3, 1}) * kUsPerDay + 10 * kUsPerHour;
constexpr int64_t kSecondUs = 1'000'000;
constexpr int64_t kTtlUs = 60 * kSecondUs;

inline LimitSpec QuotaSpec(const std::string& name, Resource resource, int64_t limit,
                    Period period = Period::kDay) {
  LimitSpec s;
  s.name = name;
  s.resource = resource;
  s.algorithm = Algorithm::kQuota;
  s.limit = limit;
  s.period = period;
  return s;
}

inline LimitSpec WindowSpec(const std::string& name, int64_t limit,
                     int64_t window_ms) {
  LimitSpec s;
  s.name = name;
  s.resource = Resource::kRequests;
  s.algorithm = Algorithm::kFixedWindow;
  s.limit = limit;
  s.window_ms = window_ms;
  return s;
}

inline LimitSpec LogSpec(const std::string& name, Resource resource, int64_t limit,
                  int64_t window_ms) {
  LimitSpec s;
  s.name = name;
  s.resource = resource;
  s.algorithm = Algorithm::kSlidingLog;
  s.limit = limit;
  s.window_ms = window_ms;
  return s;
}

// `rate` per `per_ms`, storing at most `burst`.
inline LimitSpec BucketSpec(const std::string& name, int64_t rate, int64_t per_ms,
                     int64_t burst) {
  LimitSpec s;
  s.name = name;
  s.resource = Resource::kRequests;
  s.algorithm = Algorithm::kTokenBucket;
  s.rate = rate;
  s.per_ms = per_ms;
  s.burst = burst;
  return s;
}

inline LimitSpec ConcurrencySpec(const std::string& name, int64_t limit) {
  LimitSpec s;
  s.name = name;
  s.resource = Resource::kRequests;
  s.algorithm = Algorithm::kConcurrency;
  s.limit = limit;
  return s;
}

inline LimitSpec Shadow(LimitSpec s) {
  s.shadow = true;
  return s;
}

// A policy with the canonical JSON the codec would keep, so that a restore
// can re-parse it.
inline Policy MakePolicy(std::vector<LimitSpec> limits) {
  Policy p;
  nlohmann::json j = {{"limits", nlohmann::json::array()}};
  for (const LimitSpec& s : limits) j["limits"].push_back(LimitToJson(s));
  p.json = j.dump();
  p.limits = std::move(limits);
  return p;
}

inline AcquireRequest Req(const std::string& user, const std::string& task,
                   int64_t tokens = 0) {
  AcquireRequest r;
  r.user = user;
  r.task = task;
  r.tokens = tokens;
  return r;
}

inline AcquireRequest WithParent(AcquireRequest r, const std::string& parent) {
  r.parent = parent;
  return r;
}

inline AcquireRequest WithModel(AcquireRequest r, const std::string& model) {
  r.model = model;
  return r;
}

inline AcquireRequest WithResource(AcquireRequest r, const std::string& resource) {
  r.resource = resource;
  return r;
}

inline AcquireOutcome Acquire(Engine& e, const AcquireRequest& r, int64_t now_us) {
  auto out = e.Acquire(r, now_us);
  REQUIRE(out.ok());
  return *out;
}

inline std::string Grant(Engine& e, const AcquireRequest& r, int64_t now_us) {
  AcquireOutcome out = Acquire(e, r, now_us);
  REQUIRE(out.granted);
  REQUIRE_FALSE(out.lease.empty());
  return out.lease;
}

// A copy: the denial's views last only until the engine next changes.
inline HeldDenial Deny(Engine& e, const AcquireRequest& r, int64_t now_us) {
  AcquireOutcome out = Acquire(e, r, now_us);
  REQUIRE_FALSE(out.granted);
  return HeldDenial(out.denial);
}

inline Settlement Commit(Engine& e, const std::string& lease,
                  std::optional<int64_t> tokens, int64_t now_us,
                  std::optional<int64_t> input = std::nullopt,
                  std::optional<int64_t> output = std::nullopt) {
  CommitRequest c;
  c.lease = lease;
  c.tokens = tokens;
  c.input_tokens = input;
  c.output_tokens = output;
  auto s = e.Commit(c, now_us);
  REQUIRE(s.ok());
  return *s;
}

// The usage of limit `name` of `limit_scope` as Report(report_scope) shows it.
inline LimitUsage UsageOf(Engine& e, const std::string& report_scope,
                   const std::string& limit_scope, const std::string& name,
                   int64_t now_us) {
  StatusReport r = e.Report(report_scope, now_us);
  for (const LimitStatus& l : r.limits) {
    if (l.scope == limit_scope && l.spec.name == name) return l.usage;
  }
  FAIL("no limit " << limit_scope << "/" << name << " in status of "
                   << report_scope);
  return {};
}

// What a limit counts: spent and held by open leases.
inline int64_t Charged(const LimitUsage& u) { return u.used + u.held; }

inline bool SameTotals(const Totals& a, const Totals& b) {
  return a.requests == b.requests && a.tokens == b.tokens &&
         a.usd_nano == b.usd_nano;
}

inline Batch DrainAll(Engine& e) {
  Batch b;
  (void)e.Drain(&b, AppendEncodedLease);
  return b;
}

// Builds a fresh engine from what Drain produced, the way the daemon
// restores a Snapshot (policies, prices, tasks, limiters, spend, leases).
inline void RestoreInto(Engine& fresh, const Batch& b, int64_t now_us) {
  for (const PolicyRow& row : b.policies_put) {
    auto p = ParsePolicyText(row.json);
    REQUIRE(p.ok());
    fresh.SetPolicy(row.scope, std::move(*p));
  }
  for (const PriceRow& row : b.prices_put) {
    fresh.SetPrice(row.model,
                   Price{row.input_nano_per_mtok, row.output_nano_per_mtok});
  }
  SubjectRows rows;
  rows.tasks = b.tasks_put;
  rows.limiters = RowsOf(b.limiters_put);
  rows.spend = RowsOf(b.spend_put);
  for (const TaskRow& row : rows.tasks) rows.scopes.push_back("task:" + row.task);
  for (const LimiterRow& row : rows.limiters) rows.scopes.push_back(row.scope);
  for (const SpendRow& row : rows.spend) rows.scopes.push_back(row.scope);
  fresh.RestoreSubjects(rows, now_us);
  for (const LeasePuts::Row row : b.leases_put) {
    auto lease = DecodeLease(row.id, row.json);
    REQUIRE(lease.ok());
    fresh.RestoreLease(std::move(*lease), now_us);
  }
}

// A stand-in for the store: keeps the latest row of every key Drain put.
struct FakeStore {
  std::map<std::string, TaskRow> tasks;
  std::map<std::pair<std::string, std::string>, LimiterRow> limiters;
  std::map<std::string, SpendRow> spend;

  void Apply(Engine& e) {
    Batch b = DrainAll(e);
    for (const std::string& kind : b.limiter_scopes_deleted) {
      const std::string prefix = kind.substr(0, kind.size() - 1);
      std::erase_if(limiters, [&](const auto& kv) {
        return kv.first.first.rfind(prefix, 0) == 0;
      });
    }
    for (const std::string& scope : b.spend_deleted) {
      std::erase_if(spend, [&](const auto& kv) {
        return kv.first == scope ||
               (scope.ends_with(":*") &&
                kv.first.rfind(scope.substr(0, scope.size() - 1), 0) == 0);
      });
    }
    for (const TaskRow& r : b.tasks_put) tasks[r.task] = r;
    for (const LimiterView r : b.limiters_put) {
      limiters[{std::string(r.scope), std::string(r.name)}] = RowOf(r);
    }
    for (const SpendView r : b.spend_put) spend[std::string(r.scope)] = RowOf(r);
  }
  // What Store::LoadSubjects answers (without the ancestor walk).
  SubjectRows Load(const std::vector<std::string>& scopes) const {
    SubjectRows rows;
    rows.scopes = scopes;
    for (const std::string& scope : scopes) {
      for (const auto& [key, row] : limiters) {
        if (key.first == scope) rows.limiters.push_back(row);
      }
      if (auto it = spend.find(scope); it != spend.end()) {
        rows.spend.push_back(it->second);
      }
      if (scope.rfind("task:", 0) == 0) {
        if (auto it = tasks.find(scope.substr(5)); it != tasks.end()) {
          rows.tasks.push_back(it->second);
        }
      }
    }
    return rows;
  }
};

}  // namespace brake::engine_test
