#include "cluster/redis_link.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include <hiredis/async.h>
#include <hiredis/hiredis.h>
#include <hiredis/adapters/libuv.h>

namespace brake::cluster {
namespace {

constexpr int64_t kFirstBackoffUs = 50'000;
constexpr int64_t kMaxBackoffUs = 500'000;

}  // namespace

struct RedisLink::Call {
  RedisLink* link;
  Done done;
};

RedisLink::RedisLink(uv_loop_t* loop, RedisTarget target,
                     std::vector<std::string> scripts,
                     int64_t call_timeout_us)
    : loop_(loop),
      target_(std::move(target)),
      scripts_(std::move(scripts)),
      shas_(scripts_.size()),
      call_timeout_us_(call_timeout_us) {}

RedisLink::~RedisLink() { Abort(); }

void RedisLink::Abort() {
  state_ = State::kClosed;
  if (ctx_ != nullptr) {
    redisAsyncContext* ctx = ctx_;
    ctx_ = nullptr;
    redisAsyncFree(ctx);
  }
  sent_us_.clear();
}

void RedisLink::Tick(int64_t now_us) {
  now_us_ = now_us;
  if (state_ == State::kClosed) return;
  if (stats_.down_since_us == 0 && state_ != State::kUp) {
    stats_.down_since_us = now_us;
  }
  if (state_ == State::kDown && now_us >= retry_at_us_) Connect(now_us);
  if (!sent_us_.empty() && now_us - sent_us_.front() > call_timeout_us_) {
    Lost("redis: no answer in " + std::to_string(call_timeout_us_ / 1000) +
             " ms",
         now_us);
  }
}

void RedisLink::Connect(int64_t now_us) {
  redisAsyncContext* ctx =
      target_.unix_path.empty()
          ? redisAsyncConnect(target_.host.c_str(), target_.port)
          : redisAsyncConnectUnix(target_.unix_path.c_str());
  if (ctx == nullptr || ctx->err != 0) {
    std::string why = ctx == nullptr ? "out of memory" : ctx->errstr;
    if (ctx != nullptr) redisAsyncFree(ctx);
    state_ = State::kConnecting;  // so that Lost schedules the retry
    Lost("redis: " + why, now_us);
    return;
  }
  ctx->data = this;
  if (redisLibuvAttach(ctx, loop_) != REDIS_OK) {
    redisAsyncFree(ctx);
    state_ = State::kConnecting;
    Lost("redis: cannot watch the connection on the loop", now_us);
    return;
  }
  redisAsyncSetConnectCallback(ctx, &RedisLink::OnConnect);
  redisAsyncSetDisconnectCallback(ctx, &RedisLink::OnDisconnect);
  ctx_ = ctx;
  state_ = State::kConnecting;
}

void RedisLink::OnConnect(const redisAsyncContext* ac, int status) {
  auto* link = static_cast<RedisLink*>(ac->data);
  if (link == nullptr || link->ctx_ != ac) return;
  if (status != REDIS_OK) {
    link->ctx_ = nullptr;  // hiredis frees it after this callback
    link->Lost(std::string("redis: ") + ac->errstr, link->now_us_);
    return;
  }
  link->state_ = State::kLoading;
  link->LoadScripts();
}

void RedisLink::LoadScripts() {
  state_ = State::kLoading;
  loading_ = scripts_.size();
  for (size_t i = 0; i < scripts_.size(); ++i) {
    Send({"SCRIPT", "LOAD", scripts_[i]}, now_us_, [this, i](const redisReply* r) {
      if (r == nullptr || r->type != REDIS_REPLY_STRING) {
        if (r != nullptr && state_ == State::kLoading) {
          last_error_ = std::string("redis: SCRIPT LOAD failed: ") +
                        (r->str != nullptr ? r->str : "unexpected reply");
        }
        return;  // a lost link reconnects and loads again
      }
      shas_[i].assign(r->str, r->len);
      if (--loading_ == 0 && state_ == State::kLoading) {
        state_ = State::kUp;
        ++stats_.connects;
        if (stats_.down_since_us != 0) {
          stats_.down_us_total += now_us_ - stats_.down_since_us;
          stats_.down_since_us = 0;
        }
        last_error_.clear();
        backoff_us_ = 0;
      }
    });
  }
}

void RedisLink::OnDisconnect(const redisAsyncContext* ac, int /*status*/) {
  auto* link = static_cast<RedisLink*>(ac->data);
  if (link == nullptr || link->ctx_ != ac) return;
  link->ctx_ = nullptr;  // hiredis frees it after this callback
  const std::string why =
      ac->err != 0 ? std::string("redis: ") + ac->errstr
                   : std::string("redis: the connection closed");
  link->Lost(why, link->now_us_);
}

void RedisLink::Lost(const std::string& why, int64_t now_us) {
  if (state_ == State::kClosed) return;
  const bool was_connected = state_ == State::kUp || state_ == State::kLoading;
  if (state_ == State::kUp) ++stats_.disconnects;
  if (stats_.down_since_us == 0) stats_.down_since_us = now_us;
  state_ = State::kDown;
  last_error_ = why;
  if (ctx_ != nullptr) {
    redisAsyncContext* ctx = ctx_;
    ctx_ = nullptr;
    redisAsyncFree(ctx);  // answers every call in flight with nullptr
  }
  sent_us_.clear();
  backoff_us_ = was_connected ? kFirstBackoffUs
                              : std::clamp(backoff_us_ * 2, kFirstBackoffUs,
                                           kMaxBackoffUs);
  retry_at_us_ = now_us + backoff_us_;
}

bool RedisLink::Eval(size_t index, const std::vector<std::string>& keys,
                     const std::vector<std::string>& args, int64_t now_us,
                     Done done) {
  now_us_ = now_us;
  if (state_ != State::kUp || index >= shas_.size()) return false;
  std::vector<std::string> argv;
  argv.reserve(3 + keys.size() + args.size());
  argv.push_back("EVALSHA");
  argv.push_back(shas_[index]);
  argv.push_back(std::to_string(keys.size()));
  argv.insert(argv.end(), keys.begin(), keys.end());
  argv.insert(argv.end(), args.begin(), args.end());
  return Send(argv, now_us, [this, done = std::move(done)](const redisReply* r) {
    if (r != nullptr && r->type == REDIS_REPLY_ERROR && r->str != nullptr &&
        std::strncmp(r->str, "NOSCRIPT", 8) == 0 && state_ == State::kUp) {
      LoadScripts();  // Redis forgot them (SCRIPT FLUSH): load again
    }
    done(r);
  });
}

bool RedisLink::Command(const std::vector<std::string>& argv, int64_t now_us,
                        Done done) {
  now_us_ = now_us;
  if (state_ != State::kUp) return false;
  return Send(argv, now_us, std::move(done));
}

bool RedisLink::Send(const std::vector<std::string>& argv, int64_t now_us,
                     Done done) {
  if (ctx_ == nullptr) return false;
  std::vector<const char*> ptrs;
  std::vector<size_t> lens;
  ptrs.reserve(argv.size());
  lens.reserve(argv.size());
  for (const std::string& a : argv) {
    ptrs.push_back(a.data());
    lens.push_back(a.size());
  }
  auto* call = new Call{this, std::move(done)};
  if (redisAsyncCommandArgv(ctx_, &RedisLink::OnReply, call,
                            static_cast<int>(argv.size()), ptrs.data(),
                            lens.data()) != REDIS_OK) {
    delete call;
    return false;
  }
  sent_us_.push_back(now_us);
  return true;
}

void RedisLink::OnReply(redisAsyncContext* /*ac*/, void* reply,
                        void* privdata) {
  auto* call = static_cast<Call*>(privdata);
  RedisLink* link = call->link;
  if (!link->sent_us_.empty()) link->sent_us_.pop_front();
  auto* r = static_cast<redisReply*>(reply);
  if (r == nullptr || r->type == REDIS_REPLY_ERROR) {
    ++link->stats_.failed_calls;
  } else {
    ++link->stats_.calls;
  }
  Done done = std::move(call->done);
  delete call;
  done(r);
}

void RedisLink::Close(int64_t now_us) {
  if (state_ != State::kUp && stats_.down_since_us != 0) {
    stats_.down_us_total += now_us - stats_.down_since_us;
  }
  state_ = State::kClosed;
  if (ctx_ != nullptr) redisAsyncDisconnect(ctx_);  // after what is pending
}

}  // namespace brake::cluster
