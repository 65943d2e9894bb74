// Pricing: what tokens of a model cost, in integer nano-usd.
//
// Money is never summed in floating point: prices are nano-usd per million
// tokens and every cost is rounded up to a whole nano-usd, so a reservation
// never undershoots what its estimate can cost. Pure functions.
#pragma once

#include <cstdint>

namespace brake {

struct Price {
  int64_t input_nano_per_mtok = 0;
  int64_t output_nano_per_mtok = 0;
};

// The reservation for `tokens` tokens whose split is not yet known: all
// priced at the dearer of the two rates.
int64_t EstimateUsdNano(const Price& price, int64_t tokens);
// The cost of a known split.
int64_t CostUsdNano(const Price& price, int64_t input_tokens,
                    int64_t output_tokens);

}  // namespace brake
