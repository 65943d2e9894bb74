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

constexpr size_t kCapScript = 0;
constexpr size_t kBucketScript = 1;
constexpr size_t kResetScript = 2;
constexpr int kMaxHolds = 3;  // a request is held at most this often
// A call unanswered this long means Redis hangs: the link is dropped.
constexpr int64_t kCallTimeoutUs = 250'000;
// Shared policies and breakers are looked at this often (a breaker opened
// on one daemon is open on the others within about this).
constexpr int64_t kPollUs = 50'000;
// Each node's entry in PREFIX nodes: written this often, shown as live
// while younger than kNodeLiveUs, dropped by the others after kNodeGoneUs.
constexpr int64_t kHeartbeatUs = 1'000'000;
constexpr int64_t kNodeLiveUs = 5'000'000;
constexpr int64_t kNodeGoneUs = 3'600'000'000;
// What a node's entry lists of its shares: the most held.
constexpr size_t kHeartbeatShares = 50;

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

void Cluster::Poll(int64_t now_us) {
  next_poll_us_ = now_us + kPollUs;
  polling_ = link_.Command(
      {"MGET", config_.prefix + "policies:version",
       config_.prefix + "breakers:version", config_.prefix + "resets:version"},
      now_us, [this](const redisReply* r) {
        polling_ = false;
        if (r == nullptr || r->type != REDIS_REPLY_ARRAY || r->elements != 3) {
          return;
        }
        auto text = [&](size_t i) {
          const redisReply* e = r->element[i];
          return e->type == REDIS_REPLY_STRING ? std::string(e->str, e->len)
                                               : std::string("0");
        };
        if (text(0) != policies_version_) ReadPolicies(text(0));
        if (text(1) != breakers_version_) ReadBreakers(text(1));
        if (text(2) != resets_version_) ReadResets(text(2));
      });
}

void Cluster::Heartbeat(int64_t now_us) {
  next_heartbeat_us_ = now_us + kHeartbeatUs;
  std::vector<const Share*> held;
  shares_.ForEach([&](const Share& s) {
    if (s.slice().held() > 0) held.push_back(&s);
  });
  std::sort(held.begin(), held.end(), [](const Share* a, const Share* b) {
    return a->slice().held() > b->slice().held();
  });
  if (held.size() > kHeartbeatShares) held.resize(kHeartbeatShares);
  json shares = json::array();
  for (const Share* s : held) {
    shares.push_back({{"key", s->key()},
                      {"held", s->slice().held()},
                      {"available", s->available(now_us)}});
  }
  const json entry = {{"seen_ms", now_us / 1000},
                      {"shares", shares_.size()},
                      {"held", std::move(shares)}};
  const std::string key = config_.prefix + "nodes";
  link_.Command({"HSET", key, config_.node, entry.dump()}, now_us,
                [](const redisReply*) {});
  link_.Command({"HGETALL", key}, now_us, [this, key](const redisReply* r) {
    if (r == nullptr || r->type != REDIS_REPLY_ARRAY) return;
    const int64_t now = now_us_();
    json nodes = json::array();
    for (size_t i = 0; i + 1 < r->elements; i += 2) {
      const std::string node(r->element[i]->str, r->element[i]->len);
      json e = json::parse(std::string(r->element[i + 1]->str,
                                       r->element[i + 1]->len),
                           nullptr, /*allow_exceptions=*/false);
      if (!e.is_object() || !e["seen_ms"].is_number_integer()) continue;
      const int64_t age_us = now - e["seen_ms"].get<int64_t>() * 1000;
      if (age_us > kNodeGoneUs) {
        link_.Command({"HDEL", key, node}, now, [](const redisReply*) {});
        continue;
      }
      nodes.push_back({{"node", node},
                       {"live", age_us <= kNodeLiveUs},
                       {"seen_ms_ago", std::max<int64_t>(0, age_us / 1000)},
                       {"shares", e.value("shares", json(0))},
                       {"held", e.value("held", json::array())}});
    }
    live_nodes_ = 0;
    for (const json& n : nodes) live_nodes_ += n["live"] == true ? 1 : 0;
    nodes_ = std::move(nodes);
  });
}

void Cluster::ReadHash(
    const std::string& name,
    std::function<void(const std::map<std::string, std::string>&)> done) {
  link_.Command({"HGETALL", config_.prefix + name}, now_us_(),
                [done = std::move(done)](const redisReply* r) {
    if (r == nullptr || r->type != REDIS_REPLY_ARRAY) return;
    std::map<std::string, std::string> fields;
    for (size_t i = 0; i + 1 < r->elements; i += 2) {
      fields.emplace(std::string(r->element[i]->str, r->element[i]->len),
                     std::string(r->element[i + 1]->str,
                                 r->element[i + 1]->len));
    }
    done(fields);
  });
}

void Cluster::ReadPolicies(const std::string& version) {
  ReadHash("policies", [this, version](const PolicyMap& policies) {
    policies_version_ = version;
    const bool first = !policies_read_;
    policies_read_ = true;
    if (on_policies_) on_policies_(policies, first);
  });
}

void Cluster::ReadBreakers(const std::string& version) {
  ReadHash("breakers", [this, version](
                           const std::map<std::string, std::string>& fields) {
    BreakerMap breakers;
    for (const auto& [scope, value] : fields) {
      const size_t space = value.find(' ');
      if (space == std::string::npos) continue;
      breakers[scope] = SharedOpen{
          value.substr(0, space),
          std::strtoll(value.c_str() + space + 1, nullptr, 10)};
    }
    breakers_version_ = version;
    if (on_breakers_) on_breakers_(breakers);
  });
}

void Cluster::ReadResets(const std::string& version) {
  ReadHash("resets", [this, version](
                         const std::map<std::string, std::string>& fields) {
    resets_version_ = version;
    ResetMap resets;
    for (const auto& [scope, value] : fields) {
      const int64_t at = std::strtoll(value.c_str(), nullptr, 10);
      auto own = own_resets_.find(scope);
      if (own != own_resets_.end() && own->second == at) continue;  // done
      RecountScope(scope);
      resets[scope] = at;
    }
    const bool first = !resets_read_;
    resets_read_ = true;
    if (on_resets_) on_resets_(resets, first);
  });
}

void Cluster::RecountScope(const std::string& scope) {
  const std::string part = "|" + scope + "|";
  shares_.ForEachMutable([&](Share& s) {
    if (s.key().find(part) != std::string::npos) {
      s.Reset();
      shares_.NoteDue(&s);
    }
  });
}

bool Cluster::ResetShared(const std::string& scope,
                          const std::vector<SharedKey>& keys, int64_t now_us) {
  if (!link_.up()) return false;
  RecountScope(scope);
  for (const SharedKey& k : keys) {
    link_.Eval(kResetScript, {k.key},
               {k.bucket ? "bucket" : "cap", std::to_string(k.burst)}, now_us,
               [](const redisReply*) {});
  }
  const std::string key = config_.prefix + "resets";
  own_resets_[scope] = now_us;
  link_.Command({"HSET", key, scope, std::to_string(now_us)}, now_us,
                [](const redisReply*) {});
  link_.Command({"INCR", key + ":version"}, now_us, [](const redisReply*) {});
  return true;
}

void Cluster::PublishPolicy(const std::string& scope, const std::string& json) {
  const std::string key = config_.prefix + "policies";
  if (json.empty()) {
    outbox_.push_back({"HDEL", key, scope});
  } else {
    outbox_.push_back({"HSET", key, scope, json});
  }
  outbox_.push_back({"INCR", key + ":version"});
  Flush(now_us_());
}

void Cluster::PublishBreaker(const std::string& scope, const std::string& cause,
                             int64_t open_until_us) {
  const std::string key = config_.prefix + "breakers";
  if (cause.empty()) {
    outbox_.push_back({"HDEL", key, scope});
  } else {
    outbox_.push_back(
        {"HSET", key, scope, cause + " " + std::to_string(open_until_us)});
  }
  outbox_.push_back({"INCR", key + ":version"});
  Flush(now_us_());
}

void Cluster::Flush(int64_t now_us) {
  if (!link_.up()) return;  // kept until Redis is back
  std::vector<std::vector<std::string>> sending;
  sending.swap(outbox_);
  for (std::vector<std::string>& argv : sending) {
    // Lost with the link: sent again once it is back.
    auto resend = [this, argv](const redisReply* r) {
      if (r == nullptr) outbox_.push_back(argv);
    };
    if (!link_.Command(argv, now_us, std::move(resend))) {
      outbox_.push_back(std::move(argv));
    }
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
      if (!s.in_flight() && (s.available(now_us) > 0 || s.slice().debt() > 0)) {
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
                      {"available", s.available(now_us)},
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
