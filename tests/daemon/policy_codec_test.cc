// Policy codec: LIMIT and policy objects <-> LimitSpec/Policy, and leases.
#include "daemon/policy_codec.h"

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace brake {
namespace {

using nlohmann::json;

LimitSpec ParsedLimit(const json& j) {
  auto spec = ParseLimit(j, "limits[0]");
  INFO(j.dump() << " -> " << spec.status().message());
  REQUIRE(spec.ok());
  return *spec;
}

void CheckLimitRefused(const json& j, const std::string& prefix) {
  CAPTURE(j.dump());
  auto spec = ParseLimit(j, "limits[0]");
  REQUIRE_FALSE(spec.ok());
  CHECK(spec.status().code() == ErrorCode::kBadRequest);
  CAPTURE(spec.status().message());
  CHECK(spec.status().message().rfind(prefix, 0) == 0);
}

json With(json j, const std::string& key, const json& value) {
  j[key] = value;
  return j;
}

json Without(json j, const std::string& key) {
  j.erase(key);
  return j;
}

const json kTokenBucket = {{"name", "rps"},      {"resource", "requests"},
                           {"algorithm", "token_bucket"}, {"rate", 100},
                           {"per_ms", 1000},     {"burst", 200},
                           {"pay_later", true}};
const json kWarmup = {{"name", "ramp"},      {"resource", "requests"},
                      {"algorithm", "warmup"}, {"rate", 50},
                      {"per_ms", 1000},      {"warmup_ms", 10000},
                      {"cold_factor", 3}};
const json kSlidingLog = {{"name", "tpm"},
                          {"resource", "tokens"},
                          {"algorithm", "sliding_log"},
                          {"limit", 100000},
                          {"window_ms", 60000}};
const json kFixedWindow = {{"name", "rpm"},
                           {"resource", "requests"},
                           {"algorithm", "fixed_window"},
                           {"limit", 100},
                           {"window_ms", 60000}};
const json kLeakyBucket = {{"name", "shape"},     {"resource", "requests"},
                           {"algorithm", "leaky_bucket"}, {"rate", 50},
                           {"per_ms", 1000},      {"queue", 100}};
const json kQuota = {{"name", "daily"},
                     {"resource", "usd"},
                     {"algorithm", "quota"},
                     {"limit", 5.0},
                     {"period", "day"}};
const json kConcurrency = {{"name", "inflight"},
                           {"resource", "requests"},
                           {"algorithm", "concurrency"},
                           {"limit", 8}};

TEST_CASE("codec: every algorithm's fields", "[codec]") {
  SECTION("token_bucket") {
    LimitSpec s = ParsedLimit(kTokenBucket);
    CHECK(s.name == "rps");
    CHECK(s.resource == Resource::kRequests);
    CHECK(s.algorithm == Algorithm::kTokenBucket);
    CHECK(s.rate == 100);
    CHECK(s.per_ms == 1000);
    CHECK(s.burst == 200);
    CHECK(s.pay_later);
    CHECK_FALSE(s.shadow);
  }
  SECTION("warmup") {
    LimitSpec s = ParsedLimit(With(kWarmup, "cold_factor", 2.5));
    CHECK(s.algorithm == Algorithm::kWarmup);
    CHECK(s.rate == 50);
    CHECK(s.warmup_ms == 10000);
    CHECK(s.cold_factor == 2.5);
  }
  SECTION("sliding_log") {
    LimitSpec s = ParsedLimit(kSlidingLog);
    CHECK(s.algorithm == Algorithm::kSlidingLog);
    CHECK(s.resource == Resource::kTokens);
    CHECK(s.limit == 100000);
    CHECK(s.window_ms == 60000);
  }
  SECTION("fixed_window") {
    LimitSpec s = ParsedLimit(kFixedWindow);
    CHECK(s.algorithm == Algorithm::kFixedWindow);
    CHECK(s.limit == 100);
    CHECK(s.window_ms == 60000);
  }
  SECTION("leaky_bucket") {
    LimitSpec s = ParsedLimit(kLeakyBucket);
    CHECK(s.algorithm == Algorithm::kLeakyBucket);
    CHECK(s.rate == 50);
    CHECK(s.queue == 100);
  }
  SECTION("quota in usd is kept in nano-usd") {
    LimitSpec s = ParsedLimit(kQuota);
    CHECK(s.algorithm == Algorithm::kQuota);
    CHECK(s.resource == Resource::kUsd);
    CHECK(s.limit == 5 * kNanoUsdPerUsd);
    CHECK(s.period == Period::kDay);
    CHECK(ParsedLimit(With(kQuota, "limit", 0.000000001)).limit == 1);
    CHECK(ParsedLimit(With(kQuota, "limit", 0.1)).limit == 100'000'000);
    CHECK(ParsedLimit(With(kQuota, "limit", 0)).limit == 0);
  }
  SECTION("quota periods") {
    const std::pair<const char*, Period> periods[] = {
        {"hour", Period::kHour}, {"day", Period::kDay},
        {"week", Period::kWeek}, {"month", Period::kMonth},
        {"total", Period::kTotal}};
    for (const auto& [name, period] : periods) {
      CHECK(ParsedLimit(With(kQuota, "period", name)).period == period);
    }
  }
  SECTION("concurrency") {
    LimitSpec s = ParsedLimit(kConcurrency);
    CHECK(s.algorithm == Algorithm::kConcurrency);
    CHECK(s.limit == 8);
  }
  SECTION("shadow on any algorithm") {
    for (const json& j : {kTokenBucket, kWarmup, kSlidingLog, kFixedWindow,
                          kLeakyBucket, kQuota, kConcurrency}) {
      CHECK(ParsedLimit(With(j, "shadow", true)).shadow);
      CHECK_FALSE(ParsedLimit(With(j, "shadow", false)).shadow);
    }
  }
}

TEST_CASE("codec: defaults", "[codec]") {
  LimitSpec tb = ParsedLimit(Without(Without(Without(kTokenBucket, "per_ms"), "burst"),
                               "pay_later"));
  CHECK(tb.per_ms == 1000);
  CHECK(tb.burst == tb.rate);  // one `per_ms` worth of permits
  CHECK_FALSE(tb.pay_later);

  LimitSpec wu = ParsedLimit(Without(Without(kWarmup, "per_ms"), "cold_factor"));
  CHECK(wu.per_ms == 1000);
  CHECK(wu.cold_factor == 3.0);

  LimitSpec lb = ParsedLimit(Without(Without(kLeakyBucket, "per_ms"), "queue"));
  CHECK(lb.per_ms == 1000);
  CHECK(lb.queue == 0);

  CHECK_FALSE(ParsedLimit(kConcurrency).shadow);
}

TEST_CASE("codec: required fields", "[codec]") {
  const std::pair<json, const char*> cases[] = {
      {Without(kTokenBucket, "rate"), "limits[0].rate:"},
      {Without(kWarmup, "rate"), "limits[0].rate:"},
      {Without(kWarmup, "warmup_ms"), "limits[0].warmup_ms:"},
      {Without(kSlidingLog, "limit"), "limits[0].limit:"},
      {Without(kSlidingLog, "window_ms"), "limits[0].window_ms:"},
      {Without(kFixedWindow, "limit"), "limits[0].limit:"},
      {Without(kFixedWindow, "window_ms"), "limits[0].window_ms:"},
      {Without(kLeakyBucket, "rate"), "limits[0].rate:"},
      {Without(kQuota, "limit"), "limits[0].limit:"},
      {Without(kQuota, "period"), "limits[0].period:"},
      {Without(kConcurrency, "limit"), "limits[0].limit:"},
      {Without(kConcurrency, "name"), "limits[0].name:"},
      {Without(kConcurrency, "resource"), "limits[0].resource:"},
      {Without(kConcurrency, "algorithm"), "limits[0].algorithm:"},
  };
  for (const auto& [j, prefix] : cases) CheckLimitRefused(j, prefix);
}

TEST_CASE("codec: bounds and types", "[codec]") {
  const std::pair<json, const char*> cases[] = {
      {json::array(), "limits[0]:"},
      {json("x"), "limits[0]:"},
      {With(kConcurrency, "name", ""), "limits[0].name:"},
      {With(kConcurrency, "name", std::string(65, 'n')), "limits[0].name:"},
      {With(kConcurrency, "name", "a\tb"), "limits[0].name:"},
      {With(kConcurrency, "name", 5), "limits[0].name:"},
      {With(kConcurrency, "resource", "bytes"), "limits[0].resource:"},
      {With(kConcurrency, "algorithm", "gcra"), "limits[0].algorithm:"},
      {With(kConcurrency, "shadow", 1), "limits[0].shadow:"},
      {With(kTokenBucket, "rate", 0), "limits[0].rate:"},
      {With(kTokenBucket, "rate", 1.5), "limits[0].rate:"},
      {With(kTokenBucket, "rate", 1'000'000'001), "limits[0].rate:"},
      {With(kTokenBucket, "per_ms", 0), "limits[0].per_ms:"},
      {With(kTokenBucket, "per_ms", 10'000'000'001), "limits[0].per_ms:"},
      {With(kTokenBucket, "burst", 0), "limits[0].burst:"},
      {With(kTokenBucket, "pay_later", "yes"), "limits[0].pay_later:"},
      {With(kWarmup, "warmup_ms", 0), "limits[0].warmup_ms:"},
      {With(kWarmup, "cold_factor", 0.5), "limits[0].cold_factor:"},
      {With(kWarmup, "cold_factor", 1001), "limits[0].cold_factor:"},
      {With(kSlidingLog, "limit", 0), "limits[0].limit:"},
      {With(kSlidingLog, "limit", 1e30), "limits[0].limit:"},
      {With(kSlidingLog, "window_ms", -1), "limits[0].window_ms:"},
      {With(kLeakyBucket, "queue", -1), "limits[0].queue:"},
      {With(kLeakyBucket, "queue", 1'000'001), "limits[0].queue:"},
      {With(kQuota, "limit", -0.01), "limits[0].limit:"},
      {With(kQuota, "limit", 1e10), "limits[0].limit:"},
      {With(kQuota, "limit", "5"), "limits[0].limit:"},
      {With(kQuota, "period", "year"), "limits[0].period:"},
      {With(kQuota, "period", 1), "limits[0].period:"},
      {With(With(kQuota, "resource", "requests"), "limit", 2.5),
       "limits[0].limit:"},
      {With(kConcurrency, "limit", 0), "limits[0].limit:"},
  };
  for (const auto& [j, prefix] : cases) CheckLimitRefused(j, prefix);
}

TEST_CASE("codec: a field of another algorithm is refused", "[codec]") {
  const std::pair<json, const char*> cases[] = {
      {With(kTokenBucket, "limit", 1), "limits[0].limit:"},
      {With(kTokenBucket, "warmup_ms", 1), "limits[0].warmup_ms:"},
      {With(kWarmup, "burst", 1), "limits[0].burst:"},
      {With(kWarmup, "pay_later", true), "limits[0].pay_later:"},
      {With(kSlidingLog, "rate", 1), "limits[0].rate:"},
      {With(kSlidingLog, "period", "day"), "limits[0].period:"},
      {With(kFixedWindow, "queue", 1), "limits[0].queue:"},
      {With(kLeakyBucket, "burst", 1), "limits[0].burst:"},
      {With(kLeakyBucket, "limit", 1), "limits[0].limit:"},
      {With(kQuota, "window_ms", 1), "limits[0].window_ms:"},
      {With(kConcurrency, "window_ms", 1), "limits[0].window_ms:"},
      {With(kConcurrency, "period", "day"), "limits[0].period:"},
      {With(kConcurrency, "bogus", 1), "limits[0].bogus:"},
  };
  for (const auto& [j, prefix] : cases) CheckLimitRefused(j, prefix);
}

TEST_CASE("codec: which resources an algorithm may count", "[codec]") {
  CHECK(ParsedLimit(With(kSlidingLog, "resource", "usd")).resource == Resource::kUsd);
  CHECK(ParsedLimit(With(kFixedWindow, "resource", "usd")).resource ==
        Resource::kUsd);
  CHECK(ParsedLimit(With(kSlidingLog, "resource", "usd")).limit ==
        100000 * kNanoUsdPerUsd);
  CheckLimitRefused(With(kTokenBucket, "resource", "usd"), "limits[0].resource:");
  CheckLimitRefused(With(kWarmup, "resource", "usd"), "limits[0].resource:");
  CheckLimitRefused(With(kLeakyBucket, "resource", "usd"), "limits[0].resource:");
  CheckLimitRefused(With(kConcurrency, "resource", "usd"), "limits[0].resource:");
  CheckLimitRefused(With(kConcurrency, "resource", "tokens"),
               "limits[0].resource:");
  for (const json& j : {kTokenBucket, kWarmup, kSlidingLog, kFixedWindow,
                        kLeakyBucket}) {
    CHECK(ParsedLimit(With(j, "resource", "tokens")).resource == Resource::kTokens);
  }
}

TEST_CASE("codec: policies", "[codec]") {
  SECTION("limit names are unique within a policy") {
    json p = {{"limits", {kConcurrency, With(kFixedWindow, "name", "inflight")}}};
    auto r = ParsePolicy(p, "");
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().message().rfind("limits[1].name:", 0) == 0);
  }
  SECTION("messages carry the prefix") {
    json p = {{"limits", {kConcurrency, Without(kFixedWindow, "limit")}}};
    auto r = ParsePolicy(p, "policies.user:*");
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().message() ==
          "policies.user:*.limits[1].limit: is required");
  }
  SECTION("shapes") {
    CHECK_FALSE(ParsePolicy(json::array(), "").ok());
    auto not_array = ParsePolicy(json{{"limits", kQuota}}, "");
    REQUIRE_FALSE(not_array.ok());
    CHECK(not_array.status().message().rfind("limits:", 0) == 0);
    auto breaker = ParsePolicy(json{{"breaker", 1}}, "");
    REQUIRE_FALSE(breaker.ok());
    CHECK(breaker.status().message().rfind("breaker:", 0) == 0);
    json many = {{"limits", json::array()}};
    for (int i = 0; i < 65; ++i) {
      many["limits"].push_back(With(kConcurrency, "name", std::to_string(i)));
    }
    auto too_many = ParsePolicy(many, "");
    REQUIRE_FALSE(too_many.ok());
    CHECK(too_many.status().message().rfind("limits:", 0) == 0);
    many["limits"].erase(64);
    CHECK(ParsePolicy(many, "").ok());
  }
  SECTION("an unknown key is refused, not ignored") {
    auto typo = ParsePolicy(json{{"limit", {kQuota}}}, "policies.user:*");
    REQUIRE_FALSE(typo.ok());
    CHECK(typo.status().message().rfind("policies.user:*.limit:", 0) == 0);
  }
  SECTION("empty policies") {
    auto empty = ParsePolicy(json::object(), "");
    REQUIRE(empty.ok());
    CHECK(empty->limits.empty());
    CHECK(empty->json == R"({"limits":[]})");
    auto null_limits = ParsePolicy(json{{"limits", nullptr}}, "");
    REQUIRE(null_limits.ok());
    CHECK(null_limits->limits.empty());
  }
}

TEST_CASE("codec: canonical JSON round trip", "[codec]") {
  json breaker = {{"loop", {{"repeats", 5}, {"window_ms", 60000}}},
                  {"open_ms", 30000}};
  json input = {
      {"limits",
       {kTokenBucket, With(kWarmup, "cold_factor", 2.5), kSlidingLog,
        With(With(kFixedWindow, "resource", "usd"), "limit", 0.3),
        Without(kLeakyBucket, "queue"), With(kQuota, "limit", 1234.567891234),
        With(kConcurrency, "shadow", true),
        With(With(With(kQuota, "name", "q2"), "resource", "tokens"), "limit",
             7)}},
      {"breaker", breaker}};
  auto first = ParsePolicy(input, "");
  REQUIRE(first.ok());
  auto second = ParsePolicyText(first->json);
  REQUIRE(second.ok());
  CHECK(second->limits == first->limits);
  CHECK(second->json == first->json);
  json canonical = json::parse(first->json);
  json breaker_canonical = breaker;  // defaults written out
  breaker_canonical["open_backoff"] = 2.0;
  breaker_canonical["max_open_ms"] = 600000;
  breaker_canonical["half_open_probes"] = 3;
  CHECK(canonical["breaker"] == breaker_canonical);
  CHECK(canonical["limits"][4]["queue"] == 0);  // defaults are written out
  CHECK(canonical["limits"][5]["limit"] == 1234.567891234);
  CHECK(first->limits[5].limit == 1'234'567'891'234);

  // LimitToJson carries exactly the fields of each algorithm.
  for (const LimitSpec& spec : first->limits) {
    json j = LimitToJson(spec);
    auto back = ParseLimit(j, "x");
    REQUIRE(back.ok());
    CHECK(*back == spec);
  }

  CHECK_FALSE(ParsePolicyText("{").ok());
  auto bad = ParsePolicyText(R"({"limits":[{"name":"x"}]})");
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.status().message().rfind("policy.limits[0].resource:", 0) == 0);
}

}  // namespace
}  // namespace brake
