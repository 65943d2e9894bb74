#include "cluster/slice.h"

#include <algorithm>
#include <cmath>

#include "common/sat_math.h"

namespace brake::cluster {

int64_t SliceToAsk(int64_t remaining, int nodes, double demand_per_s,
                   int64_t horizon_ms, int64_t min_units) {
  const int64_t share = FairShare(remaining, nodes);
  if (share == 0) return 0;
  double wanted = demand_per_s * static_cast<double>(horizon_ms) / 1000.0;
  if (!std::isfinite(wanted) || wanted < 0) wanted = 0;
  // Clamped before the conversion: a double past int64 is undefined.
  const int64_t demand =
      wanted >= static_cast<double>(sat::kMax)
          ? sat::kMax
          : static_cast<int64_t>(std::ceil(wanted));
  return std::min(share, std::max(demand, min_units));
}

int64_t FairShare(int64_t remaining, int nodes) {
  if (remaining <= 0) return 0;
  return std::max<int64_t>(1, remaining / (2 * std::max(nodes, 1)));
}

int64_t Slice::available() const {
  return std::max<int64_t>(0, held_ - used_);
}

bool Slice::Take(int64_t units) {
  if (units < 0 || units > available()) return false;
  used_ += units;
  return true;
}

void Slice::Settle(int64_t delta) {
  used_ = std::max<int64_t>(0, sat::SatAdd(used_, delta));
}

void Slice::Add(const SliceGrant& grant) {
  held_ = sat::SatAdd(held_, std::max<int64_t>(0, grant.units));
  expires_us_ = grant.expires_us;
}

void Slice::Extend(int64_t units) {
  held_ = sat::SatAdd(held_, std::max<int64_t>(0, units));
}

bool Slice::NeedsRefill(int64_t now_us, int64_t low_water,
                        int64_t renew_us) const {
  return available() < low_water ||
         sat::SatAdd(now_us, renew_us) >= expires_us_;
}

int64_t Slice::GiveBack(int64_t keep) {
  const int64_t back = available() - std::max<int64_t>(0, keep);
  if (back <= 0) return 0;
  held_ -= back;
  return back;
}

int64_t Slice::ReportSettled(int64_t settled) {
  const int64_t moved = std::clamp<int64_t>(settled, 0, used_);
  used_ -= moved;
  held_ = std::max<int64_t>(0, held_ - moved);
  return moved;
}

}  // namespace brake::cluster
