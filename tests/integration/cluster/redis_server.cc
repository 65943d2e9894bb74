#include "tests/integration/cluster/redis_server.h"

#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <stdexcept>

#include <hiredis/hiredis.h>

#include "tests/integration/harness.h"

extern char** environ;

namespace brake::integration {

RedisServer::RedisServer(const std::string& dir, bool aof)
    : dir_(dir), socket_path_(dir + "/redis.sock"), aof_(aof) {}

RedisServer::~RedisServer() {
  Disconnect();
  if (running()) Kill9();
}

bool RedisServer::Start() {
  Disconnect();
  std::vector<std::string> args = {
      "redis-server", "--port", "0", "--unixsocket", socket_path_,
      "--unixsocketperm", "700", "--dir", dir_, "--save", "",
      "--appendonly", aof_ ? "yes" : "no", "--appendfsync", "always",
      "--logfile", dir_ + "/redis.log", "--daemonize", "no"};
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = -1;
  if (posix_spawnp(&pid, "redis-server", nullptr, nullptr, argv.data(),
                   environ) != 0) {
    return false;
  }
  pid_ = pid;
  return PollUntil([&] { return Connect(); }, 5000);
}

void RedisServer::Kill9() {
  Disconnect();
  if (pid_ <= 0) return;
  ::kill(pid_, SIGKILL);
  int status = 0;
  ::waitpid(pid_, &status, 0);
  pid_ = -1;
}

bool RedisServer::Connect() {
  if (ctx_ != nullptr) return true;
  redisContext* c = redisConnectUnix(socket_path_.c_str());
  if (c == nullptr) return false;
  if (c->err != 0) {
    redisFree(c);
    return false;
  }
  auto* reply = static_cast<redisReply*>(redisCommand(c, "PING"));
  const bool ok = reply != nullptr && reply->type == REDIS_REPLY_STATUS;
  if (reply != nullptr) freeReplyObject(reply);
  if (!ok) {
    redisFree(c);
    return false;
  }
  ctx_ = c;
  return true;
}

void RedisServer::Disconnect() {
  if (ctx_ != nullptr) redisFree(ctx_);
  ctx_ = nullptr;
}

std::optional<std::string> RedisServer::Command(
    const std::vector<std::string>& argv) {
  if (!Connect()) throw std::runtime_error("redis: cannot connect");
  std::vector<const char*> ptrs;
  std::vector<size_t> lens;
  for (const std::string& a : argv) {
    ptrs.push_back(a.data());
    lens.push_back(a.size());
  }
  auto* r = static_cast<redisReply*>(redisCommandArgv(
      ctx_, static_cast<int>(argv.size()), ptrs.data(), lens.data()));
  if (r == nullptr) {
    Disconnect();
    throw std::runtime_error("redis: the connection failed");
  }
  std::optional<std::string> out;
  switch (r->type) {
    case REDIS_REPLY_STRING:
    case REDIS_REPLY_STATUS:
      out = std::string(r->str, r->len);
      break;
    case REDIS_REPLY_INTEGER:
      out = std::to_string(r->integer);
      break;
    case REDIS_REPLY_ARRAY: {
      std::string joined;
      for (size_t i = 0; i < r->elements; ++i) {
        if (i > 0) joined += '\n';
        const redisReply* e = r->element[i];
        if (e->type == REDIS_REPLY_INTEGER) joined += std::to_string(e->integer);
        else if (e->str != nullptr) joined.append(e->str, e->len);
      }
      out = std::move(joined);
      break;
    }
    default:
      break;
  }
  freeReplyObject(r);
  return out;
}

int64_t RedisServer::HashInt(const std::string& key, const std::string& field) {
  auto v = Command({"HGET", key, field});
  return v ? std::stoll(*v) : 0;
}

std::vector<std::string> RedisServer::Keys(const std::string& pattern) {
  auto v = Command({"KEYS", pattern});
  std::vector<std::string> keys;
  if (!v || v->empty()) return keys;
  size_t start = 0;
  while (true) {
    size_t nl = v->find('\n', start);
    keys.push_back(v->substr(start, nl - start));
    if (nl == std::string::npos) break;
    start = nl + 1;
  }
  return keys;
}

}  // namespace brake::integration
