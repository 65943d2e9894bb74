// LimiterList: in place up to kInline limiters, then on the heap, in order,
// through moves and clears.
#include <catch2/catch.hpp>
#include <cstdint>
#include <utility>

#include "budget/limiter_list.h"
#include "budget/token_bucket.h"

namespace brake {
namespace {

LimiterList::Ptr Bucket(int64_t burst) {
  LimitSpec spec;
  spec.name = "b" + std::to_string(burst);
  spec.resource = Resource::kRequests;
  spec.algorithm = Algorithm::kTokenBucket;
  spec.rate = 1;
  spec.per_ms = 1000;
  spec.burst = burst;
  return MakeLimiter(spec, 0);
}

void CheckOrder(const LimiterList& list, int n) {
  REQUIRE(list.size() == static_cast<uint32_t>(n));
  int i = 0;
  for (const auto& l : list) CHECK(l->spec().burst == ++i);
  CHECK(i == n);
}

TEST_CASE("limiter list: in place, then on the heap, in order",
          "[limiter_list]") {
  const int n = GENERATE(0, 1, 2, 3, 5, 9);
  LimiterList list;
  CHECK(list.empty());
  for (int i = 1; i <= n; ++i) {
    list.push_back(Bucket(i));
    CHECK(list.back()->spec().burst == i);
    CHECK(list.in_place() == (i <= static_cast<int>(LimiterList::kInline)));
  }
  CheckOrder(list, n);
  const Limiter* first = n > 0 ? list[0].get() : nullptr;

  LimiterList moved(std::move(list));
  CheckOrder(moved, n);
  CHECK(list.empty());
  if (n > 0) CHECK(moved[0].get() == first);  // the limiters never move

  LimiterList assigned;
  assigned.push_back(Bucket(99));
  assigned = std::move(moved);
  CheckOrder(assigned, n);
  assigned.push_back(Bucket(n + 1));
  CheckOrder(assigned, n + 1);
  assigned.clear();
  CHECK(assigned.empty());
  CHECK(assigned.in_place());
}

}  // namespace
}  // namespace brake
