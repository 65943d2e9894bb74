// Saturating integer helpers for the breakers.
//
// Breakers do their time and count arithmetic in int64 (microseconds, calls,
// tokens); every result here saturates at the int64 bounds instead of
// overflowing. breaker/ may not depend on budget/, so this is its own small
// copy. Pure functions, any thread.
#pragma once

#include <cstdint>
#include <limits>

namespace brake::breaker::sat {

inline constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
inline constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
inline constexpr int64_t kUsPerMs = 1000;

constexpr int64_t Clamp128(__int128 v) {
  if (v > static_cast<__int128>(kMax)) return kMax;
  if (v < static_cast<__int128>(kMin)) return kMin;
  return static_cast<int64_t>(v);
}

constexpr int64_t Add(int64_t a, int64_t b) {
  return Clamp128(static_cast<__int128>(a) + b);
}

constexpr int64_t Sub(int64_t a, int64_t b) {
  return Clamp128(static_cast<__int128>(a) - b);
}

constexpr int64_t MsToUs(int64_t ms) {
  return Clamp128(static_cast<__int128>(ms) * kUsPerMs);
}

// Floor division (towards minus infinity); `d` > 0.
constexpr int64_t FloorDiv(int64_t n, int64_t d) {
  int64_t q = n / d;
  if ((n % d != 0) && (n < 0)) --q;
  return q;
}

// The time until `at_us`, never negative.
constexpr int64_t Until(int64_t at_us, int64_t now_us) {
  int64_t d = Sub(at_us, now_us);
  return d > 0 ? d : 0;
}

}  // namespace brake::breaker::sat
