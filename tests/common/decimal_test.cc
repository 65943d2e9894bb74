// WriteDecimal against std::to_chars: every power of ten and its
// neighbours, the extremes, and a million random values of every length.
#include <catch2/catch.hpp>
#include <charconv>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "common/decimal.h"

namespace brake {
namespace {

std::string_view Ours(int64_t v, char* buf) {
  return {buf, static_cast<size_t>(WriteDecimal(buf, v) - buf)};
}
std::string_view Theirs(int64_t v, char* buf) {
  return {buf, static_cast<size_t>(std::to_chars(buf, buf + 24, v).ptr - buf)};
}

TEST_CASE("decimal: written as std::to_chars writes it", "[decimal]") {
  char a[24], b[24];
  std::vector<int64_t> values = {0, 1, -1, 9, 10, 99, 100,
                                 std::numeric_limits<int64_t>::min(),
                                 std::numeric_limits<int64_t>::max()};
  for (int64_t p = 1; p <= std::numeric_limits<int64_t>::max() / 10; p *= 10) {
    for (int64_t v : {p - 1, p, p + 1, p * 10 - 1}) {
      values.push_back(v);
      values.push_back(-v);
    }
  }
  std::mt19937_64 rng(7);
  for (int i = 0; i < 1000000; ++i) {
    values.push_back(static_cast<int64_t>(rng() >> (rng() % 64)));
    values.push_back(-values.back());
  }
  size_t differ = 0;
  for (int64_t v : values) differ += Ours(v, a) != Theirs(v, b);
  CHECK(differ == 0);
  CHECK(Ours(-1234567890123, a) == "-1234567890123");
  CHECK(Ours(0, a) == "0");
}

TEST_CASE("decimal: an unsigned value of 20 digits", "[decimal]") {
  char a[24];
  const uint64_t most = std::numeric_limits<uint64_t>::max();
  CHECK(std::string_view(a, static_cast<size_t>(WriteDecimal(a, most) - a)) ==
        "18446744073709551615");
}

TEST_CASE("decimal: counting up in place spells each next number",
          "[decimal]") {
  std::string s = "run-1";
  for (int n = 2; n <= 100200; ++n) {
    IncrementDecimal(&s, 4);
    REQUIRE(s == "run-" + std::to_string(n));
  }
  std::string nines = "x99999999999999999";
  IncrementDecimal(&nines, 1);
  CHECK(nines == "x100000000000000000");
}

}  // namespace
}  // namespace brake
