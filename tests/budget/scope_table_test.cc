// ScopeTable: finds exactly what a std::map holds through random inserts
// and erases (probe clusters wrapping round the end of a small table
// included), keeps every entry where it was, and visits each once.
#include <catch2/catch.hpp>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "budget/scope_table.h"

namespace brake {
namespace {

std::string ScopeOf(int n) {
  static const char* kKinds[] = {"user:", "task:", "resource:", ""};
  return std::string(kKinds[n % 4]) + (n % 4 == 3 ? "global" : "") +
         std::to_string(n / 4);
}

// Checks `t` against `model` (scope -> value and the entry it was given).
void Agree(const ScopeTable<int>& t,
           const std::map<std::string, std::pair<int, const void*>>& model,
           int universe) {
  REQUIRE(t.size() == model.size());
  for (int n = 0; n < universe; ++n) {
    const std::string scope = ScopeOf(n);
    auto* e = t.find(scope);
    auto it = model.find(scope);
    if (it == model.end()) {
      REQUIRE(e == nullptr);
      continue;
    }
    REQUIRE(e != nullptr);
    CHECK(e->first == scope);
    CHECK(e->second == it->second.first);
    CHECK(static_cast<const void*>(e) == it->second.second);  // never moved
  }
  std::set<std::string> seen;
  for (auto& [scope, value] : t) {
    CHECK(seen.insert(scope).second);
    CHECK(model.count(scope) == 1);
  }
  CHECK(seen.size() == model.size());
}

TEST_CASE("scope table: random inserts and erases agree with a map",
          "[scope_table]") {
  const int universe = GENERATE(5, 40, 700);
  std::mt19937 rng(static_cast<unsigned>(universe));
  ScopeTable<int> t;
  std::map<std::string, std::pair<int, const void*>> model;
  for (int step = 0; step < 20 * universe + 200; ++step) {
    const std::string scope =
        ScopeOf(std::uniform_int_distribution<int>(0, universe - 1)(rng));
    auto* e = t.find(scope);
    if (e == nullptr) {
      e = t.Insert(scope);
      e->second = step;
      model[scope] = {step, e};
    } else if (rng() % 2 == 0) {
      t.erase(e);
      model.erase(scope);
    } else {
      e->second = -step;
      model[scope].first = -step;
    }
    if (step % 97 == 0) Agree(t, model, universe);
  }
  Agree(t, model, universe);
  CHECK(t.slot_count() >= 2 * t.size());  // at most half full
}

TEST_CASE("scope table: a scope is found by kind and name apart",
          "[scope_table]") {
  ScopeTable<int> t;
  t.Insert("user:alice")->second = 1;
  t.Insert("task:alice")->second = 2;
  t["global"] = 3;
  REQUIRE(t.find(ScopeRef{"user:", "alice"}) != nullptr);
  CHECK(t.find(ScopeRef{"user:", "alice"})->second == 1);
  CHECK(t.find(ScopeRef{"task:", "alice"})->second == 2);
  CHECK(t.find(ScopeRef{"resource:", "alice"}) == nullptr);
  CHECK(t.find(std::string_view("global"))->second == 3);
  CHECK(t["global"] == 3);
  CHECK(t.size() == 3);
  t.clear();
  CHECK(t.empty());
  CHECK(t.find(std::string_view("global")) == nullptr);
}

TEST_CASE("scope table: a scan by slot sees every entry once",
          "[scope_table]") {
  ScopeTable<int> t;
  for (int n = 0; n < 300; ++n) t.Insert(ScopeOf(n));
  std::set<std::string> seen;
  for (size_t i = 0; i < t.slot_count(); ++i) {
    if (auto* e = t.At(i)) CHECK(seen.insert(e->first).second);
  }
  CHECK(seen.size() == 300);
}

}  // namespace
}  // namespace brake
