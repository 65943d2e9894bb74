// open -> half-open -> closed or open again: probes, slots and backoff.
#include <catch2/catch.hpp>
#include <cstdint>
#include <vector>

#include "breaker/breaker.h"
#include "tests/breaker/breaker_test_util.h"

namespace brake::breaker {
namespace {

using namespace testing;  // NOLINT

TEST_CASE("breaker: half-open lets exactly the probes through", "[breaker]") {
  Breaker b(SlowSpec());  // open 30 s, 3 probes
  TripSlow(b, kT0);
  b.TakeTransitions();
  const int64_t t1 = kT0 + 30 * kSec;

  Admission early = b.Check(t1 - 1);
  REQUIRE_FALSE(early.admit);
  REQUIRE(early.retry_after_us == 1);
  REQUIRE(b.View(t1 - 1).state == BreakerState::kOpen);
  REQUIRE(b.View(t1).state == BreakerState::kHalfOpen);  // View is lazy too

  for (int i = 0; i < 3; ++i) {
    Admission a = Acquire(b, t1);
    REQUIRE(a.admit);
    REQUIRE(a.probe);
  }
  Admission denied = Acquire(b, t1);
  REQUIRE_FALSE(denied.admit);
  REQUIRE(denied.cause == Cause::kSlowCalls);
  REQUIRE(denied.retry_after_us == kNever);
  Snapshot v = b.View(t1);
  REQUIRE(v.state == BreakerState::kHalfOpen);
  REQUIRE(v.probes_in_flight == 3);
  REQUIRE(v.retry_in_us == 0);

  std::vector<Transition> t = b.TakeTransitions();
  REQUIRE(t.size() == 1);
  REQUIRE(t[0].from == BreakerState::kOpen);
  REQUIRE(t[0].to == BreakerState::kHalfOpen);

  SECTION("all probes ok: closed, with the stats cleared") {
    for (int i = 0; i < 3; ++i) b.OnOutcome(100, Outcome::kOk, true, t1);
    REQUIRE(b.state() == BreakerState::kClosed);
    Snapshot c = b.View(t1);
    REQUIRE(c.cause == Cause::kNone);
    REQUIRE(c.consecutive_opens == 0);
    std::vector<Transition> ts = b.TakeTransitions();
    REQUIRE(ts.size() == 1);
    REQUIRE(ts[0].to == BreakerState::kClosed);
    REQUIRE(ts[0].figures == "3 of 3 probes ok");
    Calls(b, 9, 5000, Outcome::kOk, t1);  // the old 10 slow calls are gone
    REQUIRE(b.state() == BreakerState::kClosed);
    Calls(b, 1, 5000, Outcome::kOk, t1);
    REQUIRE(b.state() == BreakerState::kOpen);
    REQUIRE(b.View(t1).retry_in_us == 30 * kSec);  // backoff forgotten
  }
  SECTION("two ok are not enough") {
    b.OnOutcome(100, Outcome::kOk, true, t1);
    b.OnOutcome(100, Outcome::kOk, true, t1);
    REQUIRE(b.state() == BreakerState::kHalfOpen);
    REQUIRE_FALSE(b.Check(t1).admit);  // the third is still in flight
  }
  SECTION("one failed probe re-opens with backoff") {
    b.OnOutcome(100, Outcome::kOk, true, t1);
    b.OnOutcome(100, Outcome::kError, true, t1 + kSec);
    Snapshot o = b.View(t1 + kSec);
    REQUIRE(o.state == BreakerState::kOpen);
    REQUIRE(o.cause == Cause::kErrors);
    REQUIRE(o.retry_in_us == 60 * kSec);
    REQUIRE(o.consecutive_opens == 2);
    SECTION("the last probe's late outcome is ignored") {
      b.OnOutcome(100, Outcome::kOk, true, t1 + 2 * kSec);
      REQUIRE(b.state() == BreakerState::kOpen);
      Admission p = Acquire(b, t1 + 61 * kSec);
      REQUIRE(p.probe);
      REQUIRE(b.View(t1 + 61 * kSec).probes_ok == 0);
    }
  }
  SECTION("a slow probe re-opens even when ok") {
    b.OnOutcome(2001, Outcome::kOk, true, t1);
    REQUIRE(b.View(t1).cause == Cause::kSlowCalls);
    REQUIRE(b.View(t1).retry_in_us == 60 * kSec);
  }
  SECTION("a probe at exactly max_rt is fine") {
    for (int i = 0; i < 3; ++i) b.OnOutcome(2000, Outcome::kOk, true, t1);
    REQUIRE(b.state() == BreakerState::kClosed);
  }
  SECTION("a throttled or timed-out probe re-opens") {
    Outcome o = GENERATE(Outcome::kThrottled, Outcome::kTimeout);
    b.OnOutcome(10, o, true, t1);
    REQUIRE(b.state() == BreakerState::kOpen);
  }
  SECTION("non-probe outcomes in half-open change nothing") {
    Calls(b, 20, 5000, Outcome::kError, t1);
    REQUIRE(b.state() == BreakerState::kHalfOpen);
  }
}

TEST_CASE("breaker: re-open backoff 30 s, 60 s, 120 s ... capped",
          "[breaker]") {
  Breaker b(SlowSpec());  // open 30 s, backoff 2, max 600 s
  int64_t now = kT0;
  TripSlow(b, now);
  const int64_t expected_s[] = {30, 60, 120, 240, 480, 600, 600};
  for (size_t i = 0; i < std::size(expected_s); ++i) {
    CAPTURE(i);
    Snapshot v = b.View(now);
    REQUIRE(v.state == BreakerState::kOpen);
    REQUIRE(v.retry_in_us == expected_s[i] * kSec);
    REQUIRE(v.consecutive_opens == static_cast<int64_t>(i) + 1);
    now += expected_s[i] * kSec;
    Admission p = Acquire(b, now);
    REQUIRE(p.probe);
    b.OnOutcome(5000, Outcome::kOk, true, now);  // slow
  }
  SECTION("closing forgets the backoff") {
    now += 600 * kSec;
    for (int i = 0; i < 3; ++i) {
      REQUIRE(Acquire(b, now).probe);
      b.OnOutcome(10, Outcome::kOk, true, now);
    }
    REQUIRE(b.state() == BreakerState::kClosed);
    TripSlow(b, now);
    REQUIRE(b.View(now).retry_in_us == 30 * kSec);
  }
}

TEST_CASE("breaker: backoff saturates on huge figures", "[breaker]") {
  BreakerSpec spec = SlowSpec();
  spec.open_backoff = 1000.0;
  spec.max_open_ms = INT64_MAX;
  Breaker b(spec);
  int64_t now = 0;
  TripSlow(b, now);
  for (int i = 0; i < 4; ++i) {
    now = b.View(now).open_until_us;
    REQUIRE(Acquire(b, now).probe);
    b.OnOutcome(10, Outcome::kError, true, now);
  }
  Snapshot v = b.View(now);
  REQUIRE(v.state == BreakerState::kOpen);
  REQUIRE(v.open_until_us == INT64_MAX);  // 30 s * 1000^4 saturates
  REQUIRE(v.retry_in_us == INT64_MAX - now);
}

TEST_CASE("breaker: probe slots are released", "[breaker]") {
  Breaker b(SlowSpec());
  TripSlow(b, kT0);
  const int64_t t1 = kT0 + 30 * kSec;

  SECTION("Check alone takes no slot") {
    for (int i = 0; i < 10; ++i) REQUIRE(b.Check(t1).probe);
  }
  SECTION("a released probe frees its slot and is no success") {
    for (int i = 0; i < 3; ++i) REQUIRE(Acquire(b, t1).probe);
    REQUIRE_FALSE(b.Check(t1).admit);
    b.ReleaseProbe(t1 + kSec);
    REQUIRE(b.View(t1 + kSec).probes_in_flight == 2);
    REQUIRE(Acquire(b, t1 + kSec).probe);
    b.OnOutcome(10, Outcome::kOk, true, t1 + 2 * kSec);
    b.OnOutcome(10, Outcome::kOk, true, t1 + 2 * kSec);
    REQUIRE(b.state() == BreakerState::kHalfOpen);  // 2 ok, 1 in flight
    b.OnOutcome(10, Outcome::kOk, true, t1 + 2 * kSec);
    REQUIRE(b.state() == BreakerState::kClosed);
  }
  SECTION("every probe released: half-open with every slot free") {
    for (int i = 0; i < 3; ++i) REQUIRE(Acquire(b, t1).probe);
    for (int i = 0; i < 3; ++i) b.ReleaseProbe(t1 + kSec);
    REQUIRE(b.View(t1 + kSec).probes_in_flight == 0);
    for (int i = 0; i < 3; ++i) REQUIRE(Acquire(b, t1 + kSec).probe);
  }
  SECTION("stray releases are ignored") {
    b.ReleaseProbe(t1);  // none in flight
    REQUIRE(Acquire(b, t1).probe);
    b.ReleaseProbe(t1);
    b.ReleaseProbe(t1);
    REQUIRE(b.View(t1).probes_in_flight == 0);
    for (int i = 0; i < 3; ++i) REQUIRE(Acquire(b, t1).probe);
    REQUIRE_FALSE(b.Check(t1).admit);
  }
  SECTION("a not-admitted acquire (denied elsewhere) leaves the slot free") {
    Admission a = b.Check(t1);
    REQUIRE(a.probe);  // ... but another limit denied: no OnAdmitted
    for (int i = 0; i < 3; ++i) REQUIRE(Acquire(b, t1).probe);
  }
}

TEST_CASE("breaker: rules in half-open re-open it", "[breaker]") {
  BreakerSpec spec = FullSpec();
  Breaker b(spec);
  const uint64_t fp = 42;
  for (int i = 0; i < 5; ++i) b.OnFingerprint(fp, kT0 + i);
  REQUIRE(b.View(kT0).cause == Cause::kLoop);
  const int64_t t1 = kT0 + 4 + 30 * kSec;
  Admission p = Acquire(b, t1);
  REQUIRE(p.probe);

  SECTION("the same fingerprint again: still a loop, backed off") {
    REQUIRE(b.OnFingerprint(fp, t1));
    Snapshot v = b.View(t1);
    REQUIRE(v.state == BreakerState::kOpen);
    REQUIRE(v.cause == Cause::kLoop);
    REQUIRE(v.retry_in_us == 60 * kSec);
  }
  SECTION("another fingerprint is fine") {
    REQUIRE_FALSE(b.OnFingerprint(fp + 1, t1));
    REQUIRE(b.state() == BreakerState::kHalfOpen);
  }
  SECTION("a throttle re-opens for its hint") {
    b.OnThrottled(5000, t1);
    Snapshot v = b.View(t1);
    REQUIRE(v.cause == Cause::kThrottled);
    REQUIRE(v.retry_in_us == 5 * kSec);
    REQUIRE(v.consecutive_opens == 2);
  }
  SECTION("a manual trip re-opens") {
    b.Trip(1000, t1);
    REQUIRE(b.View(t1).cause == Cause::kManual);
    b.OnOutcome(10, Outcome::kOk, true, t1);  // the old probe: ignored
    REQUIRE(b.state() == BreakerState::kOpen);
  }
  SECTION("reset closes") {
    b.Reset(t1);
    REQUIRE(b.state() == BreakerState::kClosed);
    REQUIRE(b.Check(t1).admit);
    REQUIRE_FALSE(b.Check(t1).probe);
  }
}

}  // namespace
}  // namespace brake::breaker
