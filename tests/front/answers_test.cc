#include "front/answers.h"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <string>

namespace brake::front {
namespace {

std::string HeaderOf(const Answer& a, const std::string& name) {
  for (const auto& [k, v] : a.headers)
    if (k == name) return v;
  return "<none>";
}

TEST_CASE("answers: a denial in OpenAI's shape with the retry headers",
          "[front]") {
  Answer a = DenialAnswer(Dialect::kOpenAi,
                          Refusal{"rate_limited", "user:alice", "rpm", "", 1500, "", 0});
  CHECK(a.status == 429);
  auto body = nlohmann::json::parse(a.body);
  CHECK(body["error"]["type"] == "rate_limit_exceeded");
  CHECK(body["error"]["code"] == "rate_limited");
  CHECK(body["error"]["message"].get<std::string>().find("user:alice") !=
        std::string::npos);
  CHECK(HeaderOf(a, "retry-after") == "2");  // seconds, rounded up
  CHECK(HeaderOf(a, "retry-after-ms") == "1500");
  CHECK(HeaderOf(a, "x-should-retry") == "true");
  CHECK(HeaderOf(a, "x-ratelimit-reset-requests") == "2s");
  CHECK(HeaderOf(a, "x-ratelimit-reset-tokens") == "2s");  // which: unknown
  CHECK(HeaderOf(a, "x-ratelimit-limit-requests") == "<none>");

  Refusal rpm{"rate_limited", "user:alice", "rpm", "", 250, "requests", 100};
  a = DenialAnswer(Dialect::kOpenAi, rpm);
  CHECK(HeaderOf(a, "x-ratelimit-limit-requests") == "100");
  CHECK(HeaderOf(a, "x-ratelimit-remaining-requests") == "0");
  CHECK(HeaderOf(a, "x-ratelimit-reset-requests") == "250ms");
  CHECK(HeaderOf(a, "x-ratelimit-reset-tokens") == "<none>");

  a = DenialAnswer(Dialect::kOpenAi,
                   Refusal{"cost_cap", "user:bob", "daily", "", std::nullopt, "", 0});
  body = nlohmann::json::parse(a.body);
  CHECK(body["error"]["type"] == "insufficient_quota");
  CHECK(HeaderOf(a, "retry-after") == "<none>");
  CHECK(HeaderOf(a, "x-should-retry") == "false");
}

TEST_CASE("answers: Anthropic's shape on its route", "[front]") {
  Answer a = DenialAnswer(Dialect::kAnthropic,
                          Refusal{"breaker_open", "task:t", "breaker", "loop", 30000, "", 0});
  auto body = nlohmann::json::parse(a.body);
  CHECK(body["type"] == "error");
  CHECK(body["error"]["type"] == "rate_limit_error");
  CHECK(body["error"]["message"].get<std::string>().find("loop") !=
        std::string::npos);
  a = ErrorAnswer(Dialect::kAnthropic, 401, "invalid_api_key", "unknown key");
  CHECK(nlohmann::json::parse(a.body)["error"]["type"] == "authentication_error");
  a = ErrorAnswer(Dialect::kOpenAi, 502, "upstream_unavailable", "x");
  CHECK(nlohmann::json::parse(a.body)["error"]["type"] == "server_error");
  CHECK(HeaderOf(a, "x-should-retry") == "true");
}

TEST_CASE("answers: OpenAI's reset durations", "[front]") {
  CHECK(ResetText(250) == "250ms");
  CHECK(ResetText(1000) == "1s");
  CHECK(ResetText(61'000) == "1m1s");
  CHECK(ResetText(3'723'000) == "1h2m3s");
  CHECK(ResetText(360'000) == "6m0s");
}

}  // namespace
}  // namespace brake::front
