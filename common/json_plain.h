// IsPlainJsonText: whether a string can go into a JSON string literal as it
// is, and was one as it is: no byte below 0x20, no '"', no '\\', and only
// ASCII (so it is valid UTF-8 without looking further). Eight bytes at a
// time; the encoders and the request scanner copy such strings whole and
// leave the rest to their byte-by-byte paths.
#pragma once

#include <cstdint>
#include <cstring>
#include <string_view>

namespace brake {
namespace json_plain_internal {

constexpr uint64_t kOnes = 0x0101010101010101ull;
constexpr uint64_t kHighs = 0x8080808080808080ull;

// Nonzero when some byte of `w` is below 0x20, '"', '\\' or >= 0x80.
inline uint64_t Special(uint64_t w) {
  auto zero_byte = [](uint64_t v) { return (v - kOnes) & ~v & kHighs; };
  const uint64_t below_space = (w - kOnes * 0x20) & ~w & kHighs;
  return below_space | zero_byte(w ^ (kOnes * '"')) |
         zero_byte(w ^ (kOnes * '\\')) | (w & kHighs);
}

}  // namespace json_plain_internal

inline bool IsPlainJsonText(std::string_view s) {
  using json_plain_internal::Special;
  const char* p = s.data();
  size_t n = s.size();
  for (; n >= 8; p += 8, n -= 8) {
    uint64_t w;
    std::memcpy(&w, p, 8);
    if (Special(w) != 0) return false;
  }
  uint64_t w = json_plain_internal::kOnes * 'a';  // plain padding
  std::memcpy(&w, p, n);
  return Special(w) == 0;
}

}  // namespace brake
