#include "budget/fixed_window.h"
#include "tests/budget/limiter_helpers.h"

#include <catch2/catch.hpp>
#include <cstdint>
#include <vector>

namespace brake {
namespace {

using limiter_test::kMs;
using limiter_test::kSec;

LimitSpec Window(int64_t limit, int64_t window_ms) {
  LimitSpec s;
  s.name = "rpm";
  s.algorithm = Algorithm::kFixedWindow;
  s.limit = limit;
  s.window_ms = window_ms;
  return s;
}

using limiter_test::Take;

TEST_CASE("fixed window: boundaries", "[budget]") {
  const int64_t w = 60 * kSec;
  FixedWindow l(Window(100, 60000), 0);

  SECTION("the count holds until t = window - 1 and resets at t = window") {
    REQUIRE(Take(l, 100, 0));
    Decision d = l.Check(1, w - 1);
    REQUIRE(d.verdict == Verdict::kDeny);
    REQUIRE(d.retry_after_us == 1);
    REQUIRE(l.count() == 100);
    REQUIRE(Take(l, 100, w));
    REQUIRE(l.window_start_us() == w);
    REQUIRE(l.count() == 100);
  }

  SECTION("windows are aligned to multiples of window since 0") {
    struct Case {
      int64_t now_us, start_us;
    };
    const Case cases[] = {
        {0, 0},   {1, 0},     {w - 1, 0},
        {w, w},   {w + 1, w}, {5 * w - 1, 4 * w},
        {-1, -w}, {-w, -w},   {-w - 1, -2 * w},
    };
    for (const Case& c : cases) {
      CAPTURE(c.now_us);
      REQUIRE(l.AlignedStartUs(c.now_us) == c.start_us);
    }
  }

  SECTION("a limiter made mid-window uses the aligned window") {
    FixedWindow m(Window(10, 60000), w + 30 * kSec);
    REQUIRE(Take(m, 10, w + 30 * kSec));
    Decision d = m.Check(1, w + 30 * kSec);
    REQUIRE(d.verdict == Verdict::kDeny);
    REQUIRE(d.retry_after_us == 30 * kSec);
    REQUIRE(m.Check(1, 2 * w - 1).verdict == Verdict::kDeny);
    REQUIRE(m.Check(1, 2 * w).verdict == Verdict::kAdmit);
  }

  SECTION("two windows may show 2 * limit across the edge") {
    REQUIRE(Take(l, 100, w - 1));
    REQUIRE(Take(l, 100, w));
  }

  SECTION("a long idle gap skips windows") {
    REQUIRE(Take(l, 60, 0));
    REQUIRE(Take(l, 100, 10 * w + 5));
    REQUIRE(l.window_start_us() == 10 * w);
  }

  SECTION("too large and zero") {
    REQUIRE(l.Check(101, 0).verdict == Verdict::kTooLarge);
    REQUIRE(Take(l, 100, 0));
    REQUIRE(l.Check(0, 0).verdict == Verdict::kAdmit);
  }
}

TEST_CASE("fixed window: settle", "[budget]") {
  const int64_t w = 1 * kSec;
  FixedWindow l(Window(10, 1000), 0);
  REQUIRE(Take(l, 8, 100));

  SECTION("refund within the window") {
    l.Settle(-5, 100, 200);
    REQUIRE(l.count() == 3);
    l.Settle(-50, 100, 200);
    REQUIRE(l.count() == 0);
  }

  SECTION("refund to a past window is dropped") {
    REQUIRE(Take(l, 4, w + 1));
    l.Settle(-5, 100, w + 2);
    REQUIRE(l.count() == 4);
  }

  SECTION("extra charge goes to the current window") {
    l.Settle(5, 100, 200);
    REQUIRE(l.count() == 13);
    LimitUsage u = l.Usage(200);
    REQUIRE(u.remaining == -3);
    REQUIRE(u.used == 13);
    REQUIRE(u.resets_in_us == w - 200);
    Decision d = l.Check(1, 200);
    REQUIRE(d.verdict == Verdict::kDeny);
    REQUIRE(d.retry_after_us == w - 200);
    l.Settle(5, 100, w);
    REQUIRE(l.count() == 5);
  }
}

TEST_CASE("fixed window: usage, save/restore, reset, reconfigure", "[budget]") {
  FixedWindow l(Window(10, 1000), 0);
  REQUIRE(Take(l, 4, 100));

  SECTION("usage") {
    LimitUsage u = l.Usage(250 * kMs);
    REQUIRE(u.limit == 10);
    REQUIRE(u.used == 4);
    REQUIRE(u.remaining == 6);
    REQUIRE(u.resets_in_us == 750 * kMs);
    REQUIRE(l.Usage(kSec).resets_in_us == 0);
  }

  SECTION("save/restore") {
    std::vector<int64_t> saved = l.SaveState();
    REQUIRE(saved == std::vector<int64_t>{0, 4});
    FixedWindow c(Window(10, 1000), 500);
    REQUIRE(c.RestoreState(saved));
    REQUIRE(c.SaveState() == saved);
    REQUIRE(c.Check(7, 600).verdict == Verdict::kDeny);
    REQUIRE_FALSE(c.RestoreState({0}));
    REQUIRE_FALSE(c.RestoreState({0, -1}));
    REQUIRE_FALSE(c.RestoreState({0, 1, 2}));
    REQUIRE(c.SaveState() == saved);
  }

  SECTION("reset") {
    l.Reset(200);
    REQUIRE(l.count() == 0);
    REQUIRE(Take(l, 10, 200));
  }

  SECTION("reconfigure keeps the count") {
    l.Reconfigure(Window(5, 1000));
    REQUIRE(l.Check(2, 200).verdict == Verdict::kDeny);
    REQUIRE(l.Check(1, 200).verdict == Verdict::kAdmit);
    l.Reconfigure(Window(5, 60000));  // longer window: still this count
    REQUIRE(l.count() == 4);
    REQUIRE(l.Usage(30 * kSec).used == 4);
    REQUIRE(l.Usage(60 * kSec).used == 0);
    REQUIRE(l.window_start_us() == 60 * kSec);
  }
}

}  // namespace
}  // namespace brake
