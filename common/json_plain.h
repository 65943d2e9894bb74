// IsPlainJsonText: whether a string can go into a JSON string literal as it
// is, and was one as it is: no byte below 0x20, no '"', no '\\', and only
// ASCII (so it is valid UTF-8 without looking further). Eight bytes at a
// time, by fixed-size loads only; the encoders and the request scanner
// copy such strings whole and leave the rest to their byte-by-byte paths.
#pragma once

#include <cstddef>
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
  auto load = [](const char* at, auto word) {
    std::memcpy(&word, at, sizeof word);
    return static_cast<uint64_t>(word);
  };
  const char* p = s.data();
  const size_t size = s.size();
  if (size >= 8) {
    for (size_t n = size; n > 8; p += 8, n -= 8) {
      if (Special(load(p, uint64_t{})) != 0) return false;
    }
    // The last eight, overlapping: fixed-size loads, where copying the
    // tail into a padded word was a variable-length copy (`rep movsb`)
    // and a stalled load.
    return Special(load(s.data() + size - 8, uint64_t{})) == 0;
  }
  uint64_t w = json_plain_internal::kOnes * 'a';  // plain padding
  if (size >= 4) {  // the first four and the last four, overlapping
    w = load(p, uint32_t{}) << 32 | load(p + size - 4, uint32_t{});
  } else if (size > 0) {  // every byte of 1 to 3, some twice
    w = (w & ~uint64_t{0xffffff}) | load(p, uint8_t{}) |
        load(p + size / 2, uint8_t{}) << 8 |
        load(p + size - 1, uint8_t{}) << 16;
  }
  return Special(w) == 0;
}

// The first byte of s[from..] that IsPlainJsonText would refuse, or
// s.size() when none: eight bytes at a time, then byte by byte (the request
// scanner finds a string's end and checks its text in this one pass).
[[gnu::always_inline]] inline size_t FirstNonPlainByte(std::string_view s,
                                                       size_t from) {
  size_t i = from;
  for (; i + 8 <= s.size(); i += 8) {
    uint64_t w;
    std::memcpy(&w, s.data() + i, sizeof w);
    if (const uint64_t hit = json_plain_internal::Special(w)) {
      return i + static_cast<size_t>(__builtin_ctzll(hit)) / 8;
    }
  }
  for (; i < s.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (c == '"' || c == '\\' || c < 0x20 || c >= 0x80) return i;
  }
  return i;
}

}  // namespace brake
