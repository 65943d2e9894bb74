// ScopeHash and ScopeEq: a scope found by its kind and name apart hashes
// and compares exactly as the whole string does.
#include <catch2/catch.hpp>
#include <random>
#include <string>
#include <unordered_map>

#include "budget/scope_key.h"

namespace brake {
namespace {

std::string RandomName(std::mt19937& rng) {
  static const std::string kChars = "abcz019:_-.*/user:task:resource:";
  std::string name(std::uniform_int_distribution<int>(0, 20)(rng), 'a');
  for (char& c : name) {
    c = kChars[std::uniform_int_distribution<size_t>(0, kChars.size() - 1)(
        rng)];
  }
  return name;
}

TEST_CASE("scope key: split and whole hash and compare alike",
          "[scope_key]") {
  std::mt19937 rng(7);
  const char* prefixes[] = {"", "user:", "task:", "resource:", "global",
                            "use",  "user", "x:"};
  ScopeHash hash;
  ScopeEq eq;
  for (int i = 0; i < 20000; ++i) {
    const std::string prefix = prefixes[i % 8];
    const std::string name = RandomName(rng);
    const std::string whole = prefix + name;
    INFO("prefix '" << prefix << "' name '" << name << "'");
    REQUIRE(hash(ScopeRef{prefix, name}) == hash(whole));
    REQUIRE(eq(ScopeRef{prefix, name}, whole));
    REQUIRE(eq(whole, ScopeRef{prefix, name}));
    // One byte more or less is another scope.
    REQUIRE_FALSE(eq(ScopeRef{prefix, name + "x"}, whole));
    if (!whole.empty()) {
      REQUIRE_FALSE(eq(ScopeRef{prefix, name}, whole.substr(1)));
    }
  }
}

TEST_CASE("scope key: a map keyed by whole scopes is found by parts",
          "[scope_key]") {
  std::unordered_map<std::string, int, ScopeHash, ScopeEq> map;
  map["global"] = 1;
  map["user:alice"] = 2;
  map["task:alice"] = 3;
  map["resource:gpt"] = 4;
  CHECK(map.find(ScopeRef{"", "global"})->second == 1);
  CHECK(map.find(ScopeRef{"user:", "alice"})->second == 2);
  CHECK(map.find(ScopeRef{"task:", "alice"})->second == 3);
  CHECK(map.find(ScopeRef{"resource:", "gpt"})->second == 4);
  CHECK(map.find(ScopeRef{"user:", "bob"}) == map.end());
  CHECK(map.find(ScopeRef{"resource:", "alice"}) == map.end());
  CHECK(map.find(ScopeRef{"user:", ""}) == map.end());
  // Kinds of one name share nothing but the name: user: and task: differ.
  CHECK(ScopeHash{}(ScopeRef{"user:", "alice"}) !=
        ScopeHash{}(ScopeRef{"task:", "alice"}));
}

}  // namespace
}  // namespace brake
