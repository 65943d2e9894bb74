// Clock: the daemon's one time source, in microseconds.
//
// Monotonic within a run (rates never jump with NTP) but anchored to wall
// time at start, so values can be persisted and compared across restarts:
// a token bucket restored after a restart refills only for the time that
// really passed. Sampled once per request. Loop thread only.
#pragma once

#include <cstdint>

namespace brake {

class Clock {
 public:
  Clock();
  int64_t NowUs() const;

 private:
  int64_t wall_anchor_us_;
  uint64_t mono_anchor_ns_;
};

}  // namespace brake
