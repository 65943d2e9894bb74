#include "budget/limiter.h"

namespace brake {

std::unique_ptr<Limiter> MakeLimiter(const LimitSpec&, int64_t) {
  return nullptr;  // placeholder until the algorithms land
}

}  // namespace brake
