#include "cluster/cluster_config.h"

#include <charconv>

namespace brake::cluster {

Result<RedisTarget> ParseRedisTarget(std::string_view text,
                                     const std::string& field) {
  RedisTarget t;
  t.text = std::string(text);
  if (text.starts_with("unix:")) {
    t.unix_path = std::string(text.substr(5));
    if (t.unix_path.empty() || t.unix_path[0] != '/') {
      return Status::BadRequest(field + ": unix: needs an absolute path, as "
                                        "unix:/run/redis/redis.sock");
    }
    return t;
  }
  if (text.starts_with("tcp:")) {
    std::string_view rest = text.substr(4);
    const size_t colon = rest.rfind(':');
    if (colon == std::string_view::npos || colon == 0) {
      return Status::BadRequest(field + ": tcp: needs HOST:PORT, as "
                                        "tcp:127.0.0.1:6379");
    }
    int port = 0;
    std::string_view p = rest.substr(colon + 1);
    auto [end, ec] = std::from_chars(p.data(), p.data() + p.size(), port);
    if (ec != std::errc() || end != p.data() + p.size() || port < 1 ||
        port > 65535) {
      return Status::BadRequest(field + ": the port must be 1..65535");
    }
    t.host = std::string(rest.substr(0, colon));
    t.port = port;
    return t;
  }
  return Status::BadRequest(field +
                            ": must be unix:/PATH or tcp:HOST:PORT");
}

}  // namespace brake::cluster
