#include "budget/limiter.h"

#include "budget/concurrency.h"
#include "budget/fixed_window.h"
#include "budget/leaky_bucket.h"
#include "budget/quota.h"
#include "budget/sliding_log.h"
#include "budget/token_bucket.h"
#include "budget/warmup.h"

namespace brake {

std::unique_ptr<Limiter> MakeLimiter(SpecRef spec, int64_t now_us) {
  switch (spec.ptr->algorithm) {
    case Algorithm::kTokenBucket:
      return std::make_unique<TokenBucket>(std::move(spec), now_us);
    case Algorithm::kWarmup:
      return std::make_unique<Warmup>(std::move(spec), now_us);
    case Algorithm::kSlidingLog:
      return std::make_unique<SlidingLog>(std::move(spec), now_us);
    case Algorithm::kFixedWindow:
      return std::make_unique<FixedWindow>(std::move(spec), now_us);
    case Algorithm::kLeakyBucket:
      return std::make_unique<LeakyBucket>(std::move(spec), now_us);
    case Algorithm::kQuota:
      return std::make_unique<Quota>(std::move(spec), now_us);
    case Algorithm::kConcurrency:
      return std::make_unique<Concurrency>(std::move(spec), now_us);
  }
  return nullptr;  // not a valid Algorithm value
}

}  // namespace brake
