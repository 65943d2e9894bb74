// Calls: what the front makes of one HTTP request before it goes upstream.
//
// FindRoute maps a method and path to an API; PlanCall parses the JSON body
// once and works out what brake reserves for it (a ceiling of the prompt's
// tokens plus the output maximum), its fingerprint (the body's hash: a blind
// retry sends the same bytes), and the body that goes upstream: with the
// output maximum set when the request named none (the reservation becomes a
// ceiling the provider enforces) and, for a stream, the final usage asked
// for. Pure: no IO, no clock.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "common/status.h"

namespace brake::front {

enum class Api {
  kChat,         // POST /v1/chat/completions
  kCompletions,  // POST /v1/completions
  kEmbeddings,   // POST /v1/embeddings
  kResponses,    // POST /v1/responses
  kModels,       // GET /v1/models (passed through, nothing reserved)
  kMessages,     // POST /v1/messages (Anthropic)
};

struct Route {
  Api api;
  std::string_view path;      // "/v1/chat/completions"
  std::string_view method;    // "POST"
  std::string_view upstream;  // "openai" | "anthropic"
  std::string_view name;      // for metrics: "chat_completions"
};

// The route of `path` (its query, if any, ignored); nullptr when none.
// `*method_ok` says whether `method` is the route's.
const Route* FindRoute(std::string_view method, std::string_view path,
                       bool* method_ok);

// Token ceilings of what no tokenizer exceeds: a token spans at least one
// byte of text, each message adds its framing, an image part at most this
// many (OpenAI's high-detail 2048x2048 tile count, Anthropic's 1.15 MP cap).
inline constexpr int64_t kTokensPerMessage = 8;
inline constexpr int64_t kTokensPerImage = 1600;
inline constexpr int64_t kTokensPerRequest = 16;

struct CallPlan {
  std::string model;         // "" when the body names none
  bool stream = false;
  // The client asked for the stream's usage chunk itself (OpenAI
  // stream_options.include_usage): it is passed through, not removed.
  bool client_wants_usage = false;
  int64_t prompt_tokens = 0;  // the ceiling reserved for the input
  int64_t output_tokens = 0;  // the output maximum reserved
  bool set_output_max = false;  // the body named none: brake set it
  std::string fingerprint;      // hex of the body's 64-bit hash
  std::string body;             // to send upstream ("" : the body as sent)
};

// Parses and plans a POST's JSON body. Errors (kBadJson, kBadRequest) name
// the field: "messages: must be an array", "max_tokens: must be an integer
// >= 1".
Result<CallPlan> PlanCall(Api api, std::string_view body,
                          int64_t default_max_tokens);

// FNV-1a, 64 bits: the fingerprint of a body.
uint64_t HashBytes(std::string_view bytes);

}  // namespace brake::front
