// ScopeHash and ScopeEq: a scope found by its kind and name apart hashes
// and compares exactly as the whole string does.
#include <catch2/catch.hpp>
#include <random>
#include <string>
#include <unordered_map>
#include <unordered_set>

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

TEST_CASE("scope key: the low bits of similar names spread like random ones",
          "[scope_key]") {
  // A table indexes its slots by the low bits. 100,000 names that differ
  // in a digit or two, of every length from 1 to 40, in 2^20 slots:
  // random hashes would leave about 95,250 distinct (n - n^2 / 2m); a
  // hash that ignored some bytes or lengths would leave far fewer.
  const std::string pad(40, 'x');
  std::unordered_set<uint64_t> slots;
  ScopeHash hash;
  for (int i = 0; i < 100000; ++i) {
    std::string name = std::to_string(i);
    name = pad.substr(0, i % 40) + name;  // lengths 1 to 45
    slots.insert(hash(ScopeRef{"task:", name}) & ((1u << 20) - 1));
  }
  CHECK(slots.size() > 94000);
  // Every length class from 0 to 17 bytes, one byte changed at each place.
  for (size_t n = 1; n <= 17; ++n) {
    std::unordered_set<uint64_t> seen;
    std::string base(n, 'a');
    for (size_t at = 0; at < n; ++at) {
      std::string s = base;
      s[at] = 'b';
      seen.insert(hash(std::string_view(s)));
    }
    CHECK(seen.size() == n);
  }
}

}  // namespace
}  // namespace brake
