// Names: which ValidateName accepts, what it says of the rest, and
// IsValidName (the fast path's check) agreeing with it everywhere.
#include <catch2/catch.hpp>
#include <random>
#include <string>

#include "daemon/json_fields.h"

namespace brake {
namespace {

std::string Why(std::string_view name) {
  Status s = ValidateName(name, "task");
  return s.ok() ? "ok" : s.message();
}

TEST_CASE("names: accepted and refused with the field named", "[names]") {
  CHECK(Why("t1") == "ok");
  CHECK(Why("élan vital €") == "ok");  // UTF-8 beyond ASCII
  CHECK(Why(std::string(kMaxNameBytes, 'a')) == "ok");
  CHECK(Why("") == "task: must not be empty");
  CHECK(Why("*") == "task: * is reserved for the default scopes");
  CHECK(Why(std::string(kMaxNameBytes + 1, 'a')) ==
        "task: longer than 128 bytes");
  CHECK(Why("a\tb") == "task: contains a control character");
  CHECK(Why("a\x7f") == "task: contains a control character");
  CHECK(Why("a\xc2\x85z") == "task: contains a control character");  // NEL
  CHECK(Why("a\xc2\xa0z") == "ok");  // U+00A0 is not a control
}

TEST_CASE("names: IsValidName agrees with ValidateName", "[names]") {
  std::mt19937 rng(11);
  // Bytes drawn mostly from the edges that matter: controls, DEL, 0xc2
  // and the bytes after it, printable ASCII.
  const std::string alphabet = std::string("\x01\x1f\x20\x7e\x7f\xc2\x80\x9f"
                                           "\xa0\xff*az", 14);
  size_t disagree = 0, valid = 0;
  for (int i = 0; i < 200000; ++i) {
    std::string name;
    const size_t len = rng() % 6 == 0 ? kMaxNameBytes - 2 + rng() % 4
                                      : rng() % 6;
    for (size_t k = 0; k < len; ++k) name += alphabet[rng() % alphabet.size()];
    const bool ok = ValidateName(name, "user").ok();
    valid += ok;
    disagree += ok != IsValidName(name);
  }
  CHECK(disagree == 0);
  CHECK(valid > 1000);  // both answers were seen
}

}  // namespace
}  // namespace brake
