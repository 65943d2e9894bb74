// Cluster: what the daemons share besides slices (policies, breakers,
// resets, every node's entry), through plain Redis hashes and version
// counters that each daemon looks at every 50 ms.
#include <algorithm>
#include <cstdlib>
#include <utility>

#include <hiredis/hiredis.h>

#include "cluster/cluster.h"

namespace brake::cluster {
namespace {

using json = nlohmann::json;

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

}  // namespace

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
                      {"available", s->available()}});
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

}  // namespace brake::cluster
