#include "front/call.h"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <string>

namespace brake::front {
namespace {

using nlohmann::json;

CallPlan Plan(Api api, const std::string& body, int64_t default_max = 4096) {
  auto plan = PlanCall(api, body, default_max);
  REQUIRE(plan.ok());
  return *plan;
}

std::string PlanError(Api api, const std::string& body) {
  auto plan = PlanCall(api, body, 4096);
  REQUIRE_FALSE(plan.ok());
  return plan.status().message();
}

TEST_CASE("front routes: each path to its API, the method checked",
          "[front]") {
  bool method_ok = false;
  const Route* r = FindRoute("POST", "/v1/chat/completions", &method_ok);
  REQUIRE(r != nullptr);
  CHECK(r->api == Api::kChat);
  CHECK(r->upstream == "openai");
  CHECK(method_ok);
  r = FindRoute("POST", "/v1/messages?beta=true", &method_ok);
  REQUIRE(r != nullptr);
  CHECK(r->api == Api::kMessages);
  CHECK(r->upstream == "anthropic");
  r = FindRoute("POST", "/v1/models", &method_ok);
  REQUIRE(r != nullptr);
  CHECK_FALSE(method_ok);  // GET only
  CHECK(FindRoute("GET", "/v1/models/", &method_ok)->api == Api::kModels);
  CHECK(FindRoute("POST", "/v1/chat", &method_ok) == nullptr);
  CHECK(FindRoute("POST", "/", &method_ok) == nullptr);
}

TEST_CASE("front plan: a chat call reserves a prompt ceiling and its maximum",
          "[front]") {
  const std::string body =
      R"({"model":"gpt-4o","max_tokens":100,)"
      R"("messages":[{"role":"user","content":"hello there"}]})";
  CallPlan p = Plan(Api::kChat, body);
  CHECK(p.model == "gpt-4o");
  CHECK_FALSE(p.stream);
  CHECK(p.output_tokens == 100);
  CHECK_FALSE(p.set_output_max);
  CHECK(p.body.empty());  // sent upstream as it came
  // Every byte of text and key inside messages, framing per message, the
  // request's own.
  const int64_t text = std::string("role").size() + std::string("user").size() +
                       std::string("content").size() +
                       std::string("hello there").size();
  CHECK(p.prompt_tokens == kTokensPerRequest + kTokensPerMessage + text);
  CHECK(p.fingerprint.size() == 16);
  CHECK(Plan(Api::kChat, body).fingerprint == p.fingerprint);
  CHECK(Plan(Api::kChat, body + " ").fingerprint != p.fingerprint);
}

TEST_CASE("front plan: no output maximum named: brake sets what it reserves",
          "[front]") {
  CallPlan p = Plan(Api::kChat,
                    R"({"model":"m","messages":[{"role":"user","content":"x"}]})",
                    777);
  CHECK(p.set_output_max);
  CHECK(p.output_tokens == 777);
  json sent = json::parse(p.body);
  CHECK(sent["max_completion_tokens"] == 777);
  CHECK(sent["messages"][0]["content"] == "x");
  // max_completion_tokens wins over max_tokens; n multiplies it.
  p = Plan(Api::kChat,
           R"({"model":"m","n":3,"max_tokens":5,"max_completion_tokens":50,"messages":[]})");
  CHECK(p.output_tokens == 150);
  CHECK_FALSE(p.set_output_max);
  // Anthropic: max_tokens; the Responses API: max_output_tokens.
  p = Plan(Api::kMessages, R"({"model":"claude","messages":[]})", 64);
  CHECK(json::parse(p.body)["max_tokens"] == 64);
  p = Plan(Api::kResponses, R"({"model":"m","input":"hi"})", 65);
  CHECK(json::parse(p.body)["max_output_tokens"] == 65);
  CHECK(p.prompt_tokens == kTokensPerRequest + 2);
  // Embeddings have no output.
  p = Plan(Api::kEmbeddings, R"({"model":"e","input":["ab","cde"]})");
  CHECK(p.output_tokens == 0);
  CHECK(p.prompt_tokens == kTokensPerRequest + 5);
  CHECK(p.body.empty());
}

TEST_CASE("front plan: a stream asks for its usage, and says who wanted it",
          "[front]") {
  CallPlan p = Plan(Api::kChat,
                    R"({"model":"m","stream":true,"max_tokens":9,"messages":[]})");
  CHECK(p.stream);
  CHECK_FALSE(p.client_wants_usage);
  CHECK(json::parse(p.body)["stream_options"]["include_usage"] == true);
  p = Plan(Api::kChat,
           R"({"model":"m","stream":true,"max_tokens":9,"messages":[],)"
           R"("stream_options":{"include_usage":true}})");
  CHECK(p.client_wants_usage);
  CHECK(p.body.empty());
  // Anthropic streams report usage unasked.
  p = Plan(Api::kMessages,
           R"({"model":"c","stream":true,"max_tokens":9,"messages":[]})");
  CHECK(p.stream);
  CHECK(p.body.empty());
}

TEST_CASE("front plan: an image part costs its cap, not its bytes", "[front]") {
  const std::string image(100'000, 'A');
  CallPlan p = Plan(Api::kChat,
                    R"({"model":"m","max_tokens":1,"messages":[{"role":"user","content":[)"
                    R"({"type":"image_url","image_url":{"url":"data:image/png;base64,)" +
                        image + R"("}}]}]})");
  CHECK(p.prompt_tokens < 2 * kTokensPerImage);
  CHECK(p.prompt_tokens >= kTokensPerImage);
}

TEST_CASE("front plan: bad bodies are refused naming the field", "[front]") {
  CHECK(PlanError(Api::kChat, "{") == "body: not valid JSON");
  CHECK(PlanError(Api::kChat, "[1]") == "body: must be a JSON object");
  CHECK(PlanError(Api::kChat, R"({"model":5})").starts_with("model:"));
  CHECK(PlanError(Api::kChat, R"({"model":"m","stream":"yes"})")
            .starts_with("stream:"));
  CHECK(PlanError(Api::kChat, R"({"model":"m","max_tokens":-1})")
            .starts_with("max_tokens:"));
  CHECK(PlanError(Api::kChat, R"({"model":"m","max_tokens":1.5})")
            .starts_with("max_tokens:"));
  CHECK(PlanError(Api::kChat, R"({"model":"m","messages":"hi"})")
            .starts_with("messages:"));
  CHECK(PlanError(Api::kChat, R"({"model":"m","n":0})").starts_with("n:"));
  CHECK(PlanError(Api::kChat,
                  R"({"model":"m","stream":true,"stream_options":3})")
            .starts_with("stream_options:"));
  CHECK(PlanError(Api::kChat, std::string(100, '[') + std::string(100, ']'))
            .starts_with("body: nested deeper"));
}

}  // namespace
}  // namespace brake::front
