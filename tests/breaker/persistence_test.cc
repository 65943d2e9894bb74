// SaveState / RestoreState: breakers and their rule windows survive a
// restart; malformed state is refused without change.
#include <catch2/catch.hpp>
#include <cstdint>
#include <vector>

#include "breaker/breaker.h"
#include "tests/breaker/breaker_test_util.h"

namespace brake::breaker {
namespace {

using namespace testing;  // NOLINT

// What a restarted daemon does: a fresh breaker of the same spec, restored.
Breaker Restarted(const Breaker& b) {
  Breaker r(b.spec());
  REQUIRE(r.RestoreState(b.SaveState()));
  return r;
}

TEST_CASE("breaker: save and restore mid-state", "[breaker]") {
  Breaker b(FullSpec());

  SECTION("closed and fresh") {
    Breaker r = Restarted(b);
    REQUIRE(r.SaveState() == b.SaveState());
    REQUIRE(r.View(kT0).state == BreakerState::kClosed);
  }
  SECTION("open, for its remaining time") {
    TripSlow(b, kT0);
    Breaker r = Restarted(b);
    REQUIRE(r.SaveState() == b.SaveState());
    Admission a = r.Check(kT0 + 10 * kSec);
    REQUIRE_FALSE(a.admit);
    REQUIRE(a.cause == Cause::kSlowCalls);
    REQUIRE(a.retry_after_us == 20 * kSec);
    REQUIRE(r.TakeTransitions().empty());  // restoring is no transition
    REQUIRE(Acquire(r, kT0 + 30 * kSec).probe);
  }
  SECTION("open, with the backoff count") {
    TripSlow(b, kT0);
    int64_t t1 = kT0 + 30 * kSec;
    REQUIRE(Acquire(b, t1).probe);
    b.OnOutcome(10, Outcome::kError, true, t1);
    Breaker r = Restarted(b);
    Snapshot v = r.View(t1);
    REQUIRE(v.consecutive_opens == 2);
    REQUIRE(v.retry_in_us == 60 * kSec);
    int64_t t2 = t1 + 60 * kSec;
    REQUIRE(Acquire(r, t2).probe);
    r.OnOutcome(10, Outcome::kError, true, t2);
    REQUIRE(r.View(t2).retry_in_us == 120 * kSec);
  }
  SECTION("open time over while down: half-open on the next check") {
    b.Trip(5000, kT0);
    Breaker r = Restarted(b);
    Admission a = r.Check(kT0 + 3600 * kSec);
    REQUIRE(a.admit);
    REQUIRE(a.probe);
  }
  SECTION("half-open: probes in flight come back released") {
    TripSlow(b, kT0);
    int64_t t1 = kT0 + 30 * kSec;
    for (int i = 0; i < 3; ++i) REQUIRE(Acquire(b, t1).probe);
    b.OnOutcome(10, Outcome::kOk, true, t1);  // 1 ok, 2 in flight
    Breaker r = Restarted(b);
    Snapshot v = r.View(t1);
    REQUIRE(v.state == BreakerState::kHalfOpen);
    REQUIRE(v.probes_ok == 1);
    REQUIRE(v.probes_in_flight == 0);
    REQUIRE(Acquire(r, t1).probe);
    REQUIRE(Acquire(r, t1).probe);
    REQUIRE_FALSE(r.Check(t1).admit);
    // A lease from before the restart commits: its slot was already freed,
    // so it counts for nothing (the two new probes decide).
    r.OnOutcome(10, Outcome::kOk, true, t1);
    r.OnOutcome(10, Outcome::kOk, true, t1);
    REQUIRE(r.state() == BreakerState::kClosed);
  }
  SECTION("half-open into a spec with fewer probes: closes, never sticks") {
    TripSlow(b, kT0);
    int64_t t1 = kT0 + 30 * kSec;
    for (int i = 0; i < 3; ++i) REQUIRE(Acquire(b, t1).probe);
    b.OnOutcome(10, Outcome::kOk, true, t1);
    b.OnOutcome(10, Outcome::kOk, true, t1);  // 2 ok, 1 in flight
    BreakerSpec fewer = FullSpec();
    fewer.half_open_probes = 2;
    Breaker r(fewer);
    REQUIRE(r.RestoreState(b.SaveState()));
    REQUIRE(r.View(t1).state == BreakerState::kClosed);
    Admission a = r.Check(t1);
    REQUIRE(a.admit);
    REQUIRE_FALSE(a.probe);
    REQUIRE(r.state() == BreakerState::kClosed);
    b.Reconfigure(fewer);  // the same, live
    REQUIRE(b.Check(t1).admit);
    REQUIRE(b.state() == BreakerState::kClosed);
  }
  SECTION("the stat windows") {
    Calls(b, 9, 5000, Outcome::kOk, kT0);
    Breaker r = Restarted(b);
    REQUIRE(r.SaveState() == b.SaveState());
    Calls(r, 1, 5000, Outcome::kOk, kT0 + kSec);
    REQUIRE(r.View(kT0 + kSec).cause == Cause::kSlowCalls);
  }
  SECTION("the stat windows still slide") {
    Calls(b, 9, 5000, Outcome::kOk, kT0);
    Breaker r = Restarted(b);
    Calls(r, 1, 5000, Outcome::kOk, kT0 + 10 * kSec);
    REQUIRE(r.state() == BreakerState::kClosed);
  }
  SECTION("the error window") {
    Calls(b, 9, 10, Outcome::kError, kT0);
    Breaker r = Restarted(b);
    Calls(r, 1, 10, Outcome::kError, kT0 + kSec);
    REQUIRE(r.View(kT0 + kSec).cause == Cause::kErrors);
  }
  SECTION("the fingerprints") {
    for (int i = 0; i < 4; ++i) b.OnFingerprint(7, kT0 + i * kSec);
    Breaker r = Restarted(b);
    REQUIRE(r.SaveState() == b.SaveState());
    REQUIRE_FALSE(r.OnFingerprint(8, kT0 + 5 * kSec));
    REQUIRE(r.OnFingerprint(7, kT0 + 5 * kSec));
  }
  SECTION("the spend log") {
    b.OnSpend(1000, kT0);
    Breaker r = Restarted(b);
    r.OnSpend(1, kT0 + kSec);
    REQUIRE(r.View(kT0 + kSec).cause == Cause::kSpendVelocity);
  }
  SECTION("into a changed spec: windows are re-bucketed") {
    Calls(b, 9, 5000, Outcome::kOk, kT0);
    BreakerSpec spec = FullSpec();
    spec.slow->window_ms = 30000;
    Breaker r(spec);
    REQUIRE(r.RestoreState(b.SaveState()));
    Calls(r, 1, 5000, Outcome::kOk, kT0 + 25 * kSec);
    REQUIRE(r.View(kT0 + 25 * kSec).cause == Cause::kSlowCalls);
  }
  SECTION("into a changed spec: the windows of removed rules are dropped") {
    for (int i = 0; i < 4; ++i) b.OnFingerprint(7, kT0);
    BreakerSpec spec = FullSpec();
    spec.loop.reset();
    Breaker r(spec);
    REQUIRE(r.RestoreState(b.SaveState()));
    r.Reconfigure(FullSpec());
    for (int i = 0; i < 4; ++i) REQUIRE_FALSE(r.OnFingerprint(7, kT0));
    REQUIRE(r.OnFingerprint(7, kT0));
  }
}

TEST_CASE("breaker: malformed state is refused, changing nothing",
          "[breaker]") {
  Breaker good(FullSpec());
  Calls(good, 9, 5000, Outcome::kOk, kT0);
  good.OnSpend(10, kT0);
  good.OnFingerprint(7, kT0);
  good.OnFingerprint(7, kT0 + 1);
  good.Trip(60000, kT0);
  const std::vector<int64_t> valid = good.SaveState();

  Breaker b(FullSpec());
  Calls(b, 3, 5000, Outcome::kOk, kT0);
  const std::vector<int64_t> before = b.SaveState();

  SECTION("every truncation") {
    for (size_t n = 0; n < valid.size(); ++n) {
      CAPTURE(n);
      std::vector<int64_t> cut(valid.begin(),
                               valid.begin() + static_cast<ptrdiff_t>(n));
      REQUIRE_FALSE(b.RestoreState(cut));
    }
  }
  SECTION("trailing garbage") {
    std::vector<int64_t> s = valid;
    s.push_back(0);
    REQUIRE_FALSE(b.RestoreState(s));
  }
  SECTION("bad header fields") {
    struct Row {
      size_t index;
      int64_t value;
    };
    Row row = GENERATE(values<Row>({
        {0, 2},  // unknown version
        {0, 0},
        {1, 3},  // no such state
        {1, -1},
        {2, 7},   // no such cause
        {2, 0},   // open without a cause
        {4, -1},  // negative counts
        {5, -1},
        {6, -1},
    }));
    CAPTURE(row.index, row.value);
    std::vector<int64_t> s = valid;
    s[row.index] = row.value;
    REQUIRE_FALSE(b.RestoreState(s));
  }
  SECTION("closed with a cause") {
    std::vector<int64_t> s = valid;
    s[1] = 0;
    REQUIRE_FALSE(b.RestoreState(s));
  }
  SECTION("unordered fingerprint times") {
    // The tail is {1 hash, hash, 2 times, t, t + 1}.
    std::vector<int64_t> s = valid;
    std::swap(s[s.size() - 1], s[s.size() - 2]);
    REQUIRE_FALSE(b.RestoreState(s));
  }
  SECTION("a negative bucket count") {
    // Slow window right after the header: bucket_us, n, start, total, hits.
    std::vector<int64_t> s = valid;
    REQUIRE(s[8] == 1);
    s[10] = -9;
    REQUIRE_FALSE(b.RestoreState(s));
  }
  REQUIRE(b.SaveState() == before);
  REQUIRE(b.state() == BreakerState::kClosed);
  REQUIRE(b.RestoreState(valid));
  REQUIRE(b.SaveState() == valid);
}

}  // namespace
}  // namespace brake::breaker
