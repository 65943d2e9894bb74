#include "front/call.h"

#include <algorithm>
#include <array>
#include <cstdio>

#include <nlohmann/json.hpp>

#include "common/json_depth.h"

namespace brake::front {
namespace {

using ojson = nlohmann::ordered_json;

constexpr int kMaxBodyDepth = 64;

constexpr std::array<Route, 6> kRoutes = {{
    {Api::kChat, "/v1/chat/completions", "POST", "openai", "chat_completions"},
    {Api::kCompletions, "/v1/completions", "POST", "openai", "completions"},
    {Api::kEmbeddings, "/v1/embeddings", "POST", "openai", "embeddings"},
    {Api::kResponses, "/v1/responses", "POST", "openai", "responses"},
    {Api::kModels, "/v1/models", "GET", "openai", "models"},
    {Api::kMessages, "/v1/messages", "POST", "anthropic", "messages"},
}};

bool IsImagePart(const ojson& part) {
  auto type = part.find("type");
  if (type == part.end() || !type->is_string()) return false;
  const std::string& t = type->get_ref<const std::string&>();
  return t == "image_url" || t == "input_image" || t == "image";
}

// A ceiling of the tokens `v` can cost as prompt: every byte of text (keys
// of objects included: tool schemas are serialized into the prompt), an
// image part at its cap whatever its bytes.
int64_t TextCeiling(const ojson& v) {
  switch (v.type()) {
    case ojson::value_t::string:
      return static_cast<int64_t>(v.get_ref<const std::string&>().size());
    case ojson::value_t::array: {
      int64_t n = 0;
      for (const ojson& e : v) n += TextCeiling(e);
      return n;
    }
    case ojson::value_t::object: {
      if (IsImagePart(v)) return kTokensPerImage;
      int64_t n = 0;
      for (auto it = v.begin(); it != v.end(); ++it) {
        n += static_cast<int64_t>(it.key().size()) + TextCeiling(it.value());
      }
      return n;
    }
    case ojson::value_t::number_integer:
    case ojson::value_t::number_unsigned:
      return 1;  // a token id (embeddings of token arrays)
    default:
      return 0;
  }
}

// The prompt-bearing fields of each API, and the field that holds a list of
// messages (each costs its framing too).
struct PromptFields {
  std::array<const char*, 6> fields;
  const char* messages;
};

PromptFields PromptOf(Api api) {
  switch (api) {
    case Api::kChat:
      return {{"messages", "tools", "functions", "response_format",
               "prediction", nullptr},
              "messages"};
    case Api::kCompletions:
      return {{"prompt", "suffix", nullptr}, nullptr};
    case Api::kEmbeddings:
      return {{"input", nullptr}, nullptr};
    case Api::kResponses:
      return {{"input", "instructions", "tools", "text", nullptr}, "input"};
    case Api::kMessages:
      return {{"messages", "system", "tools", nullptr}, "messages"};
    case Api::kModels:
      break;
  }
  return {{nullptr}, nullptr};
}

// The body's output maximum field: the one it names, else where brake
// sets one ("" : the API has none).
struct OutputField {
  std::array<const char*, 2> names;  // in order of precedence
};

OutputField OutputOf(Api api) {
  switch (api) {
    case Api::kChat:
      return {{"max_completion_tokens", "max_tokens"}};
    case Api::kCompletions:
    case Api::kMessages:
      return {{"max_tokens", nullptr}};
    case Api::kResponses:
      return {{"max_output_tokens", nullptr}};
    default:
      return {{nullptr, nullptr}};
  }
}

Status Bad(const std::string& field, const char* why) {
  return Status::BadRequest(field + ": " + why);
}

}  // namespace

const Route* FindRoute(std::string_view method, std::string_view path,
                       bool* method_ok) {
  if (size_t q = path.find('?'); q != std::string_view::npos)
    path = path.substr(0, q);
  while (path.size() > 1 && path.back() == '/') path.remove_suffix(1);
  for (const Route& r : kRoutes) {
    if (r.path == path) {
      *method_ok = r.method == method;
      return &r;
    }
  }
  *method_ok = false;
  return nullptr;
}

uint64_t HashBytes(std::string_view bytes) {
  uint64_t h = 14695981039346656037ULL;
  for (unsigned char c : bytes) {
    h ^= c;
    h *= 1099511628211ULL;
  }
  return h;
}

Result<CallPlan> PlanCall(Api api, std::string_view body,
                          int64_t default_max_tokens) {
  if (NestedDeeperThan(body, kMaxBodyDepth)) {
    return Status(ErrorCode::kBadJson,
                  "body: nested deeper than " + std::to_string(kMaxBodyDepth));
  }
  ojson req = ojson::parse(body, nullptr, /*allow_exceptions=*/false);
  if (req.is_discarded()) {
    return Status(ErrorCode::kBadJson, "body: not valid JSON");
  }
  if (!req.is_object()) return Bad("body", "must be a JSON object");
  CallPlan plan;
  char hex[17];
  std::snprintf(hex, sizeof(hex), "%016llx",
                static_cast<unsigned long long>(HashBytes(body)));
  plan.fingerprint = hex;

  if (auto m = req.find("model"); m != req.end()) {
    if (!m->is_string() || m->get_ref<const std::string&>().empty() ||
        m->get_ref<const std::string&>().size() > 128) {
      return Bad("model", "must be a model's name, 1 to 128 bytes");
    }
    plan.model = m->get<std::string>();
  }
  if (auto s = req.find("stream"); s != req.end() && !s->is_null()) {
    if (!s->is_boolean()) return Bad("stream", "must be true or false");
    plan.stream = s->get<bool>() && api != Api::kEmbeddings;
  }
  int64_t choices = 1;
  if (auto n = req.find("n"); n != req.end() && !n->is_null()) {
    if (!n->is_number_integer() || n->get<int64_t>() < 1 ||
        n->get<int64_t>() > 128) {
      return Bad("n", "must be an integer between 1 and 128");
    }
    choices = n->get<int64_t>();
  }
  if (api == Api::kCompletions) {
    if (auto b = req.find("best_of"); b != req.end() && !b->is_null()) {
      if (!b->is_number_integer() || b->get<int64_t>() < 1 ||
          b->get<int64_t>() > 128) {
        return Bad("best_of", "must be an integer between 1 and 128");
      }
      choices = std::max(choices, b->get<int64_t>());
    }
  }

  const PromptFields prompt = PromptOf(api);
  int64_t tokens = kTokensPerRequest;
  for (const char* f : prompt.fields) {
    if (f == nullptr) break;
    if (auto it = req.find(f); it != req.end()) tokens += TextCeiling(*it);
  }
  if (prompt.messages != nullptr) {
    if (auto it = req.find(prompt.messages); it != req.end()) {
      if (it->is_array()) {
        tokens += kTokensPerMessage * static_cast<int64_t>(it->size());
      } else if (!it->is_string() || api != Api::kResponses) {
        return Bad(prompt.messages, "must be an array of messages");
      }
    }
  }
  plan.prompt_tokens = tokens;

  bool changed = false;
  const OutputField out = OutputOf(api);
  if (out.names[0] != nullptr) {
    bool named = false;
    for (const char* f : out.names) {
      if (f == nullptr) break;
      auto it = req.find(f);
      if (it == req.end() || it->is_null()) continue;
      if (!it->is_number_integer() || it->get<int64_t>() < 1 ||
          it->get<int64_t>() > 100'000'000) {
        return Bad(f, "must be an integer between 1 and 100000000");
      }
      plan.output_tokens = it->get<int64_t>();
      named = true;
      break;
    }
    if (!named) {
      plan.output_tokens = default_max_tokens;
      plan.set_output_max = true;
      req[out.names[0]] = default_max_tokens;
      changed = true;
    }
    plan.output_tokens *= choices;
  }

  if (plan.stream && (api == Api::kChat || api == Api::kCompletions)) {
    auto so = req.find("stream_options");
    if (so != req.end() && !so->is_null() && !so->is_object()) {
      return Bad("stream_options", "must be an object");
    }
    if (so != req.end() && so->is_object()) {
      auto iu = so->find("include_usage");
      if (iu != so->end() && !iu->is_null() && !iu->is_boolean()) {
        return Bad("stream_options.include_usage", "must be true or false");
      }
      plan.client_wants_usage = iu != so->end() && iu->is_boolean() &&
                                iu->get<bool>();
    }
    if (!plan.client_wants_usage) {
      req["stream_options"]["include_usage"] = true;
      changed = true;
    }
  }
  if (changed) plan.body = req.dump();
  return plan;
}

}  // namespace brake::front
