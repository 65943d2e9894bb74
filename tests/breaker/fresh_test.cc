// Breaker::IsFresh: a breaker that decides as a new one would.
#include <catch2/catch.hpp>
#include <cstdint>

#include "breaker/breaker.h"
#include "breaker/fingerprint.h"
#include "tests/breaker/breaker_test_util.h"

namespace brake::breaker {
namespace {

using namespace testing;  // NOLINT

TEST_CASE("breaker: fresh until something counts and again once it expires",
          "[breaker]") {
  BreakerSpec spec = FullSpec();
  spec.half_open_probes = 1;
  Breaker b(spec);
  CHECK(b.IsFresh(kT0));
  Acquire(b, kT0);  // an admitted acquire counts nothing by itself
  CHECK(b.IsFresh(kT0));

  SECTION("an outcome, for its window") {
    b.OnOutcome(10, Outcome::kError, false, kT0);
    CHECK_FALSE(b.IsFresh(kT0));
    CHECK_FALSE(b.IsFresh(kT0 + 9 * kSec));
    CHECK(b.IsFresh(kT0 + 11 * kSec));  // the 10 s windows have passed
  }
  SECTION("a loop sighting, for the loop window") {
    b.OnFingerprint(HashFingerprint("same call"), kT0);
    CHECK_FALSE(b.IsFresh(kT0 + 59 * kSec));
    CHECK(b.IsFresh(kT0 + 60 * kSec));
  }
  SECTION("spend, for the spend window") {
    b.OnSpend(10, kT0);
    CHECK_FALSE(b.IsFresh(kT0 + 59 * kSec));
    CHECK(b.IsFresh(kT0 + 61 * kSec));
  }
  SECTION("open, half-open and its backoff") {
    b.Trip(1000, kT0);
    CHECK_FALSE(b.IsFresh(kT0));
    b.TakeTransitions();
    CHECK_FALSE(b.IsFresh(kT0 + 2 * kSec));  // open, not yet moved on
    Admission probe = Acquire(b, kT0 + 2 * kSec);  // half-open: a probe
    REQUIRE(probe.probe);
    b.TakeTransitions();
    CHECK_FALSE(b.IsFresh(kT0 + 2 * kSec));
    b.OnOutcome(10, Outcome::kOk, true, kT0 + 2 * kSec);  // closes
    CHECK(b.View(kT0 + 2 * kSec).state == BreakerState::kClosed);
    CHECK_FALSE(b.IsFresh(kT0 + 2 * kSec));  // its transition is pending
    b.TakeTransitions();
    // The probe's ok outcome is not counted in the windows (closing
    // clears them), so nothing is left.
    CHECK(b.IsFresh(kT0 + 2 * kSec));
  }
  SECTION("a reset forgets everything") {
    TripSlow(b, kT0);
    b.TakeTransitions();
    CHECK_FALSE(b.IsFresh(kT0 + kSec));
    b.Reset(kT0 + kSec);
    b.TakeTransitions();
    CHECK(b.IsFresh(kT0 + kSec));
  }
}

}  // namespace
}  // namespace brake::breaker
