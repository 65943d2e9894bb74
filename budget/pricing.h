// Pricing: what tokens of a model cost, in integer nano-usd.
//
// Money is never summed in floating point: prices are nano-usd per million
// tokens and every cost is rounded up to a whole nano-usd, so a reservation
// never undershoots what its estimate can cost. Pure functions.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>

namespace brake {

struct Price {
  int64_t input_nano_per_mtok = 0;
  int64_t output_nano_per_mtok = 0;
};

// The model an acquire that names none is priced as, when it has a price:
// `prices["*"]`. Without one, an acquire under a usd limit must name a model.
inline constexpr std::string_view kUnnamedModel = "*";

// Prices by model, found by a view too: a commit names its lease's model as
// a view into the lease, and looking that up must not build a string.
struct TextHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const noexcept {
    return std::hash<std::string_view>{}(s);
  }
};
using PriceTable =
    std::unordered_map<std::string, Price, TextHash, std::equal_to<>>;

// The reservation for `tokens` tokens whose split is not yet known: all
// priced at the dearer of the two rates.
int64_t EstimateUsdNano(const Price& price, int64_t tokens);
// The cost of a known split.
int64_t CostUsdNano(const Price& price, int64_t input_tokens,
                    int64_t output_tokens);

}  // namespace brake
