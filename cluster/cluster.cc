#include "cluster/cluster.h"

#include <sys/random.h>

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <utility>

#include <hiredis/hiredis.h>

#include "cluster/scripts.h"
#include "cluster/shared_limiter.h"

namespace brake::cluster {
namespace {

using json = nlohmann::json;

constexpr int kMaxHolds = 3;  // a request is held at most this often
// A call unanswered this long means Redis hangs: the link is dropped.
constexpr int64_t kCallTimeoutUs = 250'000;

std::vector<std::string> Scripts() {
  return {std::string(kCapLua), std::string(kBucketLua),
          std::string(kResetLua)};
}

int64_t Element(const redisReply* r, size_t i, int64_t absent = 0) {
  if (i >= r->elements || r->element[i]->type != REDIS_REPLY_INTEGER) {
    return absent;
  }
  return r->element[i]->integer;
}

// Names this run's calls apart from an earlier run's of the same node.
std::string RunNonce() {
  uint64_t r = 0;
  if (getrandom(&r, sizeof(r), 0) != sizeof(r)) r = uv_hrtime();
  char buf[20];
  std::snprintf(buf, sizeof(buf), "%016" PRIx64, r);
  return buf;
}

}  // namespace

Cluster::Cluster(uv_loop_t* loop, ClusterConfig config,
                 std::function<int64_t()> now_us, ShareTuning tuning)
    : config_(std::move(config)),
      now_us_(std::move(now_us)),
      shares_(tuning),
      run_nonce_(RunNonce()),
      link_(loop, config_.redis, Scripts(), kCallTimeoutUs) {}

std::string Cluster::NextSeq() {
  return run_nonce_ + "-" + std::to_string(++calls_begun_);
}

Cluster::~Cluster() = default;

Engine::LimiterMaker Cluster::MakerFor() {
  return [this](const std::string& scope, SpecRef spec, int64_t now_us) {
    return MakeClusterLimiter(&shares_, config_.prefix, scope, std::move(spec),
                              now_us);
  };
}

void Cluster::Tick(int64_t now_us, bool scan_all) {
  link_.Tick(now_us);
  const bool up = link_.up();
  if (up != was_up_) {
    OnLinkChange(up, now_us);
    scan_all = true;
  }
  if (!up) {
    if (!fails_closed()) {
      shares_.ForEachMutable([&](Share& s) { s.LocalRefill(now_us); });
    }
    return;
  }
  if (!outbox_.empty()) Flush(now_us);
  if (now_us >= next_poll_us_ && !polling_) Poll(now_us);
  if (now_us >= next_heartbeat_us_) Heartbeat(now_us);
  if (!scan_all && !shares_.urgent()) return;
  shares_.Due(now_us, scan_all, &due_);
  for (Share* s : due_) {
    Call(s, s->Begin(now_us, shares_.tuning(), NextSeq()), now_us);
  }
}

void Cluster::OnLinkChange(bool up, int64_t now_us) {
  was_up_ = up;
  if (fails_closed()) return;
  // local: each share grants from its part of what was left, and counts
  // it in Redis once it is back.
  shares_.ForEachMutable([&](Share& s) {
    if (up) {
      s.EndLocal();
    } else {
      s.GoLocal(now_us, live_nodes_);
    }
  });
}

void Cluster::Call(Share* share, const ShareCall& call, int64_t now_us) {
  const ShareLimit& l = share->limit();
  const std::string ttl_ms = std::to_string(shares_.tuning().ttl_us / 1000);
  std::vector<std::string> args;
  size_t script;
  if (share->kind() == ShareKind::kBucket) {
    script = kBucketScript;
    args = {config_.node,           std::to_string(l.rate),
            std::to_string(l.per_ms), std::to_string(l.limit),
            std::to_string(call.ask), std::to_string(call.debt),
            std::to_string(call.back), std::to_string(call.held), ttl_ms};
  } else {
    script = kCapScript;
    args = {config_.node,              std::to_string(l.limit),
            std::to_string(call.ask),  std::to_string(call.debt),
            std::to_string(call.back), std::to_string(call.held),
            ttl_ms,                    std::to_string(l.key_ttl_ms)};
  }
  args.push_back(call.seq);
  args.push_back(call.resolve);
  if (script == kCapScript) {
    args.push_back(std::to_string(call.spent));
    args.push_back(call.whole ? "1" : "0");
  }
  if (call.back > 0) ++counters_.give_backs;
  const bool sent = link_.Eval(
      script, {share->key()}, args, now_us,
      [this, key = share->key()](const redisReply* reply) {
        OnAnswer(key, reply);
      });
  if (!sent) share->Unsent();
}

void Cluster::OnAnswer(const std::string& key, const redisReply* reply) {
  Share* share = shares_.Find(key);
  const bool ok = reply != nullptr && reply->type == REDIS_REPLY_ARRAY &&
                  reply->elements >= 3;
  if (ok) ++counters_.share_calls;
  else ++counters_.failed_calls;
  if (share != nullptr && share->in_flight()) {
    if (ok) {
      ShareReply r;
      r.granted = Element(reply, 0);
      r.remaining = Element(reply, 1);
      r.other_nodes = Element(reply, 2);
      r.wait_us = Element(reply, 3);
      r.resolved = Element(reply, 4, -1);
      r.spent = Element(reply, 5, -1);
      if (r.granted > 0) ++counters_.refills;
      share->Finish(r, now_us_(), shares_.tuning());
    } else {
      share->Fail();
    }
  }
  if (link_.in_flight() == 0) {
    RedoHeld();
    if (on_answers_) on_answers_();
  }
}

bool Cluster::Hold(std::function<void()> redo) {
  if (!link_.up() || redo_attempts_ >= kMaxHolds) return false;
  ++counters_.held_requests;
  held_.push_back(Held{redo_attempts_ + 1, std::move(redo)});
  return true;
}

void Cluster::RedoHeld() {
  if (held_.empty()) return;
  std::vector<Held> held;
  held.swap(held_);
  for (Held& h : held) {
    redo_attempts_ = h.attempts;
    h.redo();
  }
  redo_attempts_ = 0;
}

std::string Cluster::UnavailableMessage() const {
  return "cluster: the shared store (redis " + config_.redis.text +
         ") is unreachable (" + link_.last_error() +
         "); acquires that need it fail closed until it is back";
}

void Cluster::Close(int64_t now_us) {
  if (link_.up()) {
    shares_.ForEachMutable([&](Share& s) {
      if (!s.in_flight() && (s.available() > 0 || s.slice().debt() > 0)) {
        Call(&s, s.Begin(now_us, shares_.tuning(), NextSeq(), /*give_all=*/true),
             now_us);
      }
    });
  }
  link_.Close(now_us);
  // Requests still held are answered by the daemon's shutdown.
  RedoHeld();
}

double Cluster::down_seconds(int64_t now_us) const {
  const LinkStats& s = link_.stats();
  int64_t us = s.down_us_total;
  if (s.down_since_us != 0) us += now_us - s.down_since_us;
  return static_cast<double>(us) / 1e6;
}

json Cluster::Status(int64_t now_us) const {
  json shares = json::array();
  uint64_t local_grants = 0;
  int64_t unreported = 0;
  shares_.ForEach([&](const Share& s) {
    local_grants += s.local_grants();
    unreported += s.unreported();
    shares.push_back({{"key", s.key()},
                      {"kind", s.kind() == ShareKind::kBucket ? "bucket" : "cap"},
                      {"held", s.slice().held()},
                      {"available", s.available()},
                      {"expires_in_ms",
                       std::max<int64_t>(0, s.slice().expires_us() - now_us) / 1000},
                      {"remaining_seen", s.remaining_seen()},
                      {"nodes_seen", s.nodes_seen()},
                      {"demand_per_s", s.demand_per_s(now_us)}});
  });
  const LinkStats& ls = link_.stats();
  return {{"node", config_.node},
          {"prefix", config_.prefix},
          {"redis", config_.redis.text},
          {"link", link_.up() ? "up" : "down"},
          {"link_error", link_.last_error()},
          {"on_unavailable",
           config_.on_unavailable == OnUnavailable::kLocal ? "local" : "closed"},
          {"down_ms", static_cast<int64_t>(down_seconds(now_us) * 1000)},
          {"connects", ls.connects},
          {"share_calls", counters_.share_calls},
          {"refills", counters_.refills},
          {"give_backs", counters_.give_backs},
          {"failed_calls", counters_.failed_calls},
          {"held_requests", counters_.held_requests},
          {"local_grants", local_grants},
          {"unreported", unreported},
          {"nodes", nodes_},
          {"shares", std::move(shares)}};
}

}  // namespace brake::cluster
