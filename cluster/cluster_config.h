// ClusterConfig: the `cluster` settings of a daemon (docs/PROTOCOL.md).
//
// Pure data and parsing: the config file is read the same whether or not
// this braked was built with hiredis.
#pragma once

#include <string>
#include <string_view>

#include "common/status.h"

namespace brake::cluster {

// Where Redis listens: "unix:/path/to/redis.sock" or "tcp:HOST:PORT".
struct RedisTarget {
  std::string unix_path;  // set for unix:
  std::string host;       // set for tcp:
  int port = 0;
  std::string text;       // as configured, for messages
};
// Errors name `field`.
Result<RedisTarget> ParseRedisTarget(std::string_view text,
                                     const std::string& field);

enum class OnUnavailable { kClosed, kLocal };

struct ClusterConfig {
  RedisTarget redis;
  std::string node;              // unique per daemon
  std::string prefix = "brake:";  // every key starts with it
  OnUnavailable on_unavailable = OnUnavailable::kClosed;

  bool operator==(const ClusterConfig& o) const {
    return redis.text == o.redis.text && node == o.node &&
           prefix == o.prefix && on_unavailable == o.on_unavailable;
  }
};

}  // namespace brake::cluster
