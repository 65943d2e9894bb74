#include "storage/int_list.h"

#include <catch2/catch.hpp>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

namespace brake::storage {
namespace {

TEST_CASE("IntList round-trips vectors exactly", "[storage]") {
  const std::vector<std::vector<int64_t>> cases = {
      {},
      {0},
      {-1},
      {1, 2, 3},
      {std::numeric_limits<int64_t>::min(), 0,
       std::numeric_limits<int64_t>::max()},
      {1700000000000, -5, 42},
  };
  for (const auto& values : cases) {
    std::string text = "stale";
    EncodeIntList(values, &text);
    auto parsed = ParseIntList(text);
    REQUIRE(parsed.has_value());
    CHECK(*parsed == values);
  }
  std::string text;
  EncodeIntList(std::vector<int64_t>{3, -1, 1700000000}, &text);
  CHECK(text == "3,-1,1700000000");
}

TEST_CASE("IntList parsing is strict", "[storage]") {
  const char* const bad[] = {
      ",",
      "1,",
      ",1",
      "1,,2",
      " 1",
      "1 ",
      "1, 2",
      "+1",
      "--1",
      "1.5",
      "abc",
      "1a",
      "0x10",
      "-",
      "9223372036854775808",   // INT64_MAX + 1
      "-9223372036854775809",  // INT64_MIN - 1
      "99999999999999999999999",
  };
  for (const char* text : bad) {
    INFO("text: '" << text << "'");
    CHECK_FALSE(ParseIntList(text).has_value());
  }
}

}  // namespace
}  // namespace brake::storage
