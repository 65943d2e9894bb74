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

// What a denial says (the acquire's answer), and what the call asked.
struct Refusal {
  std::string reason;  // brake's reason: rate_limited, cost_cap, ...
  std::string scope;
  std::string limit;
  std::string cause;   // for breaker_open
  std::optional<int64_t> retry_after_ms;  // none: never grantable as asked
  // What the denying limit counts ("requests", "tokens", "usd"; OpenAI's
  // x-ratelimit-* headers name the first two) and its capacity; "" when
  // unknown (a breaker).
  std::string resource;
  double capacity = 0;
  // Of the denying limit, in its resource: what is left (neither spent nor
  // held) and what calls in flight hold; none when the answer said none.
  std::optional<double> remaining;
  std::optional<double> held;
  // What the call would reserve under that limit, in its resource; the
  // output maximum in tokens, and whether brake set it (the request named
  // none).
  double would_reserve = 0;
  double prompt_reserve = 0;  // of it, the prompt's part
  int64_t output_tokens = 0;
  bool output_defaulted = false;
};

// Past this a retry is no help to an SDK's own retries (they wait seconds):
// the answer says x-should-retry: false.
inline constexpr int64_t kRetryHelpsMs = 60'000;

// 429 for a denial; with the limit's resource known, its
// x-ratelimit-limit-*, -remaining-* (0) and -reset-* headers, else the
// reset of both. A spent cap (cost_cap, quota_exhausted) is type
// insufficient_quota and its message sets what the call would reserve
// against what is left, naming the output maximum when that alone does not
// fit; a cap held by calls in flight (reserved) is rate_limit_exceeded with
// what they hold. Durations read as brakectl prints them ("8h10m").
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
