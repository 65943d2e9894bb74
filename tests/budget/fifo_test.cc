#include "budget/fifo.h"

#include <catch2/catch.hpp>
#include <deque>
#include <memory>
#include <random>

#include "common/line_pool.h"

namespace brake {
namespace {

TEST_CASE("fifo: pushes and pops as a deque does", "[fifo]") {
  // Move-only elements, as the lease book's slots are, in blocks of 16
  // (not the 2 MiB chunk of the default), so that the queue crosses many
  // blocks, leaves them and takes them again: every element stays where its
  // index says.
  Fifo<std::unique_ptr<int>, 16> fifo;
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
  {
    Fifo<std::shared_ptr<int>, 2> fifo;
    for (int i = 0; i < 5; ++i) fifo.emplace_back() = shared;
    CHECK(shared.use_count() == 6);
    fifo.pop_front();
    CHECK(shared.use_count() == 5);
    fifo.pop_front();  // and the block it leaves
    CHECK(shared.use_count() == 4);
  }
  CHECK(shared.use_count() == 1);  // the rest go with the queue
}

TEST_CASE("fifo: a block the front leaves is taken again by the back",
          "[fifo]") {
  // The stock counts chunks not in use: a queue that steps along, one
  // element in and one out, keeps at most two blocks out of it (where the
  // front is and where the back is) however far it goes, taking each next
  // block from it and giving each left one back, and all when it goes.
  const size_t four = 4 * LinePool::kChunkBytes;
  while (LinePool::Stock(four) < four) {
  }
  const size_t before = LinePool::Stock(0);
  {
    Fifo<int, 4> fifo;
    for (int i = 0; i < 100; ++i) {
      fifo.emplace_back() = i;
      if (fifo.size() > 2) fifo.pop_front();
      REQUIRE(LinePool::Stock(0) + 2 * LinePool::kChunkBytes >= before);
    }
    CHECK(fifo.front() == 98);
  }
  CHECK(LinePool::Stock(0) >= before);
}

}  // namespace
}  // namespace brake
