// FrontConfig: the `http` settings of a daemon, its OpenAI-compatible front
// (docs/FRONT.md).
//
// Pure data, parsed by daemon/config_front.cc: the config file is read the
// same whether or not this braked was built with the front's libraries
// (http-parser, libcurl).
#pragma once

#include <cstdint>
#include <map>
#include <string>

namespace brake::front {

struct Upstream {
  std::string base_url;     // http:// or https://, no trailing '/'
  std::string api_key_env;  // "" : no key is sent upstream
  bool operator==(const Upstream&) const = default;
};

// What an agent's key (its Bearer token or x-api-key) stands for.
struct KeyIdentity {
  std::string user;
  bool operator==(const KeyIdentity&) const = default;
};

struct FrontConfig {
  std::string host;  // of `listen`
  int port = 0;
  std::string listen;  // as configured, for messages
  std::map<std::string, Upstream> upstreams;  // "openai", "anthropic"
  std::map<std::string, KeyIdentity> keys;
  int64_t default_max_tokens = 4096;
  // How long a call waits for room held by calls in flight (a `reserved`
  // refusal) before it is answered 429; a request's x-brake-wait-ms wins.
  int64_t wait_ms = 30'000;
  int64_t max_header_bytes = 16 * 1024;   // request line and headers
  int64_t max_body_bytes = 8 << 20;
  int64_t header_timeout_ms = 10'000;     // to receive a request's head
  int64_t idle_timeout_ms = 60'000;       // a keep-alive connection unused
  int64_t upstream_connect_timeout_ms = 10'000;
  int64_t upstream_timeout_ms = 600'000;  // a whole upstream call
  int64_t max_connections = 4096;
  bool operator==(const FrontConfig&) const = default;
};

// The most a call may wait (x-brake-wait-ms, wait_ms): acquire's bound.
inline constexpr int64_t kMaxWaitMs = 3'600'000;

// SIGHUP may change `keys`, `default_max_tokens` and `wait_ms`; true when
// `a` and `b` differ in anything else (a restart is needed for it).
inline bool RestartNeeded(const FrontConfig& a, const FrontConfig& b) {
  FrontConfig x = a;
  x.keys = b.keys;
  x.default_max_tokens = b.default_max_tokens;
  x.wait_ms = b.wait_ms;
  return !(x == b);
}

}  // namespace brake::front
