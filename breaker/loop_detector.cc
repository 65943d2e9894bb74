#include "breaker/loop_detector.h"

#include <algorithm>
#include <utility>

#include "common/sat_math.h"

namespace brake::breaker {
namespace {

bool Expired(int64_t t_us, int64_t now_us, int64_t window_us) {
  return t_us <= sat::SatSub(now_us, window_us);
}

}  // namespace

int64_t LoopDetector::Record(uint64_t hash, int64_t now_us, int64_t repeats,
                             int64_t window_us) {
  if (repeats < 1) repeats = 1;
  auto it = seen_.find(hash);
  if (it == seen_.end()) {
    if (seen_.size() >= kMaxFingerprints || entries_ >= kMaxEntries) {
      Compact(now_us, window_us);
    }
    it = seen_.emplace(hash, std::deque<int64_t>()).first;
  } else if (entries_ >= kMaxEntries) {
    Compact(now_us, window_us);
    it = seen_.try_emplace(hash).first;
  }
  std::deque<int64_t>& times = it->second;
  while (!times.empty() && Expired(times.front(), now_us, window_us)) {
    times.pop_front();
    --entries_;
  }
  // Keeping sightings in order keeps the front the oldest, so expiry stays a
  // pop from the front even if the clock stepped back.
  int64_t t = times.empty() ? now_us : std::max(now_us, times.back());
  times.push_back(t);
  ++entries_;
  while (static_cast<int64_t>(times.size()) > repeats) {
    times.pop_front();
    --entries_;
  }
  return static_cast<int64_t>(times.size());
}

int64_t LoopDetector::Count(uint64_t hash, int64_t now_us,
                            int64_t window_us) const {
  auto it = seen_.find(hash);
  if (it == seen_.end()) return 0;
  int64_t n = 0;
  for (int64_t t : it->second) {
    if (!Expired(t, now_us, window_us)) ++n;
  }
  return n;
}

void LoopDetector::Clear() {
  seen_.clear();
  entries_ = 0;
}

bool LoopDetector::IdleAt(int64_t now_us, int64_t window_us) const {
  for (const auto& [hash, times] : seen_) {
    // A sighting at t counts while now < t + window.
    if (!times.empty() && now_us < sat::SatAdd(times.back(), window_us)) {
      return false;
    }
  }
  return true;
}

void LoopDetector::Compact(int64_t now_us, int64_t window_us) {
  for (auto it = seen_.begin(); it != seen_.end();) {
    std::deque<int64_t>& times = it->second;
    while (!times.empty() && Expired(times.front(), now_us, window_us)) {
      times.pop_front();
      --entries_;
    }
    it = times.empty() ? seen_.erase(it) : std::next(it);
  }
  const size_t keep_hashes = kMaxFingerprints / 8 * 7;
  const size_t keep_entries = kMaxEntries / 8 * 7;
  if (seen_.size() <= keep_hashes && entries_ <= keep_entries) return;
  // Evicting in bulk, down to 7/8, keeps this O(n log n) pass rare.
  std::vector<std::pair<int64_t, uint64_t>> by_newest;
  by_newest.reserve(seen_.size());
  for (const auto& [hash, times] : seen_) {
    by_newest.emplace_back(times.back(), hash);
  }
  std::sort(by_newest.begin(), by_newest.end());
  for (const auto& [newest, hash] : by_newest) {
    if (seen_.size() <= keep_hashes && entries_ <= keep_entries) break;
    auto it = seen_.find(hash);
    entries_ -= it->second.size();
    seen_.erase(it);
  }
}

void LoopDetector::AppendState(std::vector<int64_t>* out) const {
  // Sorted by hash so that equal detectors save equal lists.
  std::vector<uint64_t> hashes;
  hashes.reserve(seen_.size());
  for (const auto& entry : seen_) hashes.push_back(entry.first);
  std::sort(hashes.begin(), hashes.end());
  out->push_back(static_cast<int64_t>(hashes.size()));
  for (uint64_t hash : hashes) {
    const std::deque<int64_t>& times = seen_.at(hash);
    out->push_back(static_cast<int64_t>(hash));
    out->push_back(static_cast<int64_t>(times.size()));
    out->insert(out->end(), times.begin(), times.end());
  }
}

bool LoopDetector::ParseState(const std::vector<int64_t>& in, size_t* pos) {
  size_t p = *pos;
  auto remaining = [&] { return in.size() - p; };
  if (remaining() < 1) return false;
  int64_t n = in[p++];
  if (n < 0 || n > static_cast<int64_t>(kMaxFingerprints)) return false;
  std::unordered_map<uint64_t, std::deque<int64_t>> seen;
  size_t entries = 0;
  for (int64_t i = 0; i < n; ++i) {
    if (remaining() < 2) return false;
    uint64_t hash = static_cast<uint64_t>(in[p++]);
    int64_t k = in[p++];
    if (k < 1 || static_cast<uint64_t>(k) > remaining()) return false;
    entries += static_cast<size_t>(k);
    if (entries > kMaxEntries) return false;
    std::deque<int64_t> times(in.begin() + static_cast<ptrdiff_t>(p),
                              in.begin() + static_cast<ptrdiff_t>(p + k));
    p += static_cast<size_t>(k);
    if (!std::is_sorted(times.begin(), times.end())) return false;
    if (!seen.emplace(hash, std::move(times)).second) return false;
  }
  seen_ = std::move(seen);
  entries_ = entries;
  *pos = p;
  return true;
}

}  // namespace brake::breaker
