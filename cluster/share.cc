#include "cluster/share.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "common/sat_math.h"

namespace brake::cluster {

Share::Share(std::string key, ShareKind kind, int64_t capacity)
    : key_(std::move(key)), kind_(kind), remaining_(capacity) {}

bool Share::Take(int64_t units, int64_t now_us) {
  NoteDemand(units, now_us);
  if (!slice_.Take(units)) return false;
  if (local_) ++local_grants_;
  return true;
}

void Share::MarkShort(int64_t units, int64_t now_us) {
  last_use_us_ = now_us;  // demand is counted when the units are taken
  short_ = sat::SatAdd(short_, units);
  short_max_ = std::max(short_max_, units);
}

bool Share::Wants(int64_t now_us, const ShareTuning& t) const {
  if (in_flight_) return false;
  if (unknown_ || recount_ || unreported_ > 0 || slice_.debt() > 0) {
    return true;
  }
  // Spent is news others need when the cap looks used up.
  if (spent_unreported_ != 0 && (remaining_ <= 0 || dry(now_us))) return true;
  const int64_t available = slice_.available();
  if (closed()) return available > 0;
  if (short_ > 0 && !dry(now_us)) return true;
  const bool idle = now_us - last_use_us_ > t.idle_us;
  if (idle) return available > 0;
  if (dry(now_us)) return false;
  const double low =
      demand_per_s(now_us) * static_cast<double>(t.low_water_us) / 1e6;
  if (static_cast<double>(available) < std::max(1.0, low)) return true;
  return available > 0 && now_us + t.renew_us >= slice_.expires_us();
}

ShareCall Share::Begin(int64_t now_us, const ShareTuning& t, std::string seq,
                       bool give_all) {
  ShareCall call;
  call.seq = seq;
  sent_ = Sent{std::move(seq), now_us};
  in_flight_ = true;
  if (unknown_) {
    // Which way the unanswered call went decides what the share holds and
    // owes: nothing else is asked until then.
    call.resolve = unknown_->seq;
    call.held = slice_.available();
    sent_.resolve_only = true;
    return call;
  }
  sent_.slice_debt = slice_.debt();
  sent_.unreported = unreported_;
  call.debt = sat::SatAdd(sent_.slice_debt, unreported_);
  sent_.spent = call.spent = spent_unreported_;
  recount_ = false;
  const bool idle = give_all || closed() || now_us - last_use_us_ > t.idle_us;
  if (idle) {
    call.back = slice_.GiveBack(0);
  } else if (starved_ && short_max_ > 0 && !dry(now_us)) {
    // Units scattered over daemons' slices may each be too few for the
    // request: give them back and ask for it whole, so that they come
    // together on one daemon rather than stay stranded on all.
    call.back = slice_.GiveBack(0);
    call.ask = short_max_;
    call.whole = true;
  } else if (!dry(now_us)) {
    const int64_t available = slice_.available();
    const double demand = demand_per_s(now_us);
    const int64_t sized =
        SliceToAsk(remaining_, static_cast<int>(nodes_), demand,
                   t.horizon_us / 1000, 1);
    // What short requests need may raise the ask to a fair share of what
    // is left, and always to the largest one of them.
    const int64_t fair = FairShare(remaining_, static_cast<int>(nodes_));
    const int64_t needed = short_ - available;
    call.ask = std::max(sized, std::min(needed, std::max(fair, short_max_)));
    call.ask = std::max<int64_t>(call.ask, short_max_ - available);
    if (call.ask < 0) call.ask = 0;
  }
  call.held = slice_.available();
  sent_.short_max = short_max_;
  short_ = short_max_ = 0;
  sent_.ask = call.ask;
  sent_.back = call.back;
  return call;
}

void Share::Applied(const Sent& call, int64_t granted, const ShareTuning& t) {
  slice_.Add(SliceGrant{sat::SatAdd(std::max<int64_t>(0, granted),
                                    call.slice_debt),
                        sat::SatAdd(call.at_us, t.ttl_us)});
  unreported_ = std::max<int64_t>(0, unreported_ - call.unreported);
  spent_unreported_ = sat::SatSub(spent_unreported_, call.spent);
}

void Share::Finish(const ShareReply& reply, int64_t now_us,
                   const ShareTuning& t) {
  in_flight_ = false;
  contacted_ = true;
  if (sent_.resolve_only && unknown_) {
    if (reply.resolved >= 0) {
      Applied(*unknown_, reply.resolved, t);
    } else {
      slice_.Extend(unknown_->back);  // it never reached Redis
    }
    unknown_.reset();
  }
  Applied(sent_, reply.granted, t);
  remaining_ = reply.remaining;
  if (reply.spent >= 0) spent_seen_ = reply.spent;
  nodes_ = 1 + std::max<int64_t>(0, reply.other_nodes);
  if (sent_.resolve_only) return;
  starved_ = kind_ == ShareKind::kCap && reply.granted < sent_.ask &&
             sent_.short_max > slice_.available();
  if (reply.granted < sent_.ask) {
    const int64_t wait = kind_ == ShareKind::kBucket
                             ? std::max<int64_t>(reply.wait_us, 1000)
                             : t.dry_recheck_us;
    dry_until_us_ = sat::SatAdd(now_us, wait);
  } else {
    dry_until_us_ = 0;
  }
}

void Share::Fail() {
  in_flight_ = false;
  if (sent_.resolve_only) return;  // the call to resolve stays unknown
  if (sent_.ask > 0 || sent_.slice_debt > 0 || sent_.unreported > 0 ||
      sent_.back > 0 || sent_.spent != 0) {
    unknown_ = sent_;
  }
}

void Share::Unsent() {
  in_flight_ = false;
  if (sent_.resolve_only) return;
  slice_.Extend(sent_.back);
}

void Share::GoLocal(int64_t now_us, int64_t live_nodes) {
  if (local_) return;
  local_ = true;
  if (!contacted_) return;  // nothing to divide: refused until Redis is back
  nodes_ = std::max(nodes_, live_nodes);
  const int64_t share = std::max<int64_t>(0, remaining_) / std::max<int64_t>(1, nodes_);
  slice_.Extend(share);
  unreported_ = sat::SatAdd(unreported_, share);
  local_at_us_ = now_us;
  local_frac_ = 0;
}

void Share::LocalRefill(int64_t now_us) {
  if (!local_ || !contacted_ || kind_ != ShareKind::kBucket ||
      limit_.rate <= 0 || now_us <= local_at_us_) {
    return;
  }
  const double n = static_cast<double>(std::max<int64_t>(1, nodes_));
  double tokens = local_frac_ + static_cast<double>(now_us - local_at_us_) *
                                    static_cast<double>(limit_.rate) /
                                    (static_cast<double>(limit_.per_ms) * 1000.0) / n;
  local_at_us_ = now_us;
  const int64_t room =
      std::max<int64_t>(0, limit_.limit / std::max<int64_t>(1, nodes_) -
                               slice_.available());
  int64_t whole = static_cast<int64_t>(tokens);
  local_frac_ = tokens - static_cast<double>(whole);
  if (whole >= room) {
    whole = room;
    local_frac_ = 0;
  }
  slice_.Extend(whole);
  unreported_ = sat::SatAdd(unreported_, whole);
}

void Share::EndLocal() { local_ = false; }

double Share::demand_per_s(int64_t now_us) const {
  const double age = static_cast<double>(std::max<int64_t>(0, now_us - demand_at_us_));
  return demand_ * std::exp(-age / 1e6);
}

void Share::NoteDemand(int64_t units, int64_t now_us) {
  demand_ = demand_per_s(now_us) + static_cast<double>(std::max<int64_t>(0, units));
  demand_at_us_ = now_us;
  last_use_us_ = now_us;
}

}  // namespace brake::cluster
