#include "budget/fifo.h"

#include <catch2/catch.hpp>
#include <deque>
#include <memory>
#include <random>

namespace brake {
namespace {

TEST_CASE("fifo: pushes and pops as a deque does", "[fifo]") {
  // Move-only elements, as the lease book's slots are, through many wraps
  // round the ring and its doublings: every element stays where its index
  // says.
  Fifo<std::unique_ptr<int>> fifo;
  std::deque<int> model;
  std::mt19937 rng(7);
  int next = 0;
  for (int step = 0; step < 20000; ++step) {
    // Lengths wander between empty and a few hundred.
    const unsigned push_percent = step % 4000 < 2000 ? 60 : 40;
    const bool push = model.empty() || rng() % 100 < push_percent;
    if (push) {
      fifo.emplace_back() = std::make_unique<int>(next);
      model.push_back(next++);
    } else {
      REQUIRE(*fifo.front() == model.front());
      fifo.pop_front();
      model.pop_front();
    }
    REQUIRE(fifo.size() == model.size());
    REQUIRE(fifo.empty() == model.empty());
    if (!model.empty()) {
      const size_t i = rng() % model.size();
      REQUIRE(*fifo[i] == model[i]);
    }
  }
  size_t i = 0;
  for (const auto& p : fifo) CHECK(*p == model[i++]);
  CHECK(i == model.size());
}

TEST_CASE("fifo: a popped element's contents go at once", "[fifo]") {
  auto shared = std::make_shared<int>(1);
  Fifo<std::shared_ptr<int>> fifo;
  fifo.emplace_back() = shared;
  fifo.emplace_back() = shared;
  CHECK(shared.use_count() == 3);
  fifo.pop_front();
  CHECK(shared.use_count() == 2);
}

}  // namespace
}  // namespace brake
