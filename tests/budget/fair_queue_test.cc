#include "budget/fair_queue.h"

#include <catch2/catch.hpp>
#include <map>
#include <vector>

namespace brake {


// Serves with `tokens` grants available; returns ids in grant order.
std::vector<uint64_t> ServeN(FairQueue& q, int tokens) {
  std::vector<uint64_t> order;
  q.Serve([&](uint64_t id) {
    if (tokens == 0) return false;
    --tokens;
    order.push_back(id);
    return true;
  });
  return order;
}

TEST_CASE("FairQueue is FIFO within a task", "[budget][fair_queue]") {
  FairQueue q;
  q.Push(1, "alice", "t");
  q.Push(2, "alice", "t");
  q.Push(3, "alice", "t");
  CHECK(ServeN(q, 2) == std::vector<uint64_t>{1, 2});
  CHECK(q.size() == 1);
  CHECK(ServeN(q, 5) == std::vector<uint64_t>{3});
  CHECK(q.empty());
  CHECK_FALSE(q.HasWaiters("alice"));
}

TEST_CASE("FairQueue rotates across a user's tasks", "[budget][fair_queue]") {
  FairQueue q;
  // Task "big" queues 100 calls before task "small" queues one.
  for (uint64_t i = 0; i < 100; ++i) q.Push(i, "alice", "big");
  q.Push(1000, "alice", "small");
  auto first = ServeN(q, 2);
  REQUIRE(first.size() == 2);
  CHECK(first[0] == 0);
  CHECK(first[1] == 1000);  // the small task is served second, not 101st
}

TEST_CASE("FairQueue shares one grant per wake-up in rotation",
          "[budget][fair_queue]") {
  FairQueue q;
  uint64_t id = 0;
  std::map<uint64_t, std::string> task_of;
  for (int round = 0; round < 10; ++round) {
    for (const char* t : {"a", "b", "c", "d"}) {
      q.Push(id, "u", t);
      task_of[id++] = t;
    }
  }
  std::map<std::string, int> share;
  // One token per wake-up, as a token bucket refills between timer ticks.
  for (int wake = 0; wake < 20; ++wake) {
    for (uint64_t granted : ServeN(q, 1)) ++share[task_of[granted]];
  }
  for (const char* t : {"a", "b", "c", "d"}) CHECK(share[t] == 5);
}

TEST_CASE("FairQueue rotates users too", "[budget][fair_queue]") {
  FairQueue q;
  for (uint64_t i = 0; i < 10; ++i) q.Push(i, "busy", "t" + std::to_string(i));
  q.Push(100, "quiet", "x");
  auto order = ServeN(q, 2);
  REQUIRE(order.size() == 2);
  // busy's first task, then quiet, whatever number of tasks busy has.
  CHECK(order[0] == 0);
  CHECK(order[1] == 100);
}

TEST_CASE("FairQueue keeps denied heads in place", "[budget][fair_queue]") {
  FairQueue q;
  q.Push(1, "u", "t");
  q.Push(2, "u", "t");
  int offers = 0;
  CHECK(q.Serve([&](uint64_t) {
          ++offers;
          return false;
        }) == 0);
  CHECK(offers == 1);  // only the head of the line is offered
  CHECK(q.size() == 2);
  CHECK(ServeN(q, 1) == std::vector<uint64_t>{1});
}

TEST_CASE("FairQueue removes waiters anywhere", "[budget][fair_queue]") {
  FairQueue q;
  q.Push(1, "u", "t");
  q.Push(2, "u", "t");
  q.Push(3, "v", "s");
  CHECK(q.Remove(2));
  CHECK_FALSE(q.Remove(2));
  CHECK(q.Remove(3));
  CHECK_FALSE(q.HasWaiters("v"));
  CHECK(q.HasWaiters("u"));
  CHECK(ServeN(q, 9) == std::vector<uint64_t>{1});
  CHECK(q.empty());
}
}  // namespace brake
