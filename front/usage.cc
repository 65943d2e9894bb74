#include "front/usage.h"

#include <algorithm>

#include <nlohmann/json.hpp>

#include "common/json_depth.h"

namespace brake::front {
namespace {

using json = nlohmann::json;

constexpr int kMaxAnswerDepth = 64;

// obj[key] as a count >= 0; false when absent or not one.
bool Count(const json& obj, const char* key, int64_t* out) {
  auto it = obj.find(key);
  if (it == obj.end() || !it->is_number_integer()) return false;
  *out = std::max<int64_t>(0, it->get<int64_t>());
  return true;
}

int64_t CountOr0(const json& obj, const char* key) {
  int64_t v = 0;
  Count(obj, key, &v);
  return v;
}

// Anthropic's input: uncached plus cache writes and reads, each a token the
// prompt held (brake prices them all as input).
int64_t AnthropicInput(const json& usage) {
  return CountOr0(usage, "input_tokens") +
         CountOr0(usage, "cache_creation_input_tokens") +
         CountOr0(usage, "cache_read_input_tokens");
}

// A usage object in OpenAI's (prompt/completion) or the Responses API's and
// Anthropic's (input/output) names.
Usage FromUsage(Api api, const json& u) {
  Usage usage;
  if (!u.is_object()) return usage;
  if (api == Api::kMessages) {
    if (!u.contains("input_tokens") && !u.contains("output_tokens"))
      return usage;
    usage.input_tokens = AnthropicInput(u);
    usage.output_tokens = CountOr0(u, "output_tokens");
    usage.reported = true;
    return usage;
  }
  const bool prompt = Count(u, "prompt_tokens", &usage.input_tokens);
  const bool completion = Count(u, "completion_tokens", &usage.output_tokens);
  if (prompt || completion) {
    usage.reported = true;
    return usage;
  }
  const bool input = Count(u, "input_tokens", &usage.input_tokens);
  const bool output = Count(u, "output_tokens", &usage.output_tokens);
  usage.reported = input || output;
  return usage;
}

json ParseData(std::string_view data) {
  if (NestedDeeperThan(data, kMaxAnswerDepth)) return json(json::value_t::discarded);
  return json::parse(data, nullptr, /*allow_exceptions=*/false);
}

// Bytes of the strings under `v`: text a model produced.
int64_t StringBytes(const json& v) {
  if (v.is_string()) return static_cast<int64_t>(v.get_ref<const std::string&>().size());
  int64_t n = 0;
  if (v.is_array() || v.is_object())
    for (const json& e : v) n += StringBytes(e);
  return n;
}

}  // namespace

Usage UsageOfAnswer(Api api, std::string_view body) {
  json answer = ParseData(body);
  if (!answer.is_object()) return Usage{};
  auto u = answer.find("usage");
  if (u == answer.end()) return Usage{};
  return FromUsage(api, *u);
}

bool StreamTally::OnEvent(std::string_view name, std::string_view data) {
  if (data.empty()) return true;
  ++events_;
  if (api_ != Api::kMessages && data == "[DONE]") {
    finished_ = true;
    return true;
  }
  json e = ParseData(data);
  if (!e.is_object()) return true;  // passed on as it came
  if (e.contains("error") || name == "error") errored_ = true;
  switch (api_) {
    case Api::kChat:
    case Api::kCompletions: {
      if (auto ch = e.find("choices"); ch != e.end() && ch->is_array()) {
        for (const json& c : *ch) {
          if (!c.is_object()) continue;
          if (auto d = c.find("delta"); d != c.end()) text_bytes_ += StringBytes(*d);
          if (auto t = c.find("text"); t != c.end()) text_bytes_ += StringBytes(*t);
        }
      }
      auto u = e.find("usage");
      if (u == e.end() || !u->is_object()) return true;
      Usage usage = FromUsage(api_, *u);
      if (usage.reported) {
        input_ = usage.input_tokens;
        output_ = usage.output_tokens;
        input_reported_ = output_reported_ = true;
      }
      // The usage chunk carries no choices; brake asked for it.
      auto ch = e.find("choices");
      const bool bare = ch == e.end() || (ch->is_array() && ch->empty());
      return !(drop_usage_chunk_ && bare);
    }
    case Api::kResponses: {
      std::string_view type;
      if (auto t = e.find("type"); t != e.end() && t->is_string())
        type = t->get_ref<const std::string&>();
      if (type.ends_with(".delta")) {
        if (auto d = e.find("delta"); d != e.end()) text_bytes_ += StringBytes(*d);
      }
      if (type == "response.completed" || type == "response.incomplete" ||
          type == "response.failed") {
        finished_ = true;
        if (type == "response.failed") errored_ = true;
        auto r = e.find("response");
        if (r != e.end() && r->is_object()) {
          if (auto u = r->find("usage"); u != r->end()) {
            Usage usage = FromUsage(api_, *u);
            if (usage.reported) {
              input_ = usage.input_tokens;
              output_ = usage.output_tokens;
              input_reported_ = output_reported_ = true;
            }
          }
        }
      }
      return true;
    }
    case Api::kMessages: {
      std::string_view type;
      if (auto t = e.find("type"); t != e.end() && t->is_string())
        type = t->get_ref<const std::string&>();
      if (type == "message_start") {
        auto m = e.find("message");
        if (m != e.end() && m->is_object()) {
          if (auto u = m->find("usage"); u != m->end() && u->is_object()) {
            input_ = AnthropicInput(*u);
            input_reported_ = true;
            Count(*u, "output_tokens", &output_);  // a start, not the total
          }
        }
      } else if (type == "content_block_delta") {
        if (auto d = e.find("delta"); d != e.end()) {
          for (const char* f : {"text", "partial_json", "thinking"}) {
            if (auto t = d->find(f); t != d->end()) text_bytes_ += StringBytes(*t);
          }
        }
      } else if (type == "message_delta") {
        if (auto u = e.find("usage"); u != e.end() && u->is_object()) {
          if (Count(*u, "output_tokens", &output_)) output_reported_ = true;
          if (u->contains("input_tokens")) {
            input_ = AnthropicInput(*u);
            input_reported_ = true;
          }
        }
      } else if (type == "message_stop") {
        finished_ = true;
      } else if (type == "error") {
        errored_ = true;
      }
      return true;
    }
    default:
      return true;
  }
}

Usage StreamTally::Settle(int64_t prompt_ceiling) const {
  Usage u;
  u.reported = input_reported_ && output_reported_;
  u.input_tokens = input_reported_ ? input_ : prompt_ceiling;
  u.output_tokens = output_reported_ ? output_ : std::max(output_, text_bytes_);
  return u;
}

}  // namespace brake::front
