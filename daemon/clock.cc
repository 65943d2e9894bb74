#include "daemon/clock.h"

#include <time.h>
#include <uv.h>

namespace brake {

Clock::Clock() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  wall_anchor_us_ = static_cast<int64_t>(ts.tv_sec) * 1'000'000 +
                    ts.tv_nsec / 1000;
  mono_anchor_ns_ = uv_hrtime();
}

int64_t Clock::NowUs() const {
  return wall_anchor_us_ +
         static_cast<int64_t>((uv_hrtime() - mono_anchor_ns_) / 1000);
}

}  // namespace brake
