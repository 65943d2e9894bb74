// closed -> open by each rule, with the exact boundaries.
#include <catch2/catch.hpp>
#include <cstdint>
#include <string>
#include <vector>

#include "breaker/breaker.h"
#include "breaker/fingerprint.h"
#include "tests/breaker/breaker_test_util.h"

namespace brake::breaker {
namespace {

using namespace testing;  // NOLINT

TEST_CASE("breaker: starts closed and admits", "[breaker]") {
  Breaker b(FullSpec());
  Admission a = b.Check(kT0);
  REQUIRE(a.admit);
  REQUIRE_FALSE(a.probe);
  REQUIRE(a.cause == Cause::kNone);
  REQUIRE(a.retry_after_us == 0);
  Snapshot v = b.View(kT0);
  REQUIRE(v.state == BreakerState::kClosed);
  REQUIRE(v.cause == Cause::kNone);
  REQUIRE(v.retry_in_us == 0);
  REQUIRE(b.TakeTransitions().empty());
}

struct RatioRow {
  double ratio;
  int64_t min_calls;
  int hits;    // slow (or failed) calls, recorded last
  int misses;  // fast (or ok) calls, recorded first
  bool trips;
};

// Sentinel: at least min_calls, and the share strictly greater than ratio.
const RatioRow kRatioRows[] =
    {
        {0.5, 10, 5, 5, false},  // exactly at the threshold
        {0.5, 10, 6, 4, true},   // just above
        {0.5, 10, 9, 0, false},  // min_calls - 1, all bad
        {0.5, 10, 10, 0, true},  // min_calls, all bad
        {0.3, 10, 3, 7, false},  // 0.3 is not exact in binary; still equal
        {0.3, 10, 4, 6, true},   {0.1, 10, 1, 9, false},
        {0.7, 10, 7, 3, false},  {0.7, 10, 8, 2, true},
        {0.0, 10, 1, 9, true},  // ratio 0: any bad call, once min_calls seen
        {0.0, 10, 0, 10, false}, {1.0, 10, 10, 0, false},  // ratio 1: never
        {0.5, 1, 1, 0, true},    {0.5, 3, 2, 1, true},     // 2 of 3 > 0.5
};

TEST_CASE("breaker: slow-call ratio boundaries", "[breaker]") {
  for (const RatioRow& row : kRatioRows) {
    CAPTURE(row.ratio, row.min_calls, row.hits, row.misses);
    BreakerSpec spec;
    spec.slow = SlowRule{2000, row.ratio, row.min_calls, 10000};
    Breaker b(spec);
    Calls(b, row.misses, 2000, Outcome::kOk, kT0);  // == max_rt: not slow
    REQUIRE(b.state() == BreakerState::kClosed);
    Calls(b, row.hits, 2001, Outcome::kOk, kT0);
    REQUIRE((b.state() == BreakerState::kOpen) == row.trips);
    if (row.trips) REQUIRE(b.View(kT0).cause == Cause::kSlowCalls);
  }
}

TEST_CASE("breaker: error ratio boundaries", "[breaker]") {
  for (const RatioRow& row : kRatioRows) {
    CAPTURE(row.ratio, row.min_calls, row.hits, row.misses);
    BreakerSpec spec;
    spec.errors = ErrorRule{row.ratio, row.min_calls, 10000};
    Breaker b(spec);
    Calls(b, row.misses, 100, Outcome::kOk, kT0);
    REQUIRE(b.state() == BreakerState::kClosed);
    for (int i = 0; i < row.hits; ++i) {
      b.OnOutcome(100, i % 2 ? Outcome::kError : Outcome::kTimeout, false, kT0);
    }
    REQUIRE((b.state() == BreakerState::kOpen) == row.trips);
    if (row.trips) REQUIRE(b.View(kT0).cause == Cause::kErrors);
  }
}

TEST_CASE("breaker: what the stat rules count", "[breaker]") {
  SECTION("an unknown latency is not counted by the slow rule") {
    BreakerSpec spec;
    spec.slow = SlowRule{2000, 0.0, 1, 10000};
    Breaker b(spec);
    Calls(b, 20, -1, Outcome::kOk, kT0);
    REQUIRE(b.state() == BreakerState::kClosed);
    Calls(b, 1, 2001, Outcome::kOk, kT0);
    REQUIRE(b.state() == BreakerState::kOpen);
  }
  SECTION("throttled is a call but not an error") {
    Breaker b(ErrorSpec());
    Calls(b, 10, 100, Outcome::kThrottled, kT0);
    REQUIRE(b.state() == BreakerState::kClosed);
    Calls(b, 10, 100, Outcome::kError, kT0);  // 10 of 20: equal, no trip
    REQUIRE(b.state() == BreakerState::kClosed);
    Calls(b, 1, 100, Outcome::kError, kT0);  // 11 of 21
    REQUIRE(b.state() == BreakerState::kOpen);
  }
  SECTION("a slow error trips the slow rule first") {
    BreakerSpec spec = SlowSpec();
    spec.errors = ErrorRule{0.5, 10, 10000};
    Breaker b(spec);
    Calls(b, 10, 5000, Outcome::kTimeout, kT0);
    REQUIRE(b.View(kT0).cause == Cause::kSlowCalls);
  }
  SECTION("outcomes arriving while open are not counted") {
    Breaker b(SlowSpec());
    TripSlow(b, kT0);
    std::vector<int64_t> saved = b.SaveState();
    Calls(b, 50, 5000, Outcome::kError, kT0 + kSec);
    REQUIRE(b.SaveState() == saved);
  }
}

TEST_CASE("breaker: the stat window slides", "[breaker]") {
  // window 10 s in ten 1 s buckets; kT0 is on a bucket boundary.
  Breaker b(SlowSpec());
  Calls(b, 9, 5000, Outcome::kOk, kT0);
  SECTION("still counted 9.999999 s later") {
    Calls(b, 1, 5000, Outcome::kOk, kT0 + 10 * kSec - 1);
    REQUIRE(b.state() == BreakerState::kOpen);
  }
  SECTION("expired 10 s later") {
    Calls(b, 1, 5000, Outcome::kOk, kT0 + 10 * kSec);
    REQUIRE(b.state() == BreakerState::kClosed);
    Calls(b, 8, 5000, Outcome::kOk, kT0 + 10 * kSec);
    REQUIRE(b.state() == BreakerState::kClosed);  // 9 of 9 < min_calls
    Calls(b, 1, 5000, Outcome::kOk, kT0 + 11 * kSec);
    REQUIRE(b.state() == BreakerState::kOpen);
  }
  SECTION("old fast calls expire and stop diluting the ratio") {
    Breaker c(SlowSpec());
    Calls(c, 10, 10, Outcome::kOk, kT0);
    Calls(c, 10, 5000, Outcome::kOk, kT0 + 5 * kSec);  // 10 of 20
    REQUIRE(c.state() == BreakerState::kClosed);
    Calls(c, 1, 5000, Outcome::kOk, kT0 + 10 * kSec);  // 11 of 11
    REQUIRE(c.state() == BreakerState::kOpen);
  }
}

TEST_CASE("breaker: the trip is reported with its figures", "[breaker]") {
  Breaker b(SlowSpec());
  Calls(b, 4, 100, Outcome::kOk, kT0);
  Calls(b, 6, 2500, Outcome::kOk, kT0);
  std::vector<Transition> t = b.TakeTransitions();
  REQUIRE(t.size() == 1);
  REQUIRE(t[0].from == BreakerState::kClosed);
  REQUIRE(t[0].to == BreakerState::kOpen);
  REQUIRE(t[0].cause == Cause::kSlowCalls);
  REQUIRE(t[0].at_us == kT0);
  REQUIRE(t[0].figures.find("6 of 10 calls slower than 2000 ms") !=
          std::string::npos);
  REQUIRE(t[0].figures.find("open for 30000 ms") != std::string::npos);
  REQUIRE(b.TakeTransitions().empty());

  Admission a = b.Check(kT0 + kSec);
  REQUIRE_FALSE(a.admit);
  REQUIRE(a.cause == Cause::kSlowCalls);
  REQUIRE(a.retry_after_us == 29 * kSec);
}

TEST_CASE("breaker: spend velocity", "[breaker]") {
  BreakerSpec spec;
  spec.spend_velocity = SpendVelocityRule{1000, 60000};  // 6 s buckets
  Breaker b(spec);

  SECTION("exactly the limit does not trip; one more does") {
    b.OnSpend(600, kT0);
    b.OnSpend(400, kT0 + 30 * kSec);
    REQUIRE(b.state() == BreakerState::kClosed);
    b.OnSpend(1, kT0 + 59 * kSec);
    REQUIRE(b.state() == BreakerState::kOpen);
    Snapshot v = b.View(kT0 + 59 * kSec);
    REQUIRE(v.cause == Cause::kSpendVelocity);
    REQUIRE(v.retry_in_us == 30 * kSec);
    std::vector<Transition> t = b.TakeTransitions();
    REQUIRE(t.size() == 1);
    REQUIRE(t[0].figures.find("1001 tokens settled within 60000 ms") !=
            std::string::npos);
  }
  SECTION("spend older than the window does not count") {
    b.OnSpend(600, kT0);
    b.OnSpend(401, kT0 + 60 * kSec);
    REQUIRE(b.state() == BreakerState::kClosed);
  }
  SECTION("one huge settlement trips; zero and negative are ignored") {
    b.OnSpend(0, kT0);
    b.OnSpend(-5000, kT0);
    REQUIRE(b.state() == BreakerState::kClosed);
    b.OnSpend(1001, kT0);
    REQUIRE(b.state() == BreakerState::kOpen);
  }
  SECTION("sums saturate") {
    b.OnSpend(INT64_MAX, kT0);
    b.OnSpend(INT64_MAX, kT0);
    REQUIRE(b.state() == BreakerState::kOpen);
  }
}

TEST_CASE("breaker: loop detection", "[breaker]") {
  BreakerSpec spec;
  spec.loop = LoopRule{5, 60000};
  Breaker b(spec);
  const uint64_t a = HashFingerprint("search(q=foo)");
  const uint64_t c = HashFingerprint("search(q=bar)");

  SECTION("the n-th sighting trips, the (n-1)-th does not") {
    for (int i = 0; i < 4; ++i) {
      REQUIRE_FALSE(b.OnFingerprint(a, kT0 + i * kSec));
    }
    REQUIRE(b.state() == BreakerState::kClosed);
    REQUIRE(b.OnFingerprint(a, kT0 + 4 * kSec));
    Snapshot v = b.View(kT0 + 4 * kSec);
    REQUIRE(v.state == BreakerState::kOpen);
    REQUIRE(v.cause == Cause::kLoop);
  }
  SECTION("as the engine calls it: with repeats 5 the 6th call is refused") {
    for (int i = 1; i <= 6; ++i) {
      int64_t now = kT0 + i * kMs;
      Admission adm = Acquire(b, now);
      CAPTURE(i);
      if (i <= 5) {
        REQUIRE(adm.admit);
        REQUIRE(b.OnFingerprint(a, now) == (i == 5));
      } else {
        REQUIRE_FALSE(adm.admit);
        REQUIRE(adm.cause == Cause::kLoop);
      }
    }
  }
  SECTION("other fingerprints are unaffected") {
    for (int i = 0; i < 4; ++i) {
      REQUIRE_FALSE(b.OnFingerprint(a, kT0 + i));
      REQUIRE_FALSE(b.OnFingerprint(c, kT0 + i));
    }
    REQUIRE(b.state() == BreakerState::kClosed);
  }
  SECTION("sightings outside the window do not count") {
    REQUIRE_FALSE(b.OnFingerprint(a, kT0));
    for (int i = 1; i <= 3; ++i) REQUIRE_FALSE(b.OnFingerprint(a, kT0 + i));
    // The first sighting stops counting at kT0 + 60 s.
    REQUIRE_FALSE(b.OnFingerprint(a, kT0 + 60 * kSec));
    REQUIRE(b.state() == BreakerState::kClosed);
    REQUIRE(b.OnFingerprint(a, kT0 + 60 * kSec));
  }
  SECTION("just inside the window counts") {
    REQUIRE_FALSE(b.OnFingerprint(a, kT0));
    for (int i = 1; i <= 3; ++i) REQUIRE_FALSE(b.OnFingerprint(a, kT0 + i));
    REQUIRE(b.OnFingerprint(a, kT0 + 60 * kSec - 1));
  }
  SECTION("another task's breaker is unaffected") {
    Breaker other(spec);
    for (int i = 0; i < 5; ++i) b.OnFingerprint(a, kT0 + i);
    REQUIRE(b.state() == BreakerState::kOpen);
    REQUIRE_FALSE(other.OnFingerprint(a, kT0 + 10));
    REQUIRE(other.Check(kT0 + 10).admit);
  }
  SECTION("without a loop rule nothing trips") {
    Breaker none{BreakerSpec{}};
    for (int i = 0; i < 100; ++i) REQUIRE_FALSE(none.OnFingerprint(a, kT0));
    REQUIRE(none.state() == BreakerState::kClosed);
  }
}

TEST_CASE("breaker: throttled honours retry_after", "[breaker]") {
  Breaker b(SlowSpec());
  b.OnThrottled(5000, kT0);
  Admission a = b.Check(kT0);
  REQUIRE_FALSE(a.admit);
  REQUIRE(a.cause == Cause::kThrottled);
  REQUIRE(a.retry_after_us == 5 * kSec);

  SECTION("a shorter hint does not shorten it") {
    b.OnThrottled(1000, kT0 + kSec);
    REQUIRE(b.View(kT0 + kSec).retry_in_us == 4 * kSec);
    REQUIRE(b.TakeTransitions().size() == 1);
  }
  SECTION("a longer hint extends it, reported as open -> open") {
    b.TakeTransitions();
    b.OnThrottled(10000, kT0 + kSec);
    REQUIRE(b.View(kT0 + kSec).retry_in_us == 10 * kSec);
    std::vector<Transition> t = b.TakeTransitions();
    REQUIRE(t.size() == 1);
    REQUIRE(t[0].from == BreakerState::kOpen);
    REQUIRE(t[0].to == BreakerState::kOpen);
    REQUIRE(t[0].figures.find("retry after 10000 ms") != std::string::npos);
  }
  SECTION("half-open exactly when the hint runs out") {
    REQUIRE_FALSE(b.Check(kT0 + 5 * kSec - 1).admit);
    Admission p = b.Check(kT0 + 5 * kSec);
    REQUIRE(p.admit);
    REQUIRE(p.probe);
  }
  SECTION("no hint: the spec's open_ms") {
    Breaker c(SlowSpec());
    c.OnThrottled(0, kT0);
    REQUIRE(c.View(kT0).retry_in_us == 30 * kSec);
  }
  SECTION("a throttle does not shorten a longer open of another cause") {
    Breaker c(SlowSpec());
    TripSlow(c, kT0);
    c.OnThrottled(2000, kT0);
    Snapshot v = c.View(kT0);
    REQUIRE(v.cause == Cause::kSlowCalls);
    REQUIRE(v.retry_in_us == 30 * kSec);
  }
}

TEST_CASE("breaker: manual trip and reset", "[breaker]") {
  Breaker b(SlowSpec());
  SECTION("trip for a given time, then reset") {
    b.Trip(60000, kT0);
    Admission a = b.Check(kT0);
    REQUIRE_FALSE(a.admit);
    REQUIRE(a.cause == Cause::kManual);
    REQUIRE(a.retry_after_us == 60 * kSec);
    b.Reset(kT0 + kSec);
    REQUIRE(b.Check(kT0 + kSec).admit);
    std::vector<Transition> t = b.TakeTransitions();
    REQUIRE(t.size() == 2);
    REQUIRE(t[0].cause == Cause::kManual);
    REQUIRE(t[1].from == BreakerState::kOpen);
    REQUIRE(t[1].to == BreakerState::kClosed);
    REQUIRE(t[1].cause == Cause::kNone);
  }
  SECTION("open_ms <= 0 takes the spec's") {
    b.Trip(0, kT0);
    REQUIRE(b.View(kT0).retry_in_us == 30 * kSec);
  }
  SECTION("an admin's shorter trip replaces a longer open") {
    b.OnThrottled(600000, kT0);
    b.Trip(1000, kT0);
    Snapshot v = b.View(kT0);
    REQUIRE(v.cause == Cause::kManual);
    REQUIRE(v.retry_in_us == kSec);
  }
  SECTION("reset clears the windows and the backoff") {
    Calls(b, 9, 5000, Outcome::kOk, kT0);
    b.Reset(kT0);
    REQUIRE(b.TakeTransitions().empty());  // closed -> closed is no change
    Calls(b, 9, 5000, Outcome::kOk, kT0);
    REQUIRE(b.state() == BreakerState::kClosed);
  }
  SECTION("a huge trip saturates") {
    b.Trip(INT64_MAX, kT0);
    Snapshot v = b.View(kT0);
    REQUIRE(v.open_until_us == INT64_MAX);
    REQUIRE(v.retry_in_us == INT64_MAX - kT0);
    REQUIRE_FALSE(b.Check(INT64_MAX - 1).admit);
  }
}

TEST_CASE("breaker: reconfigure keeps the state", "[breaker]") {
  Breaker b(SlowSpec());
  TripSlow(b, kT0);
  BreakerSpec spec = SlowSpec();
  spec.open_ms = 1000;
  spec.slow->window_ms = 20000;
  b.Reconfigure(spec);
  Snapshot v = b.View(kT0 + kSec);
  REQUIRE(v.state == BreakerState::kOpen);
  REQUIRE(v.retry_in_us == 29 * kSec);

  SECTION("a window survives a new width") {
    Breaker c(SlowSpec());
    Calls(c, 9, 5000, Outcome::kOk, kT0);
    c.Reconfigure(spec);
    Calls(c, 1, 5000, Outcome::kOk, kT0 + 15 * kSec);  // 20 s window now
    REQUIRE(c.state() == BreakerState::kOpen);
  }
  SECTION("removing a rule clears its window") {
    Breaker c(SlowSpec());
    Calls(c, 9, 5000, Outcome::kOk, kT0);
    c.Reconfigure(BreakerSpec{});
    c.Reconfigure(SlowSpec());
    Calls(c, 1, 5000, Outcome::kOk, kT0);
    REQUIRE(c.state() == BreakerState::kClosed);
  }
}

}  // namespace
}  // namespace brake::breaker
