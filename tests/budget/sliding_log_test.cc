#include "budget/sliding_log.h"
#include "tests/budget/limiter_helpers.h"

#include <catch2/catch.hpp>
#include <cstdint>
#include <random>
#include <utility>
#include <vector>

namespace brake {
namespace {

using limiter_test::kMs;
using limiter_test::kSec;
using limiter_test::Take;

LimitSpec Log(int64_t limit, int64_t window_ms) {
  LimitSpec s;
  s.name = "tpm";
  s.algorithm = Algorithm::kSlidingLog;
  s.limit = limit;
  s.window_ms = window_ms;
  return s;
}

TEST_CASE("sliding log: basic admission and expiry", "[budget]") {
  SlidingLog l(Log(10, 1000), 0);

  SECTION("fills to the limit, then denies until the oldest expires") {
    REQUIRE(Take(l, 4, 0));
    REQUIRE(Take(l, 6, 100 * kMs));
    Decision d = l.Check(1, 200 * kMs);
    REQUIRE(d.verdict == Verdict::kDeny);
    REQUIRE(d.retry_after_us == 800 * kMs);  // the 4 at t=0 expire at 1 s
    REQUIRE(l.Check(1, kSec - 1).verdict == Verdict::kDeny);
    REQUIRE(l.Check(4, kSec).verdict == Verdict::kAdmit);
    // 5 needs the 6 at 100 ms to expire too.
    d = l.Check(5, kSec);
    REQUIRE(d.verdict == Verdict::kDeny);
    REQUIRE(d.retry_after_us == 100 * kMs);
  }

  SECTION("too large and zero") {
    REQUIRE(l.Check(11, 0).verdict == Verdict::kTooLarge);
    REQUIRE(l.Check(10, 0).verdict == Verdict::kAdmit);
    REQUIRE(Take(l, 10, 0));
    REQUIRE(l.Check(0, 0).verdict == Verdict::kAdmit);
  }

  SECTION("entries at one instant share memory") {
    for (int i = 0; i < 10; ++i) REQUIRE(Take(l, 1, 5));
    REQUIRE(l.entries() == 1);
    REQUIRE(l.Sum(5) == 10);
    REQUIRE(l.Sum(5 + kSec) == 0);
    REQUIRE(l.entries() == 0);
  }
}

TEST_CASE("sliding log: retry_after is exact", "[budget]") {
  std::mt19937_64 rng(42);
  for (int round = 0; round < 200; ++round) {
    const int64_t limit = 1 + static_cast<int64_t>(rng() % 50);
    const int64_t window_ms = 1 + static_cast<int64_t>(rng() % 100);
    SlidingLog l(Log(limit, window_ms), 0);
    int64_t t = 0;
    for (int i = 0; i < 30; ++i) {
      t += static_cast<int64_t>(rng() % (window_ms * 200));
      Take(l, 1 + static_cast<int64_t>(rng() % limit), t);
    }
    const int64_t ask = 1 + static_cast<int64_t>(rng() % limit);
    Decision d = l.Check(ask, t);
    if (d.verdict == Verdict::kAdmit) continue;
    CAPTURE(limit, window_ms, ask, d.retry_after_us);
    REQUIRE(d.verdict == Verdict::kDeny);
    REQUIRE(d.retry_after_us > 0);
    REQUIRE(l.Check(ask, t + d.retry_after_us - 1).verdict == Verdict::kDeny);
    REQUIRE(l.Check(ask, t + d.retry_after_us).verdict == Verdict::kAdmit);
  }
}

TEST_CASE("sliding log: never more than limit in any rolling window",
          "[budget]") {
  const int64_t limit = 100;
  const int64_t window_us = 1 * kSec;
  SlidingLog l(Log(limit, 1000), 0);
  std::mt19937_64 rng(7);
  std::vector<std::pair<int64_t, int64_t>> grants;  // (t, amount)
  int64_t total = 0;
  for (int64_t t = 0; t < 10 * kSec;
       t += 1 + static_cast<int64_t>(rng() % 3000)) {
    int64_t amount = 1 + static_cast<int64_t>(rng() % 7);
    while (Take(l, amount, t)) {
      grants.emplace_back(t, amount);
      total += amount;
    }
  }
  // Brute force: the window (t - window, t] ending at each grant.
  size_t lo = 0;
  int64_t in_window = 0;
  for (size_t hi = 0; hi < grants.size(); ++hi) {
    in_window += grants[hi].second;
    while (grants[lo].first <= grants[hi].first - window_us) {
      in_window -= grants[lo].second;
      ++lo;
    }
    REQUIRE(in_window <= limit);
  }
  // A greedy caller keeps it nearly full: 10 windows' worth, minus slack.
  REQUIRE(total > 900);
  REQUIRE(total <= 1000);
}

TEST_CASE("sliding log: settle", "[budget]") {
  SlidingLog l(Log(100, 1000), 0);
  REQUIRE(Take(l, 50, 0));
  REQUIRE(Take(l, 30, 200 * kMs));

  SECTION("refund reduces the entry charged at that time") {
    l.Settle(-20, 0, 300 * kMs);
    REQUIRE(l.Sum(300 * kMs) == 60);
    // Only 30 remain at t=0, so at 1 s the 30 at 200 ms remain.
    REQUIRE(l.Sum(kSec) == 30);
  }

  SECTION("refund of a whole entry removes it") {
    l.Settle(-50, 0, 300 * kMs);
    REQUIRE(l.entries() == 1);
    l.Settle(-500, 200 * kMs, 300 * kMs);
    REQUIRE(l.entries() == 0);
    REQUIRE(l.Sum(300 * kMs) == 0);
  }

  SECTION("refund to an expired or unknown entry is dropped") {
    l.Settle(-10, 0, kSec);  // the t=0 entry has expired
    REQUIRE(l.Sum(kSec) == 30);
    l.Settle(-10, 123, kSec);
    REQUIRE(l.Sum(kSec) == 30);
  }

  SECTION("extra charge is a new entry at now and may exceed the limit") {
    l.Settle(40, 0, 500 * kMs);
    REQUIRE(l.Sum(500 * kMs) == 120);
    LimitUsage u = l.Usage(500 * kMs);
    REQUIRE(u.remaining == -20);
    REQUIRE(u.used == 120);
    REQUIRE(u.resets_in_us == kSec);
    Decision d = l.Check(1, 500 * kMs);
    REQUIRE(d.verdict == Verdict::kDeny);
    // 50 leaves at 1 s: 70 + 1 <= 100.
    REQUIRE(d.retry_after_us == 500 * kMs);
  }
}

TEST_CASE("sliding log: usage, save/restore, reset, reconfigure", "[budget]") {
  SlidingLog l(Log(100, 1000), 0);
  REQUIRE(Take(l, 50, 0));
  REQUIRE(Take(l, 30, 200 * kMs));

  SECTION("usage") {
    LimitUsage u = l.Usage(500 * kMs);
    REQUIRE(u.limit == 100);
    REQUIRE(u.used == 80);
    REQUIRE(u.remaining == 20);
    REQUIRE(u.resets_in_us == 700 * kMs);
    REQUIRE(l.Usage(2 * kSec).resets_in_us == 0);
  }

  SECTION("save/restore round trip and rejection") {
    std::vector<int64_t> saved = l.SaveState();
    REQUIRE(saved == std::vector<int64_t>{0, 50, 200 * kMs, 30});
    SlidingLog c(Log(100, 1000), 0);
    REQUIRE(c.RestoreState(saved));
    REQUIRE(c.Sum(500 * kMs) == 80);
    REQUIRE(c.SaveState() == saved);
    REQUIRE_FALSE(c.RestoreState({1}));
    REQUIRE_FALSE(c.RestoreState({5, 1, 4, 1}));  // out of order
    REQUIRE_FALSE(c.RestoreState({5, 0}));        // empty entry
    REQUIRE_FALSE(c.RestoreState({5, -3}));
    REQUIRE(c.SaveState() == saved);
    REQUIRE(c.RestoreState({}));
    REQUIRE(c.Sum(0) == 0);
  }

  SECTION("reset forgets") {
    l.Reset(300 * kMs);
    REQUIRE(l.Sum(300 * kMs) == 0);
    REQUIRE(Take(l, 100, 300 * kMs));
  }

  SECTION("reconfigure keeps the log") {
    l.Reconfigure(Log(90, 1000));
    REQUIRE(l.Sum(300 * kMs) == 80);
    REQUIRE(l.Check(11, 300 * kMs).verdict == Verdict::kDeny);
    REQUIRE(l.Check(10, 300 * kMs).verdict == Verdict::kAdmit);
    l.Reconfigure(Log(90, 100));  // a shorter window expires both at once
    REQUIRE(l.Sum(300 * kMs) == 0);
  }
}

}  // namespace
}  // namespace brake
