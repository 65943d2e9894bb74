// RedisLink: the daemon's one connection to Redis, on the daemon's loop.
//
// hiredis's asynchronous client with its libuv adapter: a call never blocks
// the loop; its answer comes as a callback on the loop thread. On connect
// the link loads its Lua scripts (SCRIPT LOAD) and is up once every one is
// loaded; a call then runs a script by its SHA (EVALSHA). A lost connection
// answers every call in flight with no reply (nullptr) and is retried with
// backoff (50 ms doubling to 500 ms) from Tick(); so is a call unanswered
// for longer than `call_timeout_us` (a Redis that hangs is treated as one
// that went away). Loop thread only.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include <uv.h>

#include "cluster/cluster_config.h"

struct redisAsyncContext;
struct redisReply;

namespace brake::cluster {

struct LinkStats {
  uint64_t calls = 0;          // script calls answered
  uint64_t failed_calls = 0;   // answered with no reply or an error
  uint64_t connects = 0;       // connections made (scripts loaded)
  uint64_t disconnects = 0;
  int64_t down_us_total = 0;   // time without a usable link, before now
  int64_t down_since_us = 0;   // 0 while up
};

class RedisLink {
 public:
  // `done(reply)` gets the reply, or nullptr when none came (link down,
  // timeout). An error reply is passed as it is.
  using Done = std::function<void(const redisReply* reply)>;

  // `scripts` are Lua sources, called by index.
  RedisLink(uv_loop_t* loop, RedisTarget target,
            std::vector<std::string> scripts, int64_t call_timeout_us);
  ~RedisLink();
  RedisLink(const RedisLink&) = delete;
  RedisLink& operator=(const RedisLink&) = delete;

  // Connects (again) when it is time; times out a call that hangs.
  void Tick(int64_t now_us);
  // Connected with every script loaded.
  bool up() const { return state_ == State::kUp; }
  // Runs script `index` with `keys` and `args`; false (and `done` is not
  // called) when the link is not up.
  bool Eval(size_t index, const std::vector<std::string>& keys,
            const std::vector<std::string>& args, int64_t now_us, Done done);
  // Runs one plain command (argv); false (and `done` is not called) when
  // the link is not up.
  bool Command(const std::vector<std::string>& argv, int64_t now_us,
               Done done);
  // Disconnects for good: calls in flight are answered nullptr; the
  // connection's handle closes on the loop.
  void Close(int64_t now_us);
  // Drops the connection now: calls in flight are answered nullptr.
  void Abort();
  size_t in_flight() const { return sent_us_.size(); }
  const RedisTarget& target() const { return target_; }
  const LinkStats& stats() const { return stats_; }
  // Why the link is down (the last error), "" while up.
  const std::string& last_error() const { return last_error_; }

 private:
  enum class State { kDown, kConnecting, kLoading, kUp, kClosed };
  struct Call;

  void Connect(int64_t now_us);
  void LoadScripts();
  void Lost(const std::string& why, int64_t now_us);
  bool Send(const std::vector<std::string>& argv, int64_t now_us, Done done);
  static void OnConnect(const redisAsyncContext* ac, int status);
  static void OnDisconnect(const redisAsyncContext* ac, int status);
  static void OnReply(redisAsyncContext* ac, void* reply, void* privdata);

  uv_loop_t* loop_;
  RedisTarget target_;
  std::vector<std::string> scripts_;
  std::vector<std::string> shas_;
  int64_t call_timeout_us_;
  redisAsyncContext* ctx_ = nullptr;
  State state_ = State::kDown;
  int64_t now_us_ = 0;  // the last Tick's or Eval's: callbacks have no clock
  int64_t retry_at_us_ = 0;
  int64_t backoff_us_ = 0;
  size_t loading_ = 0;
  std::deque<int64_t> sent_us_;  // calls in flight, oldest first
  std::string last_error_ = "not connected yet";
  LinkStats stats_;
};

}  // namespace brake::cluster
