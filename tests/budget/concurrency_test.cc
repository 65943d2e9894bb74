#include "budget/concurrency.h"

#include <catch2/catch.hpp>
#include <cstdint>

namespace brake {
namespace {

LimitSpec Inflight(int64_t limit) {
  LimitSpec s;
  s.name = "inflight";
  s.algorithm = Algorithm::kConcurrency;
  s.limit = limit;
  return s;
}

TEST_CASE("concurrency: leases open and close", "[budget]") {
  Concurrency c(Inflight(3), 0);

  SECTION("admits up to limit open leases, whatever the amounts") {
    for (int64_t amount : {1, 500, 0}) {
      REQUIRE(c.Check(amount, 0).verdict == Verdict::kAdmit);
      c.Charge(amount, 0);
    }
    REQUIRE(c.open() == 3);
    Decision d = c.Check(1, 10);
    REQUIRE(d.verdict == Verdict::kDeny);
    REQUIRE(d.retry_after_us == kNever);
    c.Release(500, 0, 20);
    REQUIRE(c.open() == 2);
    REQUIRE(c.Check(1, 20).verdict == Verdict::kAdmit);
  }

  SECTION("settle does nothing, extra releases do not go below 0") {
    c.Charge(1, 0);
    c.Settle(100, 0, 1);
    c.Settle(-100, 0, 1);
    REQUIRE(c.open() == 1);
    c.Release(1, 0, 2);
    c.Release(1, 0, 2);
    REQUIRE(c.open() == 0);
    for (int i = 0; i < 3; ++i) c.Charge(1, 3);
    REQUIRE(c.Check(1, 3).verdict == Verdict::kDeny);
  }

  SECTION("a limit below 1 can never admit") {
    Concurrency zero(Inflight(0), 0);
    REQUIRE(zero.Check(1, 0).verdict == Verdict::kTooLarge);
  }

  SECTION("usage") {
    LimitUsage u = c.Usage(0);
    REQUIRE(u.limit == 3);
    REQUIRE(u.used == 0);
    REQUIRE(u.remaining == 3);
    REQUIRE(u.resets_in_us == 0);
    c.Charge(1, 0);
    u = c.Usage(0);
    REQUIRE(u.used == 1);
    REQUIRE(u.remaining == 2);
    REQUIRE(u.resets_in_us == kNever);
  }

  SECTION("state is not persisted; the daemon rebuilds it") {
    c.Charge(1, 0);
    REQUIRE(c.SaveState().empty());
    REQUIRE(c.RestoreState({}));
    REQUIRE(c.open() == 1);
    REQUIRE_FALSE(c.RestoreState({1}));
    REQUIRE(c.open() == 1);
    c.SetOpen(3);
    REQUIRE(c.Check(1, 0).verdict == Verdict::kDeny);
    c.SetOpen(-4);
    REQUIRE(c.open() == 0);
  }

  SECTION("reset and reconfigure") {
    c.Charge(1, 0);
    c.Charge(1, 0);
    c.Reconfigure(Inflight(2));
    REQUIRE(c.open() == 2);
    REQUIRE(c.Check(1, 0).verdict == Verdict::kDeny);
    c.Reconfigure(Inflight(1));
    REQUIRE(c.Usage(0).remaining == -1);
    c.Reset(5);
    REQUIRE(c.open() == 0);
    REQUIRE(c.Check(1, 5).verdict == Verdict::kAdmit);
  }
}

}  // namespace
}  // namespace brake
