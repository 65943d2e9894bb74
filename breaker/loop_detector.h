// LoopDetector: the memory of the loop rule, the recent times of each call
// fingerprint hash in one task.
//
// Record() notes one sighting and answers how many sightings of that hash lie
// within the window ending now, this one included. A sighting at t counts
// while now < t + window. Only the last `repeats` sightings of a hash can
// matter, so at most that many are kept per hash; distinct hashes and total
// sightings are bounded too (kMaxFingerprints, kMaxEntries): over a bound,
// expired sightings are dropped first, then the hashes seen least recently.
// The rule's parameters are arguments, so a reconfigured rule just applies.
// Loop thread only (owned by a Breaker).
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <unordered_map>
#include <vector>

namespace brake::breaker {

class LoopDetector {
 public:
  static constexpr size_t kMaxFingerprints = 4096;
  static constexpr size_t kMaxEntries = 16384;

  // Records `hash` at `now_us` and returns its sightings within the window
  // of `window_us` ending at `now_us`, including this one, at most `repeats`
  // (>= 1; a smaller value is taken as 1). Sightings arrive in time order;
  // one older than the hash's newest is recorded as at the newest.
  int64_t Record(uint64_t hash, int64_t now_us, int64_t repeats,
                 int64_t window_us);
  // Sightings of `hash` within the window ending at `now_us` (no change).
  int64_t Count(uint64_t hash, int64_t now_us, int64_t window_us) const;
  void Clear();
  // True when no sighting counts within a window of `window_us` ending at
  // now_us or later.
  bool IdleAt(int64_t now_us, int64_t window_us) const;

  size_t distinct() const { return seen_.size(); }
  size_t entries() const { return entries_; }

  // Appends {n, then per hash: hash (as int64), k, t_1..t_k oldest first}.
  void AppendState(std::vector<int64_t>* out) const;
  // Reads what AppendState wrote from `in` at `*pos`, advancing it. False
  // (this detector unchanged) when malformed or over the bounds.
  bool ParseState(const std::vector<int64_t>& in, size_t* pos);

 private:
  // Drops expired sightings; then, if still near a bound, whole hashes,
  // least recently seen first, down to 7/8 of the bounds.
  void Compact(int64_t now_us, int64_t window_us);

  std::unordered_map<uint64_t, std::deque<int64_t>> seen_;
  size_t entries_ = 0;
};

}  // namespace brake::breaker
