// Config: the settings table, policies and prices sections, reload rules.
#include "daemon/config.h"

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace brake {
namespace {

using nlohmann::json;

Config Parse(const std::string& text) {
  auto c = ParseConfig(text);
  INFO(text << " -> " << c.status().message());
  REQUIRE(c.ok());
  return *c;
}

Config Parse(const json& j) { return Parse(j.dump()); }

void CheckRefused(const std::string& text, const std::string& prefix,
                  ErrorCode code = ErrorCode::kBadRequest) {
  CAPTURE(text);
  auto c = ParseConfig(text);
  REQUIRE_FALSE(c.ok());
  CHECK(c.status().code() == code);
  CAPTURE(c.status().message());
  CHECK(c.status().message().rfind(prefix, 0) == 0);
}

void CheckRefused(const json& j, const std::string& prefix) {
  CheckRefused(j.dump(), prefix);
}

TEST_CASE("config: defaults", "[config]") {
  Config c = Parse(std::string("{}"));
  CHECK(c.admin_uids.empty());
  CHECK(c.socket_mode == 0660);
  CHECK(c.durability == Durability::kStrict);
  CHECK(c.flush_interval_ms == 10);
  CHECK(c.lease_ttl_ms == 600'000);
  CHECK(c.max_line_bytes == 65'536);
  CHECK(c.max_connections == 4096);
  CHECK(c.max_output_bytes == 16 << 20);
  CHECK(c.max_waiters_per_scope == 1000);
  CHECK(c.top_max_subjects == 10'000);
  CHECK(c.metrics_top_users == 10);
  CHECK_FALSE(c.fail_open);
  CHECK(c.metrics_listen.empty());
  CHECK(c.policies.empty());
  CHECK(c.prices.empty());
  // Defaults match the table's documentation.
  std::string help = ConfigHelp();
  CHECK(help.find("lease_ttl_ms  (integer [1000, 604800000], default 600000, "
                  "reloadable)") != std::string::npos);
}

TEST_CASE("config: every setting", "[config]") {
  Config c = Parse(json{{"admin_uids", {0, 1000, 4294967294}},
                        {"socket_mode", "0600"},
                        {"durability", "batched"},
                        {"flush_interval_ms", 5},
                        {"lease_ttl_ms", 1000},
                        {"max_line_bytes", 1024},
                        {"max_connections", 1},
                        {"max_output_bytes", 65536},
                        {"max_waiters_per_scope", 7},
                        {"top_max_subjects", 50},
                        {"metrics_top_users", 0},
                        {"on_storage_error", "open"},
                        {"metrics_listen", "127.0.0.1:9464"}});
  CHECK(c.admin_uids == std::vector<int64_t>{0, 1000, 4294967294});
  CHECK(c.socket_mode == 0600);
  CHECK(c.durability == Durability::kBatched);
  CHECK(c.flush_interval_ms == 5);
  CHECK(c.lease_ttl_ms == 1000);
  CHECK(c.max_line_bytes == 1024);
  CHECK(c.max_connections == 1);
  CHECK(c.max_output_bytes == 65536);
  CHECK(c.max_waiters_per_scope == 7);
  CHECK(c.top_max_subjects == 50);
  CHECK(c.metrics_top_users == 0);
  CHECK(c.fail_open);
  CHECK(c.metrics_listen == "127.0.0.1:9464");

  CHECK(Parse(json{{"durability", "strict"}}).durability ==
        Durability::kStrict);
  CHECK_FALSE(Parse(json{{"on_storage_error", "closed"}}).fail_open);
  CHECK(Parse(json{{"socket_mode", "660"}}).socket_mode == 0660);
  CHECK(Parse(json{{"socket_mode", "0777"}}).socket_mode == 0777);
  CHECK(Parse(json{{"socket_mode", "0"}}).socket_mode == 0);
  // Comments are allowed in the file.
  CHECK(Parse(std::string("{\n  // strict is safer\n  \"durability\": \"batched\"\n}"))
            .durability == Durability::kBatched);
}

TEST_CASE("config: integer bounds", "[config]") {
  struct Bound {
    const char* name;
    int64_t min, max;
  };
  const Bound bounds[] = {
      {"flush_interval_ms", 1, 10000},
      {"lease_ttl_ms", 1000, 604800000},
      {"max_line_bytes", 1024, 16777216},
      {"max_connections", 1, 1000000},
      {"max_waiters_per_scope", 1, 1000000},
      {"max_output_bytes", 65536, 1073741824},
      {"top_max_subjects", 1, 1000000},
      {"metrics_top_users", 0, 1000},
  };
  for (const Bound& b : bounds) {
    CAPTURE(b.name);
    const std::string prefix = std::string(b.name) + ":";
    Parse(json{{b.name, b.min}});
    Parse(json{{b.name, b.max}});
    CheckRefused(json{{b.name, b.min - 1}}, prefix);
    CheckRefused(json{{b.name, b.max + 1}}, prefix);
    CheckRefused(json{{b.name, 1.5}}, prefix);
    CheckRefused(json{{b.name, "100"}}, prefix);
    CheckRefused(json{{b.name, true}}, prefix);
    CheckRefused("{\"" + std::string(b.name) + "\": 18446744073709551616}",
                 prefix);
    // The message states the bounds.
    auto c = ParseConfig(json{{b.name, b.max + 1}}.dump());
    CHECK(c.status().message() == prefix + " must be an integer between " +
                                      std::to_string(b.min) + " and " +
                                      std::to_string(b.max));
  }
}

TEST_CASE("config: bad values of other settings", "[config]") {
  const std::pair<json, const char*> cases[] = {
      {json{{"admin_uids", 0}}, "admin_uids:"},
      {json{{"admin_uids", json::array({-1})}}, "admin_uids[0]:"},
      {json{{"admin_uids", {0, 4294967295}}}, "admin_uids[1]:"},
      {json{{"admin_uids", json::array({"0"})}}, "admin_uids[0]:"},
      {json{{"admin_uids", json::array({1.5})}}, "admin_uids[0]:"},
      {json{{"socket_mode", 660}}, "socket_mode:"},
      {json{{"socket_mode", ""}}, "socket_mode:"},
      {json{{"socket_mode", "0999"}}, "socket_mode:"},
      {json{{"socket_mode", "01777"}}, "socket_mode:"},
      {json{{"socket_mode", "rw-"}}, "socket_mode:"},
      {json{{"socket_mode", "-1"}}, "socket_mode:"},
      {json{{"durability", "fast"}}, "durability:"},
      {json{{"durability", 1}}, "durability:"},
      {json{{"on_storage_error", "ignore"}}, "on_storage_error:"},
      {json{{"metrics_listen", 9464}}, "metrics_listen:"},
  };
  for (const auto& [j, prefix] : cases) CheckRefused(j, prefix);
}

TEST_CASE("config: file shape", "[config]") {
  CheckRefused("{", "config:", ErrorCode::kBadJson);
  {  // a trailing comma, named by its byte
    auto parsed = ParseConfig("{\"lease_ttl_ms\": 1000,}");
    REQUIRE_FALSE(parsed.ok());
    CHECK(parsed.status().message() == "config: not valid JSON (at byte 23)");
  }
  CheckRefused("", "config:", ErrorCode::kBadJson);
  CheckRefused(std::string("[]"), "config:");
  CheckRefused(std::string("7"), "config:");
  CheckRefused(json{{"lease_ttl", 1000}}, "lease_ttl: unknown setting");
  CheckRefused(json{{"Durability", "strict"}}, "Durability: unknown setting");

  auto missing = LoadConfigFile("/nonexistent/brake/config.json");
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.status().message().find("/nonexistent/brake/config.json") !=
        std::string::npos);
}

TEST_CASE("config: policies section", "[config]") {
  json rpm = {{"name", "rpm"},
              {"resource", "requests"},
              {"algorithm", "fixed_window"},
              {"limit", 100},
              {"window_ms", 60000}};
  Config c = Parse(json{{"policies",
                         {{"user:*", {{"limits", json::array({rpm})}}},
                          {"global", {{"limits", json::array()}}},
                          {"resource:openai",
                           {{"breaker", {{"open_ms", 30000}}}}}}}});
  REQUIRE(c.policies.size() == 3);
  REQUIRE(c.policies.at("user:*").limits.size() == 1);
  CHECK(c.policies.at("user:*").limits[0].name == "rpm");
  CHECK(c.policies.at("user:*").limits[0].limit == 100);
  CHECK(c.policies.at("global").limits.empty());
  // The breaker is kept canonical: defaults written out.
  CHECK(json::parse(c.policies.at("resource:openai").json)["breaker"] ==
        json{{"open_ms", 30000},
             {"open_backoff", 2.0},
             {"max_open_ms", 600000},
             {"half_open_probes", 3}});

  CheckRefused(json{{"policies", json::array()}}, "policies:");
  CheckRefused(json{{"policies", {{"bogus", json::object()}}}},
               "policies.bogus:");
  CheckRefused(json{{"policies", {{"user:", json::object()}}}},
               "policies.user::");
  CheckRefused(json{{"policies", {{"user:*", 5}}}}, "policies.user:*:");
  CheckRefused(json{{"policies",
                     {{"user:*", {{"limits", json::array({json{{"name", "x"},
                                                   {"resource", "requests"},
                                                   {"algorithm", "token_bucket"},
                                                   {"rate", 0}}})}}}}}},
               "policies.user:*.limits[0].rate:");
  // A misspelt key must not silently make an empty policy.
  CheckRefused(json{{"policies", {{"user:*", {{"limit", json::array({rpm})}}}}}},
               "policies.user:*.limit:");
}

TEST_CASE("config: prices section", "[config]") {
  Config c = Parse(json{{"prices",
                         {{"gpt-4o",
                           {{"input_usd_per_mtok", 2.5},
                            {"output_usd_per_mtok", 10}}},
                          {"free", {{"input_usd_per_mtok", 0},
                                    {"output_usd_per_mtok", 0}}}}}});
  REQUIRE(c.prices.size() == 2);
  CHECK(c.prices.at("gpt-4o").input_nano_per_mtok == 2'500'000'000);
  CHECK(c.prices.at("gpt-4o").output_nano_per_mtok == 10'000'000'000);
  CHECK(c.prices.at("free").input_nano_per_mtok == 0);

  const std::pair<json, const char*> cases[] = {
      {json{{"prices", json::array()}}, "prices:"},
      {json{{"prices", {{"m", 1}}}}, "prices.m:"},
      {json{{"prices", {{"m", {{"output_usd_per_mtok", 1}}}}}},
       "prices.m.input_usd_per_mtok:"},
      {json{{"prices", {{"m", {{"input_usd_per_mtok", 1}}}}}},
       "prices.m.output_usd_per_mtok:"},
      {json{{"prices",
             {{"m", {{"input_usd_per_mtok", -1}, {"output_usd_per_mtok", 1}}}}}},
       "prices.m.input_usd_per_mtok:"},
      {json{{"prices", {{"m",
                         {{"input_usd_per_mtok", 1},
                          {"output_usd_per_mtok", 1e7}}}}}},
       "prices.m.output_usd_per_mtok:"},
      {json{{"prices", {{"m",
                         {{"input_usd_per_mtok", "1"},
                          {"output_usd_per_mtok", 1}}}}}},
       "prices.m.input_usd_per_mtok:"},
      {json{{"prices", {{"", {{"input_usd_per_mtok", 1},
                              {"output_usd_per_mtok", 1}}}}}},
       "prices.:"},
  };
  for (const auto& [j, prefix] : cases) CheckRefused(j, prefix);
}

TEST_CASE("config: which settings a reload may change", "[config]") {
  const Config base = Parse(std::string("{}"));
  CHECK(FixedSettingsChanged(base, base).empty());

  const std::pair<json, std::vector<std::string>> cases[] = {
      {json{{"socket_mode", "0600"}}, {"socket_mode"}},
      {json{{"durability", "batched"}}, {"durability"}},
      {json{{"flush_interval_ms", 50}}, {"flush_interval_ms"}},
      {json{{"metrics_listen", "127.0.0.1:1"}}, {"metrics_listen"}},
      {json{{"max_waiters_per_scope", 10}}, {"max_waiters_per_scope"}},
      {json{{"top_max_subjects", 10}}, {"top_max_subjects"}},
      {json{{"metrics_top_users", 3}}, {}},
      {json{{"admin_uids", json::array({5})}}, {}},
      {json{{"lease_ttl_ms", 5000}}, {}},
      {json{{"max_line_bytes", 4096}}, {}},
      {json{{"max_connections", 5}}, {}},
      {json{{"max_output_bytes", 1 << 20}}, {}},
      {json{{"on_storage_error", "open"}}, {}},
      {json{{"prices", {{"m", {{"input_usd_per_mtok", 1},
                               {"output_usd_per_mtok", 1}}}}}},
       {}},
      {json{{"policies", {{"global", json::object()}}}}, {}},
      {json{{"socket_mode", "0600"}, {"durability", "batched"}},
       {"socket_mode", "durability"}},
  };
  for (const auto& [j, fixed] : cases) {
    CAPTURE(j.dump());
    CHECK(FixedSettingsChanged(base, Parse(j)) == fixed);
  }
}

TEST_CASE("config: help lists every setting", "[config]") {
  const std::string help = ConfigHelp();
  for (const char* name :
       {"admin_uids", "socket_mode", "durability", "flush_interval_ms",
        "lease_ttl_ms", "max_line_bytes", "max_connections",
        "max_waiters_per_scope", "max_output_bytes", "on_storage_error",
        "metrics_listen", "top_max_subjects", "metrics_top_users", "policies",
        "prices"}) {
    CAPTURE(name);
    CHECK(help.find(std::string(name) + "  ") != std::string::npos);
  }
  CHECK(help.find("socket_mode  (octal string, default \"0660\", restart to "
                  "change)") != std::string::npos);
}

}  // namespace
}  // namespace brake
