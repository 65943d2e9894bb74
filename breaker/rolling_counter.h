// RollingCounter: two sums over a rolling time window, in ten buckets.
//
// The stat window of the slow-call and error rules (sums: calls, and slow or
// failed calls) and of the spend-velocity rule (tokens), as Sentinel's
// LeapArray: the window is split into kBuckets buckets of
// ceil(window / kBuckets) microseconds aligned on multiples of that width,
// and the sums cover the bucket holding `now` and the kBuckets - 1 before it.
// So an amount added at t counts for at least window - bucket and at most
// window: it stops counting once now reaches the start of t's bucket plus
// kBuckets buckets. Memory is fixed; sums saturate. A window <= 0 disables
// the counter (adds are dropped, sums are zero). Loop thread only.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace brake::breaker {

class RollingCounter {
 public:
  static constexpr int64_t kBuckets = 10;

  struct Sums {
    int64_t total = 0;
    int64_t hits = 0;
  };

  RollingCounter() = default;
  explicit RollingCounter(int64_t window_ms) { SetWindow(window_ms); }

  // Adds to the bucket holding `now_us` (amounts < 0 are taken as 0).
  void Add(int64_t now_us, int64_t total, int64_t hits);
  // The sums of the window ending at `now_us`.
  Sums Sum(int64_t now_us) const;
  void Clear();
  // True when nothing counted is in the window ending at now_us or could
  // come into one later (a bucket stamped after now_us).
  bool IdleAt(int64_t now_us) const;
  // Changes the window, keeping what was counted: each bucket moves into the
  // new bucket holding its start.
  void SetWindow(int64_t window_ms);
  int64_t bucket_us() const { return bucket_us_; }

  // Appends {bucket_us, n, then n x (start_us, total, hits), oldest first}.
  void AppendState(std::vector<int64_t>* out) const;
  // Reads what AppendState wrote at `*pos`, advancing it, and re-buckets it
  // into this counter's window. False (counter unchanged) when malformed.
  bool ParseState(const std::vector<int64_t>& in, size_t* pos);

 private:
  struct Bucket {
    bool used = false;
    int64_t epoch = 0;  // start / bucket_us_
    int64_t total = 0;
    int64_t hits = 0;
  };

  int64_t EpochOf(int64_t t_us) const;
  void AddToEpoch(int64_t epoch, int64_t total, int64_t hits);

  int64_t bucket_us_ = 0;  // 0: disabled
  std::array<Bucket, kBuckets> ring_{};
};

}  // namespace brake::breaker
