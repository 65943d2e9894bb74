#include "breaker/rolling_counter.h"

#include <algorithm>
#include <tuple>

#include "common/sat_math.h"

namespace brake::breaker {

int64_t RollingCounter::EpochOf(int64_t t_us) const {
  return sat::FloorDiv(t_us, bucket_us_);
}

void RollingCounter::AddToEpoch(int64_t epoch, int64_t total, int64_t hits) {
  int64_t slot = epoch % kBuckets;
  if (slot < 0) slot += kBuckets;
  Bucket& b = ring_[static_cast<size_t>(slot)];
  // A slot holding another epoch holds an expired one (or, if the clock
  // stepped back, a future one): either way it is replaced, as in Sentinel.
  if (!b.used || b.epoch != epoch) b = Bucket{true, epoch, 0, 0};
  b.total = sat::SatAdd(b.total, std::max<int64_t>(total, 0));
  b.hits = sat::SatAdd(b.hits, std::max<int64_t>(hits, 0));
}

void RollingCounter::Add(int64_t now_us, int64_t total, int64_t hits) {
  if (bucket_us_ <= 0) return;
  AddToEpoch(EpochOf(now_us), total, hits);
}

RollingCounter::Sums RollingCounter::Sum(int64_t now_us) const {
  Sums s;
  if (bucket_us_ <= 0) return s;
  int64_t current = EpochOf(now_us);
  for (const Bucket& b : ring_) {
    if (!b.used || b.epoch > current) continue;
    if (sat::SatSub(current, b.epoch) >= kBuckets) continue;
    s.total = sat::SatAdd(s.total, b.total);
    s.hits = sat::SatAdd(s.hits, b.hits);
  }
  return s;
}

void RollingCounter::Clear() { ring_ = {}; }

bool RollingCounter::IdleAt(int64_t now_us) const {
  if (bucket_us_ <= 0) return true;
  const int64_t current = EpochOf(now_us);
  for (const Bucket& b : ring_) {
    if (b.used && (b.total != 0 || b.hits != 0) &&
        sat::SatSub(current, b.epoch) < kBuckets) {
      return false;
    }
  }
  return true;
}

void RollingCounter::SetWindow(int64_t window_ms) {
  int64_t bucket_us = 0;
  if (window_ms > 0) {
    int64_t window_us = sat::MsToUs(window_ms);
    bucket_us = std::max<int64_t>(
        1, window_us / kBuckets + (window_us % kBuckets != 0 ? 1 : 0));
  }
  if (bucket_us == bucket_us_) return;
  std::vector<int64_t> saved;
  AppendState(&saved);
  bucket_us_ = bucket_us;
  ring_ = {};
  size_t pos = 0;
  // Cannot fail: it reads what AppendState just wrote.
  (void)ParseState(saved, &pos);
}

void RollingCounter::AppendState(std::vector<int64_t>* out) const {
  std::vector<Bucket> used;
  for (const Bucket& b : ring_) {
    if (b.used) used.push_back(b);
  }
  std::sort(used.begin(), used.end(),
            [](const Bucket& a, const Bucket& b) { return a.epoch < b.epoch; });
  out->push_back(bucket_us_);
  out->push_back(static_cast<int64_t>(used.size()));
  for (const Bucket& b : used) {
    out->push_back(sat::Clamp128(static_cast<__int128>(b.epoch) * bucket_us_));
    out->push_back(b.total);
    out->push_back(b.hits);
  }
}

bool RollingCounter::ParseState(const std::vector<int64_t>& in, size_t* pos) {
  size_t p = *pos;
  if (in.size() - p < 2) return false;
  int64_t saved_bucket_us = in[p++];
  int64_t n = in[p++];
  if (saved_bucket_us < 0 || n < 0 || n > kBuckets) return false;
  if (saved_bucket_us == 0 && n != 0) return false;
  if (static_cast<uint64_t>(n) * 3 > in.size() - p) return false;
  std::vector<std::tuple<int64_t, int64_t, int64_t>> entries;
  for (int64_t i = 0; i < n; ++i) {
    int64_t start = in[p], total = in[p + 1], hits = in[p + 2];
    p += 3;
    if (total < 0 || hits < 0) return false;
    if (!entries.empty() && start <= std::get<0>(entries.back())) return false;
    entries.emplace_back(start, total, hits);
  }
  *pos = p;
  ring_ = {};
  if (bucket_us_ <= 0) return true;
  // Oldest first, so that where two land in one slot the newer one wins.
  for (const auto& [start, total, hits] : entries) {
    AddToEpoch(EpochOf(start), total, hits);
  }
  return true;
}

}  // namespace brake::breaker
