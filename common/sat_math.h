// Saturating integer arithmetic: the limiters', the breakers' and the
// accounting's.
//
// brake does its time and amount arithmetic in int64 (microseconds, resource
// units, nano-usd). Products such as `amount * period_us` can exceed int64, so
// they go through __int128 here, and every result saturates at the int64
// bounds instead of overflowing. Pure functions, callable from any thread.
#pragma once

#include <cstdint>
#include <limits>

namespace brake::sat {

inline constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
inline constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
inline constexpr int64_t kUsPerMs = 1000;

// Clamps a 128-bit value into int64.
constexpr int64_t Clamp128(__int128 v) {
  if (v > static_cast<__int128>(kMax)) return kMax;
  if (v < static_cast<__int128>(kMin)) return kMin;
  return static_cast<int64_t>(v);
}

// The overflow builtins: a flag test, where a 128-bit sum and its clamp
// took two compares of 128-bit values (these run several times per limit
// per decision).
constexpr int64_t SatAdd(int64_t a, int64_t b) {
  int64_t r = 0;
  if (__builtin_add_overflow(a, b, &r)) return b > 0 ? kMax : kMin;
  return r;
}

constexpr int64_t SatSub(int64_t a, int64_t b) {
  int64_t r = 0;
  if (__builtin_sub_overflow(a, b, &r)) return b < 0 ? kMax : kMin;
  return r;
}

constexpr int64_t SatMul(int64_t a, int64_t b) {
  int64_t r = 0;
  if (__builtin_mul_overflow(a, b, &r)) return (a < 0) != (b < 0) ? kMin : kMax;
  return r;
}

// Milliseconds to microseconds, saturating.
constexpr int64_t MsToUs(int64_t ms) { return SatMul(ms, kUsPerMs); }

// Floor division (rounds towards minus infinity); `d` > 0.
constexpr __int128 FloorDiv128(__int128 n, __int128 d) {
  if (n >= 0 && n <= kMax && d <= kMax) {
    // The usual case, in one 64-bit division instead of a 128-bit call.
    return static_cast<int64_t>(n) / static_cast<int64_t>(d);
  }
  __int128 q = n / d;
  if ((n % d != 0) && (n < 0)) --q;
  return q;
}

// Ceiling division; `d` > 0.
constexpr __int128 CeilDiv128(__int128 n, __int128 d) {
  if (n >= 0 && n <= kMax && d <= kMax) {  // as in FloorDiv128
    const int64_t q = static_cast<int64_t>(n) / static_cast<int64_t>(d);
    return q + (q * static_cast<int64_t>(d) != static_cast<int64_t>(n));
  }
  return -FloorDiv128(-n, d);
}

constexpr int64_t FloorDiv(int64_t n, int64_t d) {
  return Clamp128(FloorDiv128(n, d));
}

// ceil(a * b / c) without intermediate overflow; `c` > 0. Saturates.
constexpr int64_t MulDivCeil(int64_t a, int64_t b, int64_t c) {
  return Clamp128(CeilDiv128(static_cast<__int128>(a) * b, c));
}

// floor(a * b / c) without intermediate overflow; `c` > 0. Saturates.
constexpr int64_t MulDivFloor(int64_t a, int64_t b, int64_t c) {
  return Clamp128(FloorDiv128(static_cast<__int128>(a) * b, c));
}

// The time until `at_us`, never negative.
constexpr int64_t Until(int64_t at_us, int64_t now_us) {
  int64_t d = SatSub(at_us, now_us);
  return d > 0 ? d : 0;
}

}  // namespace brake::sat
