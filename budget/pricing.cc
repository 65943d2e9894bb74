#include "budget/pricing.h"

#include <algorithm>
#include <limits>

namespace brake {
namespace {

constexpr int64_t kMaxUsdNano = std::numeric_limits<int64_t>::max();

int64_t Clamp128(__int128 v) {
  if (v > kMaxUsdNano) return kMaxUsdNano;
  if (v < -kMaxUsdNano) return -kMaxUsdNano;
  return static_cast<int64_t>(v);
}

// ceil(tokens * nano_per_mtok / 1e6) for non-negative inputs.
__int128 Cost(int64_t tokens, int64_t nano_per_mtok) {
  __int128 p = static_cast<__int128>(tokens) * nano_per_mtok;
  return (p + 999'999) / 1'000'000;
}

}  // namespace

int64_t EstimateUsdNano(const Price& price, int64_t tokens) {
  return Clamp128(Cost(
      tokens, std::max(price.input_nano_per_mtok, price.output_nano_per_mtok)));
}

int64_t CostUsdNano(const Price& price, int64_t input_tokens,
                    int64_t output_tokens) {
  return Clamp128(Cost(input_tokens, price.input_nano_per_mtok) +
                  Cost(output_tokens, price.output_nano_per_mtok));
}

}  // namespace brake
