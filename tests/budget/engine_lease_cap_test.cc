// Engine: the cap on open leases (max_open_leases).
#include <catch2/catch.hpp>
#include <string>

#include "budget/engine.h"
#include "tests/budget/engine_helpers.h"

namespace brake {
namespace {

using namespace engine_test;

TEST_CASE("engine: at max_open_leases a grant is refused whole",
          "[engine]") {
  Engine e("L", kTtlUs);
  e.SetPolicy("user:*",
              MakePolicy({QuotaSpec("q", Resource::kRequests, 3)}));
  e.set_max_open_leases(2);
  std::string first = Grant(e, Req("alice", "t1"), kT0);
  Grant(e, Req("alice", "t1"), kT0);

  auto refused = e.Acquire(Req("bob", "t2"), kT0);
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.status().code() == ErrorCode::kUnavailable);
  CHECK_THAT(refused.status().message(), Catch::Contains("max_open_leases"));
  CHECK(e.lease_cap_refusals() == 1);
  CHECK(e.open_leases() == 2);
  // Nothing was charged: bob's quota is whole, and his task was not made.
  CHECK(UsageOf(e, "user:bob", "user:bob", "q", kT0).used == 0);
  CHECK(e.TaskOwner("t2").empty());

  // A dry run and a denial are answered as usual.
  AcquireRequest dry = Req("bob", "t2");
  dry.dry_run = true;
  CHECK(Acquire(e, dry, kT0).granted);
  AcquireRequest big = Req("alice", "t1");
  big.requests = 2;  // 2 held of 3: the quota refuses it
  CHECK(Deny(e, big, kT0).reason == Reason::kReserved);
  CHECK(e.lease_cap_refusals() == 1);

  // A lease settled makes room.
  REQUIRE(e.Cancel(first, kT0).ok());
  Grant(e, Req("bob", "t2"), kT0);
  CHECK(e.open_leases() == 2);
}

}  // namespace
}  // namespace brake
