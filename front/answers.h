// Answers the front gives itself: denials and errors, in the body shapes
// the official SDKs parse (OpenAI's {"error":{message,type,code}} on the
// OpenAI routes, Anthropic's {"type":"error","error":{type,message}} on
// /v1/messages), with the headers their retry logic reads: `retry-after`
// (seconds), `retry-after-ms`, and `x-should-retry: false` when waiting
// cannot help. Pure.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace brake::front {

using Headers = std::vector<std::pair<std::string, std::string>>;

struct Answer {
  int status = 200;
  Headers headers;
  std::string body;
};

enum class Dialect { kOpenAi, kAnthropic };

// What a denial says (the acquire's answer).
struct Refusal {
  std::string reason;  // brake's reason: rate_limited, cost_cap, ...
  std::string scope;
  std::string limit;
  std::string cause;   // for breaker_open
  std::optional<int64_t> retry_after_ms;  // none: never grantable as asked
  // What the denying limit counts ("requests" or "tokens": OpenAI's
  // x-ratelimit-* headers name them) and its capacity; "" when unknown (a
  // breaker, a usd limit).
  std::string resource;
  int64_t capacity = 0;
};

// 429 for a denial; with the limit's resource known, its
// x-ratelimit-limit-*, -remaining-* (0) and -reset-* headers, else the
// reset of both.
Answer DenialAnswer(Dialect dialect, const Refusal& refusal);
// An error of the front's own: `status` 400, 401, 404, 405, 413, 431, 502,
// 503, 504; `code` names it for programs ("invalid_api_key",
// "bad_request", "upstream_unavailable", ...), `message` for people.
Answer ErrorAnswer(Dialect dialect, int status, std::string_view code,
                   std::string_view message);

// OpenAI's duration format for x-ratelimit-reset-*: "1s", "6m0s", "1h2m3s",
// "250ms".
std::string ResetText(int64_t ms);

// The reason phrase of an HTTP status ("Too Many Requests").
const char* StatusText(int status);

}  // namespace brake::front
