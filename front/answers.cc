#include "front/answers.h"

#include <algorithm>
#include <string>

#include <nlohmann/json.hpp>

#include "common/human_text.h"

namespace brake::front {
namespace {

using json = nlohmann::json;

// OpenAI's error type for an HTTP status.
const char* OpenAiType(int status) {
  switch (status) {
    case 401: return "invalid_request_error";
    case 429: return "rate_limit_exceeded";
    default: return status >= 500 ? "server_error" : "invalid_request_error";
  }
}

const char* AnthropicType(int status) {
  switch (status) {
    case 401: return "authentication_error";
    case 403: return "permission_error";
    case 404: return "not_found_error";
    case 413: return "request_too_large";
    case 429: return "rate_limit_error";
    case 503: return "overloaded_error";
    default: return status >= 500 ? "api_error" : "invalid_request_error";
  }
}

std::string Body(Dialect dialect, int status, const char* openai_type,
                 std::string_view code, std::string_view message) {
  json body;
  if (dialect == Dialect::kAnthropic) {
    body = {{"type", "error"},
            {"error",
             {{"type", AnthropicType(status)},
              {"message", message},
              {"code", code}}}};
  } else {
    body = {{"error",
             {{"message", message},
              {"type", openai_type},
              {"param", nullptr},
              {"code", code}}}};
  }
  return body.dump(-1, ' ', false, json::error_handler_t::replace);
}

// An amount of `resource` for a message: "0.0097 usd", "1200 tokens".
std::string AmountText(double v, const std::string& resource) {
  return FormatDecimal(v) + " " + (resource.empty() ? "units" : resource);
}

// The message's account of a cap: what the call would take of it, what is
// left, what calls in flight hold.
std::string CapText(const Refusal& r) {
  std::string m;
  if (r.reason == "reserved") {
    if (r.held) {
      m += "; " + AmountText(*r.held, r.resource) +
           " of it is held by calls in flight, not spent: it comes back as "
           "they settle";
    }
    return m;
  }
  // Left unspent: neither spent nor held, and what is held.
  const double unspent =
      r.remaining ? std::max(0.0, *r.remaining + r.held.value_or(0)) : 0;
  if (r.would_reserve > 0) {
    m += ": this call would reserve " + AmountText(r.would_reserve, r.resource);
    if (r.remaining) {
      m += " against " + AmountText(unspent, r.resource) + " left unspent of " +
           AmountText(r.capacity, r.resource);
    }
  }
  // The prompt alone would fit: the output maximum is what does not.
  if (r.output_tokens > 0 && r.resource != "requests" && unspent > 0 &&
      unspent >= r.prompt_reserve) {
    m += "; the prompt fits, its output maximum of " +
         std::to_string(r.output_tokens) + " tokens does not (" +
         (r.output_defaulted ? "brake's default_max_tokens: the request "
                               "names no maximum"
                             : "as the request names it") +
         "): ask for fewer";
  }
  return m;
}

}  // namespace

std::string ResetText(int64_t ms) {
  if (ms < 1000) return std::to_string(ms < 0 ? 0 : ms) + "ms";
  int64_t s = (ms + 999) / 1000;
  std::string out;
  if (s >= 3600) {
    out += std::to_string(s / 3600) + "h";
    s %= 3600;
    out += std::to_string(s / 60) + "m";
    s %= 60;
  } else if (s >= 60) {
    out += std::to_string(s / 60) + "m";
    s %= 60;
  }
  out += std::to_string(s) + "s";
  return out;
}

Answer DenialAnswer(Dialect dialect, const Refusal& r) {
  Answer a;
  a.status = 429;
  const bool spent = r.reason == "cost_cap" || r.reason == "quota_exhausted";
  std::string message = "brake: denied by " + r.scope;
  if (!r.limit.empty()) message += " limit " + r.limit;
  message += " (" + r.reason;
  if (!r.cause.empty()) message += ", cause " + r.cause;
  message += ")";
  if (spent || r.reason == "reserved") message += CapText(r);
  if (r.retry_after_ms) {
    const int64_t ms = std::max<int64_t>(0, *r.retry_after_ms);
    message += "; retry after " + FormatDurationMs(ms);
    a.headers.emplace_back("retry-after", std::to_string((ms + 999) / 1000));
    a.headers.emplace_back("retry-after-ms", std::to_string(ms));
    a.headers.emplace_back("x-should-retry", ms > kRetryHelpsMs ? "false" : "true");
    for (const char* res : {"requests", "tokens"}) {
      if (r.resource.empty() || r.resource == "usd" || r.resource == res)
        a.headers.emplace_back(std::string("x-ratelimit-reset-") + res, ResetText(ms));
    }
  } else {
    message += spent ? "; the cap does not reset: an operator may raise it"
                     : "; it can never be granted as asked";
    a.headers.emplace_back("x-should-retry", "false");
  }
  if (r.resource == "requests" || r.resource == "tokens") {
    a.headers.emplace_back("x-ratelimit-limit-" + r.resource,
                           std::to_string(static_cast<int64_t>(r.capacity)));
    a.headers.emplace_back("x-ratelimit-remaining-" + r.resource, "0");
  }
  a.headers.emplace_back("x-brake-reason", r.reason);
  a.headers.emplace_back("x-brake-scope", r.scope);
  a.body = Body(dialect, 429, spent ? "insufficient_quota" : "rate_limit_exceeded",
                r.reason, message);
  return a;
}

Answer ErrorAnswer(Dialect dialect, int status, std::string_view code,
                   std::string_view message) {
  Answer a;
  a.status = status;
  // Only a 502/503/504 may pass if tried again; the rest would fail alike.
  a.headers.emplace_back("x-should-retry",
                         status == 502 || status == 503 || status == 504
                             ? "true" : "false");
  a.body = Body(dialect, status, OpenAiType(status), code, message);
  return a;
}

const char* StatusText(int status) {
  switch (status) {
    case 200: return "OK";
    case 201: return "Created";
    case 204: return "No Content";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 408: return "Request Timeout";
    case 409: return "Conflict";
    case 411: return "Length Required";
    case 413: return "Payload Too Large";
    case 422: return "Unprocessable Entity";
    case 429: return "Too Many Requests";
    case 431: return "Request Header Fields Too Large";
    case 500: return "Internal Server Error";
    case 501: return "Not Implemented";
    case 502: return "Bad Gateway";
    case 503: return "Service Unavailable";
    case 504: return "Gateway Timeout";
    case 505: return "HTTP Version Not Supported";
    case 529: return "Overloaded";
    default: return status < 300 ? "OK" : status < 500 ? "Client Error" : "Server Error";
  }
}

}  // namespace brake::front
