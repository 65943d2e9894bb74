// RedisServer: a real redis-server for a test, on a Unix socket in a
// temporary directory (no TCP port, no system service), and a small
// synchronous client (hiredis) to look at what the daemons wrote.
//
// Start() spawns `redis-server` (found on PATH) with no persistence unless
// asked (AOF with appendfsync always), and waits until it answers PING. The
// destructor SIGKILLs and reaps a server still running. Test thread only.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

struct redisContext;

namespace brake::integration {

class RedisServer {
 public:
  // Listens on dir/redis.sock; with `aof`, keeps an append-only file in dir.
  explicit RedisServer(const std::string& dir, bool aof = false);
  ~RedisServer();
  RedisServer(const RedisServer&) = delete;
  RedisServer& operator=(const RedisServer&) = delete;

  // False when it exited or did not answer within 5 s.
  bool Start();
  void Kill9();
  bool running() const { return pid_ > 0; }
  const std::string& socket_path() const { return socket_path_; }
  // "unix:" + socket_path(), as a daemon's cluster.redis.
  std::string address() const { return "unix:" + socket_path_; }

  // One command (argv), its reply as text: a string, an integer in decimal,
  // an array's elements joined by '\n'; nullopt for nil or on an error.
  std::optional<std::string> Command(const std::vector<std::string>& argv);
  // HGET key field as an integer (0 when absent).
  int64_t HashInt(const std::string& key, const std::string& field);
  // Keys matching `pattern` (KEYS).
  std::vector<std::string> Keys(const std::string& pattern);

 private:
  bool Connect();
  void Disconnect();

  std::string dir_;
  std::string socket_path_;
  bool aof_;
  pid_t pid_ = -1;
  redisContext* ctx_ = nullptr;
};

}  // namespace brake::integration
