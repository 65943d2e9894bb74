// IsPlainJsonText agrees with a byte-by-byte reading on every length and
// every position of a special byte.
#include <catch2/catch.hpp>
#include <random>
#include <string>

#include "common/json_plain.h"

namespace brake {
namespace {

bool PlainByBytes(std::string_view s) {
  for (char ch : s) {
    unsigned char c = static_cast<unsigned char>(ch);
    if (c < 0x20 || c == '"' || c == '\\' || c >= 0x80) return false;
  }
  return true;
}

TEST_CASE("json plain: every special byte at every position",
          "[json_plain]") {
  for (size_t len = 0; len <= 40; ++len) {
    std::string s(len, 'x');
    REQUIRE(IsPlainJsonText(s));
    for (size_t at = 0; at < len; ++at) {
      for (int c = 0; c < 256; ++c) {
        s[at] = static_cast<char>(c);
        INFO("length " << len << " byte " << c << " at " << at);
        REQUIRE(IsPlainJsonText(s) == PlainByBytes(s));
      }
      s[at] = 'x';
    }
  }
}

TEST_CASE("json plain: the first non-plain byte, from every start",
          "[json_plain]") {
  for (size_t len = 0; len <= 40; ++len) {
    std::string s(len, 'x');
    for (size_t at = 0; at < len; ++at) {
      for (int c : {0, 0x1f, 0x22, 0x5c, 0x7f, 0x80, 0xff, 0x20}) {
        s[at] = static_cast<char>(c);
        for (size_t from = 0; from <= len; ++from) {
          size_t want = from;
          while (want < len && PlainByBytes(std::string_view(&s[want], 1))) {
            ++want;
          }
          INFO("length " << len << " byte " << c << " at " << at << " from "
                         << from);
          REQUIRE(FirstNonPlainByte(s, from) == want);
        }
      }
      s[at] = 'x';
    }
  }
}

TEST_CASE("json plain: random strings agree with the byte reading",
          "[json_plain]") {
  std::mt19937 rng(11);
  // Mostly printable, with a few bytes near the edges of each class.
  const std::string kBytes = std::string("azAZ09 !#[]{}:,~\x1f\x7f") + '\0' +
                             "\"\\\x80\xff\x21\x5b\x5d";
  for (int i = 0; i < 50000; ++i) {
    std::string s(std::uniform_int_distribution<int>(0, 30)(rng), ' ');
    for (char& c : s) {
      c = rng() % 8 != 0 ? static_cast<char>('a' + rng() % 26)
                         : kBytes[rng() % kBytes.size()];
    }
    REQUIRE(IsPlainJsonText(s) == PlainByBytes(s));
  }
}

}  // namespace
}  // namespace brake
