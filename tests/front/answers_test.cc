#include "front/answers.h"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>

namespace brake::front {
namespace {

std::string HeaderOf(const Answer& a, const std::string& name) {
  for (const auto& [k, v] : a.headers)
    if (k == name) return v;
  return "<none>";
}

Refusal Denied(std::string reason, std::string scope, std::string limit,
               std::optional<int64_t> retry_ms, std::string resource = "",
               double capacity = 0, std::string cause = "") {
  Refusal r;
  r.reason = std::move(reason);
  r.scope = std::move(scope);
  r.limit = std::move(limit);
  r.cause = std::move(cause);
  r.retry_after_ms = retry_ms;
  r.resource = std::move(resource);
  r.capacity = capacity;
  return r;
}

std::string MessageOf(const Answer& a) {
  return nlohmann::json::parse(a.body)["error"]["message"];
}

TEST_CASE("answers: a denial in OpenAI's shape with the retry headers",
          "[front]") {
  Answer a = DenialAnswer(Dialect::kOpenAi,
                          Denied("rate_limited", "user:alice", "rpm", 1500));
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

  Refusal rpm = Denied("rate_limited", "user:alice", "rpm", 250, "requests", 100);
  a = DenialAnswer(Dialect::kOpenAi, rpm);
  CHECK(HeaderOf(a, "x-ratelimit-limit-requests") == "100");
  CHECK(HeaderOf(a, "x-ratelimit-remaining-requests") == "0");
  CHECK(HeaderOf(a, "x-ratelimit-reset-requests") == "250ms");
  CHECK(HeaderOf(a, "x-ratelimit-reset-tokens") == "<none>");

  a = DenialAnswer(Dialect::kOpenAi,
                   Denied("cost_cap", "user:bob", "daily", std::nullopt));
  body = nlohmann::json::parse(a.body);
  CHECK(body["error"]["type"] == "insufficient_quota");
  CHECK(HeaderOf(a, "retry-after") == "<none>");
  CHECK(HeaderOf(a, "x-should-retry") == "false");
}

TEST_CASE("answers: held is not spent", "[front]") {
  // 0.9 usd of a 1 usd cap held by calls in flight: retry soon.
  Refusal held = Denied("reserved", "user:alice", "daily", 1200, "usd", 1.0);
  held.held = 0.9;
  held.remaining = 0.05;
  Answer a = DenialAnswer(Dialect::kOpenAi, held);
  auto body = nlohmann::json::parse(a.body);
  CHECK(body["error"]["type"] == "rate_limit_exceeded");
  CHECK(body["error"]["code"] == "reserved");
  CHECK(HeaderOf(a, "x-should-retry") == "true");
  CHECK(HeaderOf(a, "retry-after") == "2");
  CHECK(MessageOf(a).find("0.9 usd of it is held by calls in flight") !=
        std::string::npos);
  CHECK(MessageOf(a).find("retry after 1.2s") != std::string::npos);

  // Spent: 0.0097 usd left; the call would reserve 0.042 of which the
  // prompt 0.0002: its default output maximum does not fit.
  Refusal spent =
      Denied("cost_cap", "user:alice", "daily", 29'405'949, "usd", 1.0);
  spent.remaining = 0.0097;
  spent.held = 0;
  spent.would_reserve = 0.042;
  spent.prompt_reserve = 0.0002;
  spent.output_tokens = 4096;
  spent.output_defaulted = true;
  a = DenialAnswer(Dialect::kOpenAi, spent);
  body = nlohmann::json::parse(a.body);
  CHECK(body["error"]["type"] == "insufficient_quota");
  CHECK(HeaderOf(a, "x-should-retry") == "false");  // eight hours away
  CHECK(HeaderOf(a, "retry-after") == "29406");
  const std::string m = MessageOf(a);
  INFO(m);
  CHECK(m.find("would reserve 0.042 usd against 0.0097 usd left unspent of "
               "1 usd") != std::string::npos);
  CHECK(m.find("output maximum of 4096 tokens does not") != std::string::npos);
  CHECK(m.find("default_max_tokens") != std::string::npos);
  CHECK(m.find("retry after 8h10m5s") != std::string::npos);

  // The prompt alone does not fit either: the output maximum is not named.
  spent.prompt_reserve = 0.02;
  CHECK(MessageOf(DenialAnswer(Dialect::kOpenAi, spent)).find("output maximum") ==
        std::string::npos);
  // A retry within a minute is worth an SDK's own retry.
  spent.retry_after_ms = 59'000;
  CHECK(HeaderOf(DenialAnswer(Dialect::kOpenAi, spent), "x-should-retry") == "true");
}

TEST_CASE("answers: Anthropic's shape on its route", "[front]") {
  Answer a = DenialAnswer(Dialect::kAnthropic,
                          Denied("breaker_open", "task:t", "breaker", 30000, "", 0, "loop"));
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
