#include "common/sat_math.h"

#include <catch2/catch.hpp>
#include <cstdint>
#include <random>
#include <vector>

namespace brake::sat {
namespace {

// Floor and ceiling by the definition, in 128 bits only (no 64-bit
// shortcut), to check the shortcut against.
__int128 RefFloor(__int128 n, __int128 d) {
  __int128 q = n / d;  // truncates towards zero
  if (q * d != n && n < 0) --q;
  return q;
}
__int128 RefCeil(__int128 n, __int128 d) {
  __int128 q = n / d;
  if (q * d != n && n > 0) ++q;
  return q;
}

TEST_CASE("int math: saturating add, subtract and multiply agree with the "
          "clamped 128-bit result",
          "[sat_math]") {
  std::vector<int64_t> vs = {0, 1, -1, 2, -2, 1'000, -1'000, kMax, kMax - 1,
                             kMin, kMin + 1, kMax / 2, kMin / 2,
                             3'037'000'500, -3'037'000'500};  // ~sqrt(kMax)
  std::mt19937_64 rng(7);
  for (int i = 0; i < 300; ++i) {
    vs.push_back(static_cast<int64_t>(rng()) >> (rng() % 63));
  }
  for (int64_t a : vs) {
    for (int64_t b : vs) {
      CAPTURE(a, b);
      REQUIRE(SatAdd(a, b) == Clamp128(static_cast<__int128>(a) + b));
      REQUIRE(SatSub(a, b) == Clamp128(static_cast<__int128>(a) - b));
      REQUIRE(SatMul(a, b) == Clamp128(static_cast<__int128>(a) * b));
    }
  }
  static_assert(SatAdd(kMax, 1) == kMax && SatSub(kMin, 1) == kMin &&
                SatMul(kMin, -1) == kMax && MsToUs(kMax) == kMax);
}

TEST_CASE("int math: floor and ceiling division agree with the definition",
          "[sat_math]") {
  std::vector<__int128> ns = {0, 1, -1, 2, 7, -7, 999'999, 1'000'000,
                              1'000'001, kMax, kMax - 1, kMin, kMin + 1};
  ns.push_back(static_cast<__int128>(kMax) + 1);  // just past 64 bits
  ns.push_back(static_cast<__int128>(kMax) * 3);
  ns.push_back(-static_cast<__int128>(kMax) * 3);
  std::vector<__int128> ds = {1, 2, 3, 7, 1'000, 1'000'000, kMax - 1, kMax};
  ds.push_back(static_cast<__int128>(kMax) + 5);
  std::mt19937_64 rng(42);
  for (int i = 0; i < 2000; ++i) {
    ns.push_back(static_cast<int64_t>(rng()) >> (rng() % 63));
    ds.push_back(static_cast<int64_t>((rng() >> (rng() % 63)) | 1) & kMax);
  }
  for (__int128 n : ns) {
    for (size_t j = 0; j < ds.size(); j += (j < 9 ? 1 : 97)) {
      __int128 d = ds[j];
      if (d <= 0) continue;
      INFO("n=" << static_cast<double>(n) << " d=" << static_cast<double>(d));
      REQUIRE(FloorDiv128(n, d) == RefFloor(n, d));
      REQUIRE(CeilDiv128(n, d) == RefCeil(n, d));
    }
  }
  CHECK(MulDivCeil(3, 1'000'000, 7) == 428'572);
  CHECK(MulDivFloor(3, 1'000'000, 7) == 428'571);
  CHECK(MulDivCeil(kMax, kMax, 1) == kMax);  // saturates
  CHECK(MulDivFloor(kMin, kMax, 1) == kMin);
}

}  // namespace
}  // namespace brake::sat
