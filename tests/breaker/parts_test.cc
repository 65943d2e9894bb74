// The breaker's parts: spec validation and names, the fingerprint hash, the
// rolling counter and the loop detector.
#include <catch2/catch.hpp>
#include <cstdint>
#include <string>
#include <vector>

#include "breaker/breaker_spec.h"
#include "breaker/fingerprint.h"
#include "breaker/loop_detector.h"
#include "breaker/rolling_counter.h"
#include "tests/breaker/breaker_test_util.h"

namespace brake::breaker {
namespace {

using namespace testing;  // NOLINT

TEST_CASE("breaker: fingerprint hash is FNV-1a 64", "[breaker]") {
  static_assert(HashFingerprint("") == 0xcbf29ce484222325ULL);
  REQUIRE(HashFingerprint("a") == 0xaf63dc4c8601ec8cULL);
  REQUIRE(HashFingerprint("foobar") == 0x85944171f73967e8ULL);
  REQUIRE(HashFingerprint("search(q=foo)") != HashFingerprint("search(q=fop)"));
}

TEST_CASE("breaker: wire names", "[breaker]") {
  REQUIRE(StateName(BreakerState::kClosed) == "closed");
  REQUIRE(StateName(BreakerState::kOpen) == "open");
  REQUIRE(StateName(BreakerState::kHalfOpen) == "half_open");
  const Cause causes[] = {Cause::kLoop,      Cause::kSlowCalls,
                          Cause::kErrors,    Cause::kSpendVelocity,
                          Cause::kThrottled, Cause::kManual};
  const char* names[] = {"loop",           "slow_calls", "errors",
                         "spend_velocity", "throttled",  "manual"};
  for (size_t i = 0; i < std::size(causes); ++i) {
    REQUIRE(CauseName(causes[i]) == names[i]);
    Cause back = Cause::kNone;
    REQUIRE(ParseCause(names[i], &back));
    REQUIRE(back == causes[i]);
  }
  Outcome o = Outcome::kOk;
  REQUIRE(ParseOutcome("timeout", &o));
  REQUIRE(o == Outcome::kTimeout);
  REQUIRE(OutcomeName(Outcome::kThrottled) == "throttled");
  REQUIRE_FALSE(ParseOutcome("cancelled", &o));
  REQUIRE(o == Outcome::kTimeout);
  BreakerState st = BreakerState::kClosed;
  REQUIRE(ParseState("half_open", &st));
  REQUIRE(st == BreakerState::kHalfOpen);
  REQUIRE_FALSE(ParseState("half-open", &st));
}

TEST_CASE("breaker: spec validation", "[breaker]") {
  REQUIRE(ValidateBreakerSpec(BreakerSpec{}).ok());
  REQUIRE(ValidateBreakerSpec(FullSpec()).ok());

  struct Row {
    void (*mutate)(BreakerSpec*);
    const char* field;
  };
  Row row = GENERATE(values<Row>({
      {[](BreakerSpec* s) { s->loop->repeats = 1; }, "loop.repeats"},
      {[](BreakerSpec* s) { s->loop->window_ms = 0; }, "loop.window_ms"},
      {[](BreakerSpec* s) { s->slow->max_rt_ms = -1; }, "slow.max_rt_ms"},
      {[](BreakerSpec* s) { s->slow->ratio = 1.01; }, "slow.ratio"},
      {[](BreakerSpec* s) { s->slow->ratio = -0.1; }, "slow.ratio"},
      {[](BreakerSpec* s) { s->slow->min_calls = 0; }, "slow.min_calls"},
      {[](BreakerSpec* s) { s->slow->window_ms = kMaxWindowMs + 1; },
       "slow.window_ms"},
      {[](BreakerSpec* s) { s->errors->ratio = 0.0 / 0.0; }, "errors.ratio"},
      {[](BreakerSpec* s) { s->errors->min_calls = -3; }, "errors.min_calls"},
      {[](BreakerSpec* s) { s->spend_velocity->tokens = 0; },
       "spend_velocity.tokens"},
      {[](BreakerSpec* s) { s->spend_velocity->window_ms = -1; },
       "spend_velocity.window_ms"},
      {[](BreakerSpec* s) { s->open_ms = 0; }, "open_ms"},
      {[](BreakerSpec* s) { s->open_backoff = 0.5; }, "open_backoff"},
      {[](BreakerSpec* s) { s->max_open_ms = 29999; }, "max_open_ms"},
      {[](BreakerSpec* s) { s->half_open_probes = 0; }, "half_open_probes"},
  }));
  BreakerSpec spec = FullSpec();
  row.mutate(&spec);
  Status st = ValidateBreakerSpec(spec);
  REQUIRE_FALSE(st.ok());
  REQUIRE(st.code() == ErrorCode::kBadRequest);
  CAPTURE(st.message());
  REQUIRE(st.message().rfind(std::string(row.field) + ": ", 0) == 0);
}

TEST_CASE("breaker: rolling counter", "[breaker]") {
  RollingCounter c(10000);  // ten 1 s buckets
  REQUIRE(c.bucket_us() == kSec);

  SECTION("sums the current bucket and the nine before it") {
    c.Add(kT0, 1, 1);
    c.Add(kT0 + 5 * kSec, 2, 0);
    REQUIRE(c.Sum(kT0 + 10 * kSec - 1).total == 3);
    REQUIRE(c.Sum(kT0 + 10 * kSec).total == 2);
    REQUIRE(c.Sum(kT0 + 10 * kSec).hits == 0);
    REQUIRE(c.Sum(kT0 + 15 * kSec).total == 0);
    c.Add(kT0 + 20 * kSec, 1, 0);  // reuses a slot
    REQUIRE(c.Sum(kT0 + 20 * kSec).total == 1);
  }
  SECTION("saturates and ignores negative amounts") {
    c.Add(kT0, INT64_MAX, 0);
    c.Add(kT0 + kSec, INT64_MAX, -5);
    REQUIRE(c.Sum(kT0 + kSec).total == INT64_MAX);
    REQUIRE(c.Sum(kT0 + kSec).hits == 0);
  }
  SECTION("a window that does not divide by ten rounds the bucket up") {
    RollingCounter d(15);
    REQUIRE(d.bucket_us() == 1500);
    RollingCounter e(1);
    REQUIRE(e.bucket_us() == 100);
  }
  SECTION("disabled by a window <= 0") {
    RollingCounter d(0);
    d.Add(kT0, 5, 5);
    REQUIRE(d.Sum(kT0).total == 0);
  }
  SECTION("save, parse, and re-bucket") {
    c.Add(kT0, 4, 1);
    c.Add(kT0 + 3 * kSec, 6, 2);
    std::vector<int64_t> s;
    c.AppendState(&s);
    REQUIRE(s ==
            std::vector<int64_t>{kSec, 2, kT0, 4, 1, kT0 + 3 * kSec, 6, 2});
    RollingCounter wide(60000);  // 6 s buckets
    size_t pos = 0;
    REQUIRE(wide.ParseState(s, &pos));
    REQUIRE(pos == s.size());
    RollingCounter::Sums sums = wide.Sum(kT0 + 3 * kSec);
    REQUIRE(sums.total == 10);
    REQUIRE(sums.hits == 3);
    c.SetWindow(60000);
    REQUIRE(c.Sum(kT0 + 50 * kSec).total == 10);
  }
  SECTION("malformed state") {
    const std::vector<std::vector<int64_t>> bad = {
        {},
        {kSec},
        {kSec, 1, kT0, 1},                // short
        {kSec, 11},                       // too many buckets
        {-1, 0},                          // negative width
        {0, 1, kT0, 1, 1},                // disabled with buckets
        {kSec, 2, kT0, 1, 1, kT0, 1, 1},  // not increasing
        {kSec, 1, kT0, 1, -1},            // negative sum
    };
    for (const auto& s : bad) {
      size_t pos = 0;
      REQUIRE_FALSE(c.ParseState(s, &pos));
      REQUIRE(pos == 0);
    }
  }
}

TEST_CASE("breaker: loop detector memory is bounded", "[breaker]") {
  LoopDetector d;
  const int64_t window = 60 * kSec;

  SECTION("at most `repeats` sightings per fingerprint") {
    for (int i = 0; i < 100; ++i) d.Record(1, kT0 + i, 5, window);
    REQUIRE(d.entries() == 5);
    REQUIRE(d.Record(1, kT0 + 100, 5, window) == 5);
  }
  SECTION("distinct fingerprints are capped, the most recent kept") {
    const int64_t n = 3 * LoopDetector::kMaxFingerprints;
    for (int64_t i = 0; i < n; ++i) {
      d.Record(static_cast<uint64_t>(i), kT0 + i, 5, window);
    }
    REQUIRE(d.distinct() <= LoopDetector::kMaxFingerprints);
    REQUIRE(d.Count(static_cast<uint64_t>(n - 1), kT0 + n, window) == 1);
    REQUIRE(d.Count(0, kT0 + n, window) == 0);
  }
  SECTION("a looping fingerprint survives a flood of others") {
    for (int i = 0; i < 4; ++i) d.Record(999999, kT0 + i, 5, window);
    for (int64_t i = 0;
         i < 2 * static_cast<int64_t>(LoopDetector::kMaxFingerprints); ++i) {
      d.Record(static_cast<uint64_t>(i), kT0 + 4, 5, window);
      if (i % 100 == 0) d.Record(999999, kT0 + 4, 5, window);
    }
    REQUIRE(d.Count(999999, kT0 + 5, window) == 5);
  }
  SECTION("expired fingerprints go first") {
    for (size_t i = 0; i < LoopDetector::kMaxFingerprints; ++i) {
      d.Record(i, kT0, 5, window);
    }
    d.Record(777777777, kT0 + window, 5, window);
    REQUIRE(d.distinct() == 1);
    REQUIRE(d.entries() == 1);
  }
  SECTION("total sightings are capped") {
    for (int64_t i = 0; i < 10000; ++i) {
      for (int k = 0; k < 3; ++k) {
        d.Record(static_cast<uint64_t>(i), kT0 + i, 1000, window);
      }
    }
    REQUIRE(d.entries() <= LoopDetector::kMaxEntries);
  }
  SECTION("a clock step back keeps sightings ordered") {
    d.Record(1, kT0 + 10, 5, window);
    d.Record(1, kT0, 5, window);
    std::vector<int64_t> s;
    d.AppendState(&s);
    REQUIRE(s == std::vector<int64_t>{1, 1, 2, kT0 + 10, kT0 + 10});
  }
  SECTION("save and parse") {
    d.Record(5, kT0, 3, window);
    d.Record(3, kT0 + 1, 3, window);
    d.Record(5, kT0 + 2, 3, window);
    std::vector<int64_t> s;
    d.AppendState(&s);
    REQUIRE(s == std::vector<int64_t>{2, 3, 1, kT0 + 1, 5, 2, kT0, kT0 + 2});
    LoopDetector e;
    size_t pos = 0;
    REQUIRE(e.ParseState(s, &pos));
    REQUIRE(pos == s.size());
    REQUIRE(e.entries() == 3);
    REQUIRE(e.Record(5, kT0 + 3, 3, window) == 3);
    REQUIRE(e.entries() == 4);
    const std::vector<std::vector<int64_t>> bad = {
        {},
        {1},
        {1, 5},
        {1, 5, 0},
        {1, 5, 2, kT0},
        {-1},
        {2, 5, 1, kT0, 5, 1, kT0},  // the same hash twice
    };
    for (const auto& b : bad) {
      size_t p = 0;
      REQUIRE_FALSE(e.ParseState(b, &p));
    }
    REQUIRE(e.entries() == 4);
  }
}

}  // namespace
}  // namespace brake::breaker
