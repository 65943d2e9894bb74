#include "common/small_vector.h"

#include <catch2/catch.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "common/line_pool.h"

namespace brake {
namespace {

using Strings = SmallVector<std::string, 3>;

std::vector<std::string> All(const Strings& v) {
  return std::vector<std::string>(v.begin(), v.end());
}

// Longer than a short string holds: a moved-from slot would show empty.
std::string Long(int i) {
  return "a string past the short size #" + std::to_string(i);
}

TEST_CASE("small vector: keeps order within its slots and past them",
          "[small_vector]") {
  Strings v;
  CHECK(v.empty());
  std::vector<std::string> want;
  for (int i = 0; i < 7; ++i) {
    v.push_back(Long(i));
    want.push_back(Long(i));
    CHECK(All(v) == want);
    CHECK(v.size() == want.size());
    CHECK(v[v.size() - 1] == want.back());
  }
  // Indexing and writing through data() see the same elements.
  v[4] = "four";
  CHECK(v.data()[4] == "four");
}

TEST_CASE("small vector: resize value-initializes what it adds",
          "[small_vector]") {
  SmallVector<int, 4> v;
  v.push_back(7);
  v.push_back(8);
  v.resize(1);
  v.resize(3);  // the slot that held 8 is zero again, as a vector's would be
  CHECK(std::vector<int>(v.begin(), v.end()) == std::vector<int>{7, 0, 0});
  v.resize(6);  // past the slots
  CHECK(std::vector<int>(v.begin(), v.end()) ==
        std::vector<int>{7, 0, 0, 0, 0, 0});
  v[5] = 5;
  v.resize(2);
  v.resize(3);
  CHECK(std::vector<int>(v.begin(), v.end()) == std::vector<int>{7, 0, 0});
}

TEST_CASE("small vector: erase keeps the rest in order in both places",
          "[small_vector]") {
  for (int n : {3, 6}) {  // within the slots, and spilled past them
    Strings v;
    std::vector<std::string> want;
    for (int i = 0; i < n; ++i) {
      v.push_back(Long(i));
      want.push_back(Long(i));
    }
    std::string* at = v.erase(v.begin() + 1, v.begin() + 2);
    want.erase(want.begin() + 1, want.begin() + 2);
    CHECK(All(v) == want);
    CHECK(*at == want[1]);
    v.erase(v.begin(), v.end());
    CHECK(v.empty());
  }
}

TEST_CASE("small vector: clear returns to the slots and a move keeps all",
          "[small_vector]") {
  Strings v;
  for (int i = 0; i < 5; ++i) v.push_back(Long(i));
  v.clear();
  CHECK(v.empty());
  v.push_back("x");
  const std::string* in_object = v.data();
  CHECK(reinterpret_cast<const char*>(in_object) >=
            reinterpret_cast<const char*>(&v));
  CHECK(reinterpret_cast<const char*>(in_object) <
        reinterpret_cast<const char*>(&v) + sizeof(v));
  v.push_back(Long(1));
  Strings moved = std::move(v);
  CHECK(All(moved) == std::vector<std::string>{"x", Long(1)});
  for (int i = 2; i < 5; ++i) moved.push_back(Long(i));
  Strings spilled = std::move(moved);
  CHECK(All(spilled) ==
        std::vector<std::string>{"x", Long(1), Long(2), Long(3), Long(4)});
  CHECK(moved.empty());  // NOLINT(bugprone-use-after-move): left empty
  moved.push_back("y");
  CHECK(All(moved) == std::vector<std::string>{"y"});
}

TEST_CASE("small vector: spilled elements are in whole pool lines",
          "[small_vector]") {
  // From malloc a block starts 16 bytes into a line three times in four:
  // eight spills all starting a line say LinePool made them.
  std::vector<SmallVector<int64_t, 1>> vs(8);
  for (auto& v : vs) {
    v.resize(3);
    CHECK(reinterpret_cast<uintptr_t>(v.data()) % LinePool::kLine == 0);
    CHECK(v[2] == 0);
  }
  SECTION("a copy spills into its own lines") {
    vs[0][2] = 7;
    const SmallVector<int64_t, 1> copy(vs[0]);
    CHECK(copy.data() != vs[0].data());
    CHECK(reinterpret_cast<uintptr_t>(copy.data()) % LinePool::kLine == 0);
    CHECK(copy[2] == 7);
  }
}

}  // namespace
}  // namespace brake
