// Engine::Prefetch is a hint: an engine told of requests ahead (in step,
// out of step, or of names it never sees) decides exactly as one told
// nothing, through grants, denials, foreign tasks, settlements, resets and
// subjects leaving memory and coming back.
#include <catch2/catch.hpp>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "budget/engine.h"
#include "tests/budget/engine_helpers.h"

namespace brake {
namespace {

using namespace engine_test;

void ConfigurePrefetchPolicies(Engine& e) {
  e.SetPolicy("user:*", MakePolicy({BucketSpec("rps", 5, 1000, 8)}));
  e.SetPolicy("task:*", MakePolicy({BucketSpec("rps", 1, 1000, 2),
                                    ConcurrencySpec("inflight", 2)}));
}

struct Side {
  Engine engine{"L", kTtlUs};
  FakeStore stored;
  std::vector<std::string> leases;
};

std::string Describe(const Result<AcquireOutcome>& r) {
  if (!r.ok()) return "error " + r.status().ToString();
  const AcquireOutcome& o = r.value();
  std::string s = o.granted ? "granted " + o.lease : "denied";
  if (!o.granted) {
    s += " " + std::string(ReasonName(o.denial.reason)) + " " +
         std::string(o.denial.scope) + "/" + std::string(o.denial.limit) +
         " " +
         std::to_string(o.denial.retry_after_us);
  }
  for (const auto* rem : {&o.remaining.requests, &o.remaining.tokens}) {
    s += " " + (rem->has_value() ? std::to_string(**rem) : std::string("-"));
  }
  return s;
}

TEST_CASE("engine prefetch: a hint changes no decision", "[engine][prefetch]") {
  const int mode = GENERATE(0, 1, 2);  // in step, out of step, garbage
  std::mt19937 rng(static_cast<unsigned>(11 + mode));
  auto pick = [&](int n) {
    return std::uniform_int_distribution<int>(0, n - 1)(rng);
  };
  // The requests, fixed in advance so that the hinted side can look ahead.
  std::vector<AcquireRequest> reqs;
  for (int i = 0; i < 3000; ++i) {
    const int task = pick(60);
    // Task t<n> belongs to u<n % 3>; now and then another user asks.
    const int user = pick(10) == 0 ? pick(3) : task % 3;
    reqs.push_back(Req("u" + std::to_string(user), "t" + std::to_string(task)));
  }
  Side plain, hinted;
  ConfigurePrefetchPolicies(plain.engine);
  ConfigurePrefetchPolicies(hinted.engine);
  int64_t now = kT0;
  size_t announced = 0;  // hinted: requests announced so far
  std::string expected;   // the plain engine's answer
  for (size_t k = 0; k < reqs.size(); ++k) {
    now += 1 + pick(400'000);
    // The hints.
    if (mode == 0) {  // each request kPrefetchAhead ahead, in step
      while (announced <= k + Engine::kPrefetchAhead) {
        hinted.engine.Prefetch(
            announced < reqs.size() ? reqs[announced].task : "");
        ++announced;
      }
    } else if (mode == 1) {  // some ahead, some skipped, some twice
      for (int n = pick(3); n > 0; --n) {
        hinted.engine.Prefetch(reqs[(k + pick(12)) % reqs.size()].task);
      }
    } else {  // names of no request
      hinted.engine.Prefetch("x" + std::to_string(pick(1000)));
    }
    for (Side* side : {&plain, &hinted}) {
      Engine& e = side->engine;
      Result<AcquireOutcome> r = e.Acquire(reqs[k], now);
      if (!r.ok() && r.status().code() == ErrorCode::kUnavailable) {
        // Left memory: load it back, as the daemon would, and ask again.
        e.RestoreSubjects(side->stored.Load(e.MissingFor(reqs[k])), now);
        r = e.Acquire(reqs[k], now);
      }
      if (side == &plain) {
        expected = Describe(r);
      } else {
        INFO("request " << k << ": " << reqs[k].user << "/" << reqs[k].task);
        REQUIRE(Describe(r) == expected);
      }
      if (r.ok() && r.value().granted) {
        // Settle now or later; the same on both sides.
        side->leases.push_back(r.value().lease);
      }
    }
    // Settlements, resets and evictions, the same on both sides (their
    // choices drawn once).
    const int action = pick(20);
    const std::string reset_scope = "task:t" + std::to_string(pick(60));
    const int64_t idle = static_cast<int64_t>(1 + pick(5)) * kSecondUs;
    for (Side* side : {&plain, &hinted}) {
      Engine& e = side->engine;
      if (action < 8 && !side->leases.empty()) {
        const std::string id = side->leases.front();
        side->leases.erase(side->leases.begin());
        if (action < 5) {
          Commit(e, id, std::nullopt, now);
        } else {
          REQUIRE(e.Cancel(id, now).ok());
        }
      } else if (action == 8) {
        e.Reset(reset_scope, now);
      } else if (action == 9) {
        side->stored.Apply(e);  // drains
        (void)e.EvictIdle(now, idle, 1 << 20);
      }
    }
    REQUIRE(hinted.engine.resident_subjects() ==
            plain.engine.resident_subjects());
  }
  CHECK(plain.engine.evictions() > 0);
  CHECK(hinted.engine.evictions() == plain.engine.evictions());
}

}  // namespace
}  // namespace brake
