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
  return slice_.Take(units, now_us);
}

void Share::MarkShort(int64_t units, int64_t now_us) {
  last_use_us_ = now_us;  // demand is counted when the units are taken
  short_ = sat::SatAdd(short_, units);
  short_max_ = std::max(short_max_, units);
}

bool Share::Wants(int64_t now_us, const ShareTuning& t) const {
  if (in_flight_) return false;
  const int64_t available = slice_.available(now_us);
  if (slice_.debt() > 0) return true;
  if (closed()) return available > 0;
  if (short_ > 0 && !dry(now_us)) return true;
  const bool idle = now_us - last_use_us_ > t.idle_us;
  if (idle) return available > 0;
  if (dry(now_us)) return false;
  const double low = demand_per_s(now_us) * static_cast<double>(t.low_water_us) / 1e6;
  if (static_cast<double>(available) < std::max(1.0, low)) return true;
  return available > 0 && now_us + t.renew_us >= slice_.expires_us();
}

ShareCall Share::Begin(int64_t now_us, const ShareTuning& t, bool give_all) {
  ShareCall call;
  call.debt = slice_.debt();
  const bool idle = give_all || closed() || now_us - last_use_us_ > t.idle_us;
  if (idle) {
    call.back = slice_.GiveBack(0, now_us);
  } else if (!dry(now_us)) {
    const int64_t available = slice_.available(now_us);
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
  call.held = slice_.available(now_us);
  short_ = short_max_ = 0;
  in_flight_ = true;
  sent_us_ = now_us;
  sent_debt_ = call.debt;
  sent_ask_ = call.ask;
  return call;
}

void Share::Finish(const ShareReply& reply, int64_t now_us,
                   const ShareTuning& t) {
  in_flight_ = false;
  slice_.Add(SliceGrant{sat::SatAdd(std::max<int64_t>(0, reply.granted),
                                    sent_debt_),
                        sat::SatAdd(sent_us_, t.ttl_us)},
             now_us);
  remaining_ = reply.remaining;
  nodes_ = 1 + std::max<int64_t>(0, reply.other_nodes);
  if (reply.granted < sent_ask_) {
    const int64_t wait = kind_ == ShareKind::kBucket
                             ? std::max<int64_t>(reply.wait_us, 1000)
                             : t.dry_recheck_us;
    dry_until_us_ = sat::SatAdd(now_us, wait);
  } else {
    dry_until_us_ = 0;
  }
}

void Share::Fail() { in_flight_ = false; }

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
