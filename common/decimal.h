// WriteDecimal: an integer in decimal, written at `p` (20 bytes of room at
// most), two digits per step from a table. The reply writers call it for
// every id, count and lease number; std::to_chars found the length by a
// loop of divisions first and cost about twice as much.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>

namespace brake {
namespace decimal_internal {

inline constexpr char kPairs[] =
    "00010203040506070809101112131415161718192021222324252627282930313233343536"
    "37383940414243444546474849505152535455565758596061626364656667686970717273"
    "7475767778798081828384858687888990919293949596979899";

inline constexpr uint64_t kPow10[20] = {1ull,
                                        10ull,
                                        100ull,
                                        1000ull,
                                        10000ull,
                                        100000ull,
                                        1000000ull,
                                        10000000ull,
                                        100000000ull,
                                        1000000000ull,
                                        10000000000ull,
                                        100000000000ull,
                                        1000000000000ull,
                                        10000000000000ull,
                                        100000000000000ull,
                                        1000000000000000ull,
                                        10000000000000000ull,
                                        100000000000000000ull,
                                        1000000000000000000ull,
                                        10000000000000000000ull};

// How many digits `u` has (1 for 0): its bit length times log10(2),
// corrected by one compare.
inline int Digits(uint64_t u) {
  const int t = (64 - __builtin_clzll(u | 1)) * 1233 >> 12;
  return t + 1 - ((u | 1) < kPow10[t]);
}

}  // namespace decimal_internal

// Writes `u` at `p`; returns the end.
inline char* WriteDecimal(char* p, uint64_t u) {
  char* const end = p + decimal_internal::Digits(u);
  char* q = end;
  while (u >= 100) {
    q -= 2;
    std::memcpy(q, decimal_internal::kPairs + (u % 100) * 2, 2);
    u /= 100;
  }
  if (u >= 10) {
    std::memcpy(q - 2, decimal_internal::kPairs + u * 2, 2);
  } else {
    q[-1] = static_cast<char>('0' + u);
  }
  return end;
}

// The same for a signed value ('-' first when negative; 20 bytes at most).
inline char* WriteDecimal(char* p, int64_t v) {
  if (v >= 0) return WriteDecimal(p, static_cast<uint64_t>(v));
  *p = '-';
  return WriteDecimal(p + 1, 0 - static_cast<uint64_t>(v));
}

// Adds one to the decimal number that `s` spells from `first` on (digits
// only, at least one), in place: the next number for a digit or two of work.
inline void IncrementDecimal(std::string* s, size_t first) {
  for (size_t i = s->size(); i > first;) {
    char& c = (*s)[--i];
    if (c != '9') {
      ++c;
      return;
    }
    c = '0';
  }
  s->insert(first, 1, '1');
}

}  // namespace brake
