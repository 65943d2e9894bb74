#include "storage/lease_index.h"

#include <catch2/catch.hpp>
#include <map>
#include <random>
#include <string>

namespace brake::storage {
namespace {

TEST_CASE("lease index: finds what was set, by any id shape",
          "[storage][lease_index]") {
  LeaseIndex index;
  const char* ids[] = {"run-1", "run-2", "run-100", "other-7", "x", "007",
                       "run-0",  "run-01", "", "run-1234567890123456789",
                       "tab\tid"};
  uint32_t line = 0;
  for (const char* id : ids) index.Set(id, LeasePos{1, line++});
  CHECK(index.size() == std::size(ids));
  line = 0;
  for (const char* id : ids) {
    INFO(id);
    auto p = index.Find(id);
    REQUIRE(p.has_value());
    CHECK(p->line == line++);
  }
  CHECK_FALSE(index.Find("run-3").has_value());
  CHECK_FALSE(index.Find("run-").has_value());
  index.Set("run-100", LeasePos{2, 9});  // moved
  CHECK(index.Find("run-100")->chunk == 2);
  CHECK(index.size() == std::size(ids));
  for (const char* id : ids) index.Set(id, std::nullopt);
  CHECK(index.size() == 0);
  for (const char* id : ids) CHECK_FALSE(index.Find(id).has_value());
}

TEST_CASE("lease index: agrees with a map under random use",
          "[storage][lease_index]") {
  LeaseIndex index;
  std::map<std::string, std::pair<int64_t, uint32_t>> model;
  std::mt19937 rng(11);
  uint64_t next = 1;
  for (int step = 0; step < 50'000; ++step) {
    std::string id;
    switch (rng() % 6) {
      case 0: id = "old-" + std::to_string(rng() % 50 + 1); break;
      case 1: id = "far-" + std::to_string(rng() % 1'000'000 + 1); break;
      default: id = "run-" + std::to_string(next - rng() % 200); break;
    }
    if (rng() % 3 == 0) ++next;
    if (id == "run-0" || id.back() == '-') continue;
    if (rng() % 2 == 0) {
      LeasePos p{static_cast<int64_t>(rng() % 9 + 1), static_cast<uint32_t>(step)};
      index.Set(id, p);
      model[id] = {p.chunk, p.line};
    } else {
      index.Set(id, std::nullopt);
      model.erase(id);
    }
    if (step % 1000 == 0) {
      REQUIRE(index.size() == model.size());
      for (const auto& [key, want] : model) {
        auto got = index.Find(key);
        REQUIRE(got.has_value());
        REQUIRE(got->chunk == want.first);
        REQUIRE(got->line == want.second);
      }
    }
  }
}

}  // namespace
}  // namespace brake::storage
