// Share: what one daemon holds of one shared limit, and what it asks Redis.
//
// A shared cap (quota, fixed window, cost cap) or token bucket lives in
// Redis (cap.lua, bucket.lua). The daemon decides from its Slice of it and
// calls a script only to lease more, cover a debt, renew or give back. The
// Share is that slice plus what decides when to call and how much to ask:
// the demand it has seen (a decaying sum, units per second), what Redis
// said is left and how many nodes hold slices, and whether the limit is dry
// (Redis had nothing to give) so that requests are refused at once rather
// than asked for again. At most one call per share is in flight.
//
// Pure: no IO, no clock (time is a parameter, microseconds). Loop thread.
#pragma once

#include <cstdint>
#include <algorithm>
#include <optional>
#include <string>

#include "cluster/slice.h"
#include "common/sat_math.h"

namespace brake::cluster {

enum class ShareKind { kCap, kBucket };

// How shares size and time their calls; the defaults suit agents' rates.
struct ShareTuning {
  int64_t ttl_us = 5'000'000;       // a slice's lifetime in Redis
  int64_t horizon_us = 1'000'000;   // a lease covers this much demand
  int64_t low_water_us = 250'000;   // refill when less than this is left
  int64_t renew_us = 1'500'000;     // renew this long before expiry
  int64_t idle_us = 1'000'000;      // give back after this long unused
  int64_t dry_recheck_us = 250'000; // a dry cap is asked again after this
};

// One script call: what the share asks for and hands back. `seq` names the
// call; a call that got no answer may or may not have been applied, so the
// share's next call only asks Redis which (`resolve`: that call's seq).
struct ShareCall {
  int64_t ask = 0;   // units wanted in addition
  int64_t debt = 0;  // settled past the slice, or granted from a local
                     // share while Redis was away: Redis counts them now
  int64_t back = 0;  // unused units given back (already gone locally)
  int64_t held = 0;  // what stays held, unused, after giving back
  int64_t spent = 0;  // a cap: what leases settled since the last call
  bool whole = false;  // a cap: all of ask or nothing
  std::string seq;
  std::string resolve;  // "" when no call's outcome is unknown
};

// A script's answer.
struct ShareReply {
  int64_t granted = 0;
  int64_t remaining = 0;  // left of the limit (a bucket: whole tokens)
  int64_t other_nodes = 0;  // other daemons holding a live slice
  int64_t wait_us = 0;    // a bucket: until its next whole token
  int64_t resolved = -1;  // what the call `resolve` named was granted, or
                          // -1: Redis never applied it
  int64_t spent = -1;     // a cap: what all nodes' leases settled, or -1
};

// What a share's script call needs to know of its limit.
struct ShareLimit {
  int64_t limit = 0;  // a cap's limit, a bucket's burst
  int64_t rate = 0;   // a bucket: `rate` per `per_ms`
  int64_t per_ms = 1000;
  int64_t key_ttl_ms = 0;  // a cap: how long its key outlives a call
};

class Share {
 public:
  // `key` is the Redis key (fixed: a cap's next period is another share); `capacity` the limit (a bucket's burst), the
  // remaining assumed before Redis has answered.
  Share(std::string key, ShareKind kind, int64_t capacity);

  const std::string& key() const { return key_; }
  ShareKind kind() const { return kind_; }
  const Slice& slice() const { return slice_; }
  const ShareLimit& limit() const { return limit_; }
  void set_limit(const ShareLimit& limit) { limit_ = limit; }
  int64_t available() const { return slice_.available(); }

  // --- The decision side ---
  // Takes `units` for a grant when the slice holds them.
  bool Take(int64_t units, int64_t now_us);
  // Records that a request needed `units` more than the slice had: the
  // next call asks for them (Wants says so).
  void MarkShort(int64_t units, int64_t now_us);
  int64_t short_units() const { return short_; }
  // Redis had nothing more to give a moment ago: until when (0: not dry).
  int64_t dry_until_us() const { return dry_until_us_; }
  bool dry(int64_t now_us) const { return now_us < dry_until_us_; }
  // The limit was reset: what Redis last said no longer holds, and a call
  // is due at once (Redis counts what this daemon holds as of its first
  // call since the reset).
  void Reset() {
    dry_until_us_ = 0;
    recount_ = true;
    spent_seen_ = spent_unreported_ = 0;
  }
  // A settlement `delta` units off the reservation (see Slice::Settle).
  void Settle(int64_t delta) { slice_.Settle(delta); }
  // A cap: this daemon's leases settled `units` more (negative: a refund),
  // reported to Redis by the next call; due at once when the cap looked
  // used up (others then tell spent from held by it).
  void AddSpent(int64_t units) { spent_unreported_ = sat::SatAdd(spent_unreported_, units); }
  // A cap: what all daemons' leases settled, as Redis last said plus what
  // this one has not reported yet; the rest of what is counted is held.
  int64_t spent() const { return sat::SatAdd(spent_seen_, spent_unreported_); }
  // What slices and leases in flight hold, as Redis last said.
  int64_t held_seen() const {
    return std::max<int64_t>(0, limit_.limit - remaining_ - spent());
  }
  // Limiters using the share (SharedLimiter opens and releases it): one
  // with none left is closed, gives back what it holds, and is forgotten.
  void Ref() { ++refs_; }
  void Unref() {
    if (refs_ > 0) --refs_;
  }
  bool closed() const { return refs_ == 0; }

  // --- The call side ---
  // Whether a call is due now: a debt, a short request, a slice below its
  // low water while in demand, a renewal, or units to give back once idle
  // or closed. Never while one is in flight.
  bool Wants(int64_t now_us, const ShareTuning& t) const;
  // Starts the call named `seq`: gives back what it will not use (locally
  // at once; with `give_all`, everything: the daemon is stopping) and says
  // how much to ask. After a call whose outcome is unknown, the call only
  // resolves it. Marks the share in flight.
  ShareCall Begin(int64_t now_us, const ShareTuning& t, std::string seq,
                  bool give_all = false);
  bool in_flight() const { return in_flight_; }
  // The call's answer; `now_us` when it arrived.
  void Finish(const ShareReply& reply, int64_t now_us, const ShareTuning& t);
  // The call got no answer: Redis may or may not have applied it. The next
  // call asks which: applied, the share takes what it was granted; not, it
  // takes back what it gave back and owes its debt still. Nothing is
  // counted twice and nothing is lost.
  void Fail();
  // The call was never sent (the link was down): it changed nothing.
  void Unsent();
  bool outcome_unknown() const { return unknown_.has_value(); }

  // --- Redis away, on_unavailable: local ---
  // Grants from a bounded local share until Redis is back: a cap's
  // remaining (as last seen) divided by the daemons alive (the most of
  // those last seen holding a slice of it and `live_nodes`, the cluster's
  // as last seen); a bucket's refills at its rate divided by them
  // (LocalRefill). A share that never heard from Redis gets nothing. What
  // the local share adds is counted in Redis by the first call once it is
  // back.
  void GoLocal(int64_t now_us, int64_t live_nodes);
  void LocalRefill(int64_t now_us);
  // Redis is back: calls count what the local share granted.
  void EndLocal();
  bool local() const { return local_; }
  // Units granted from the local share and not yet counted in Redis.
  int64_t unreported() const { return unreported_; }
  // Grants made while Redis was away.
  uint64_t local_grants() const { return local_grants_; }

  // What Redis last said, for status.
  int64_t remaining_seen() const { return remaining_; }
  // Daemons holding a slice, this one counted, as Redis last said.
  int64_t nodes_seen() const { return nodes_; }
  // Demand, units per second, decayed to `now_us`.
  double demand_per_s(int64_t now_us) const;
  int64_t last_use_us() const { return last_use_us_; }

 private:
  void NoteDemand(int64_t units, int64_t now_us);

  std::string key_;
  ShareKind kind_;
  Slice slice_;
  ShareLimit limit_;
  int64_t remaining_;       // as Redis last said (or the capacity)
  int64_t nodes_ = 1;
  int64_t short_ = 0;      // units short since the last call began
  int64_t short_max_ = 0;  // the largest single request among them
  int64_t dry_until_us_ = 0;
  // A cap's last call could not serve a short request: the next one gives
  // the slice back and asks for the request whole.
  bool starved_ = false;
  double demand_ = 0;       // units, decaying with a 1 s time constant
  int64_t demand_at_us_ = 0;
  int64_t last_use_us_ = 0;
  // A call: what it carried, so that its answer (or, when it got none, its
  // resolution) can be applied.
  struct Sent {
    std::string seq;
    int64_t at_us = 0;
    int64_t ask = 0;
    int64_t slice_debt = 0;  // of its debt, what the slice owed
    int64_t unreported = 0;  // and what local grants added
    int64_t back = 0;
    int64_t spent = 0;
    int64_t short_max = 0;  // the largest request it was for
    bool resolve_only = false;
  };
  // Applies a call Redis applied, which granted `granted`.
  void Applied(const Sent& call, int64_t granted, const ShareTuning& t);
  Sent sent_;                    // the call in flight
  std::optional<Sent> unknown_;  // a call that got no answer
  int64_t unreported_ = 0;
  int64_t spent_seen_ = 0;        // a cap's spent as Redis last said
  int64_t spent_unreported_ = 0;  // settled here since the last call
  uint64_t local_grants_ = 0;
  bool recount_ = false;
  bool contacted_ = false;  // Redis has answered at least once
  bool local_ = false;
  int64_t local_at_us_ = 0;  // a bucket's local refill: until when
  double local_frac_ = 0;    // and the fraction of a token not yet added
  int refs_ = 0;
  bool in_flight_ = false;
};

}  // namespace brake::cluster
