// Circuit breakers over the wire, their rules: retry loops, slow calls,
// errors, runaway spend and a throttling downstream. Open times are kept
// small (a few hundred ms) and every wait polls, so the file runs in a few
// seconds. breaker_probe_test.cc has half-open probes, kill -9 and how
// breakers are shown.
#include <catch2/catch.hpp>
#include <string>

#include "tests/integration/breaker_helpers.h"
#include "tests/integration/expect.h"
#include "tests/integration/harness.h"

namespace brake::integration {
namespace {

using Catch::Matchers::Contains;

// ---------------------------------------------------------------- loop rule

TEST_CASE("a retry loop trips the task's breaker on the 6th identical call",
          "[integration][breaker]") {
  RunningDaemon d;
  Client c = d.daemon.Connect();
  SetBreaker(c, "task:*",
             R"({"loop":{"repeats":5,"window_ms":60000},"open_ms":30000})");
  const json same = {{"fingerprint", "search:foo"}};

  // Calls 1-5 pass (the 5th passes and trips); a 6th is the loop.
  for (int i = 1; i <= 5; ++i) {
    INFO("call " << i);
    CallThrough(c, "alice", "t1", same, {{"tokens", 10}, {"latency_ms", 5}});
  }
  const int64_t retry =
      RequireBreakerDenial(Acquire(c, "alice", "t1", same), "loop", "task:t1");
  CHECK(retry > 29000);
  CHECK(retry <= 30000);

  // The same fingerprint in another task (of the same or another user) is
  // no loop: each task has its own breaker and its own sightings.
  CallThrough(c, "alice", "t2", same, {{"tokens", 10}});
  CallThrough(c, "bob", "t3", same, {{"tokens", 10}});

  // The task's breaker is open: any call of that task is refused, whatever
  // its fingerprint (or none).
  RequireBreakerDenial(
      Acquire(c, "alice", "t1", {{"fingerprint", "search:bar"}}), "loop",
      "task:t1");
  RequireBreakerDenial(Acquire(c, "alice", "t1"), "loop", "task:t1");

  json status = CallOk(c, {{"op", "status"}, {"task", "t1"}});
  json b = BreakerOf(status, "task:t1");
  INFO("status: " << status.dump());
  REQUIRE(b.is_object());
  CHECK(b["state"] == "open");
  CHECK(b["cause"] == "loop");
  CHECK(b["retry_in_ms"].get<int64_t>() > 29000);
  CHECK(BreakerOf(CallOk(c, {{"op", "status"}, {"task", "t2"}}), "task:t1")
            .is_null());
  CHECK(StateOf(c, {{"task", "t2"}}, "task:t2") == "closed");
}

TEST_CASE("four identical calls of five do not trip a loop",
          "[integration][breaker]") {
  RunningDaemon d;
  Client c = d.daemon.Connect();
  SetBreaker(c, "task:*", R"({"loop":{"repeats":5,"window_ms":60000}})");
  for (int i = 1; i <= 4; ++i) {
    CallThrough(c, "alice", "t1", {{"fingerprint", "f"}}, {{"tokens", 1}});
  }
  // Other fingerprints in between are not repeats of "f".
  CallThrough(c, "alice", "t1", {{"fingerprint", "g"}}, {{"tokens", 1}});
  CallThrough(c, "alice", "t1", {{"fingerprint", "h"}}, {{"tokens", 1}});
  CHECK(StateOf(c, {{"task", "t1"}}, "task:t1") == "closed");
  // The fifth "f" passes and trips; the sixth is refused.
  CallThrough(c, "alice", "t1", {{"fingerprint", "f"}}, {{"tokens", 1}});
  RequireBreakerDenial(Acquire(c, "alice", "t1", {{"fingerprint", "f"}}),
                       "loop", "task:t1");
}

// ---------------------------------------------------------------- slow calls

TEST_CASE(
    "a slow resource opens, lets exactly the probes through, closes on fast "
    "probes and reopens with backoff on a slow one",
    "[integration][breaker]") {
  RunningDaemon d;
  Client c = d.daemon.Connect();
  SetBreaker(c, "resource:R", R"({
      "slow":{"max_rt_ms":100,"ratio":0.5,"min_calls":4,"window_ms":10000},
      "open_ms":300,"half_open_probes":2,"open_backoff":2})");
  const json on_r = {{"resource", "R"}};
  const json slow = {{"tokens", 1}, {"latency_ms", 500}, {"outcome", "ok"}};
  const json fast = {{"tokens", 1}, {"latency_ms", 10}, {"outcome", "ok"}};

  // Three slow calls are below min_calls: still closed.
  for (int i = 0; i < 3; ++i) CallThrough(c, "alice", "t1", on_r, slow);
  CHECK(StateOf(c, {{"resource", "R"}}, "resource:R") == "closed");
  // The fourth makes 4 of 4 slow: open for open_ms.
  CallThrough(c, "alice", "t1", on_r, slow);
  int64_t retry = RequireBreakerDenial(Acquire(c, "alice", "t1", on_r),
                                       "slow_calls", "resource:R");
  CHECK(retry > 0);
  CHECK(retry <= 300);
  // For every task and user that calls R, not only the one that was slow.
  RequireBreakerDenial(Acquire(c, "bob", "t9", on_r), "slow_calls",
                       "resource:R");
  // Calls that do not use R are not held.
  CallThrough(c, "alice", "t1", json::object(), fast);

  // After open_ms: half-open, exactly half_open_probes (2) acquires pass.
  AwaitHalfOpen(c, {{"resource", "R"}}, "resource:R");
  std::string probe1 = AcquireLease(c, "alice", "t1", on_r);
  std::string probe2 = AcquireLease(c, "bob", "t9", on_r);
  RequireBreakerDenial(Acquire(c, "alice", "t1", on_r), "slow_calls",
                       "resource:R");
  // One probe done ok: its slot is not handed out again.
  Commit(c, probe1, fast);
  RequireBreakerDenial(Acquire(c, "alice", "t1", on_r), "slow_calls",
                       "resource:R");
  // Both probes ok: closed, and acquires pass freely.
  Commit(c, probe2, fast);
  CHECK(StateOf(c, {{"resource", "R"}}, "resource:R") == "closed");
  for (int i = 0; i < 4; ++i) AcquireLease(c, "alice", "t1", on_r);

  // Slow again: a trip from closed opens for open_ms (no backoff yet)...
  for (int i = 0; i < 4; ++i) CallThrough(c, "alice", "t1", on_r, slow);
  retry = RequireBreakerDenial(Acquire(c, "alice", "t1", on_r), "slow_calls",
                               "resource:R");
  CHECK(retry > 0);
  CHECK(retry <= 300);
  // ...and a slow probe re-opens it for open_ms * open_backoff.
  AwaitHalfOpen(c, {{"resource", "R"}}, "resource:R");
  std::string probe = AcquireLease(c, "alice", "t1", on_r);
  Commit(c, probe, slow);
  retry = RequireBreakerDenial(Acquire(c, "alice", "t1", on_r), "slow_calls",
                               "resource:R");
  CHECK(retry > 450);
  CHECK(retry <= 600);
  json status = CallOk(c, {{"op", "status"}, {"resource", "R"}});
  json b = BreakerOf(status, "resource:R");
  INFO("status: " << status.dump());
  REQUIRE(b.is_object());
  CHECK(b["state"] == "open");
  CHECK(b["cause"] == "slow_calls");
  CHECK(b["retry_in_ms"].get<int64_t>() > 400);
  CHECK(b["retry_in_ms"].get<int64_t>() <= 600);
}

// ---------------------------------------------------------------- errors

TEST_CASE("the errors rule trips only strictly above its ratio",
          "[integration][breaker]") {
  RunningDaemon d;
  Client c = d.daemon.Connect();
  const char* rule = R"({
      "errors":{"ratio":0.5,"min_calls":4,"window_ms":10000},
      "open_ms":30000})";
  SetBreaker(c, "resource:E1", rule);
  SetBreaker(c, "resource:E2", rule);
  const json ok = {{"tokens", 1}, {"latency_ms", 5}, {"outcome", "ok"}};
  const json error = {{"tokens", 1}, {"latency_ms", 5}, {"outcome", "error"}};
  const json timeout = {
      {"tokens", 1}, {"latency_ms", 5}, {"outcome", "timeout"}};

  SECTION("2 failures of 4 is exactly the ratio: closed; 4 of 7 trips") {
    const json on = {{"resource", "E1"}};
    CallThrough(c, "alice", "t1", on, error);
    CallThrough(c, "alice", "t1", on, ok);
    CallThrough(c, "alice", "t1", on, error);
    CallThrough(c, "alice", "t1", on, ok);
    CHECK(StateOf(c, {{"resource", "E1"}}, "resource:E1") == "closed");
    CallThrough(c, "alice", "t1", on, ok);  // 2 of 5
    // 2 of 5 failed; a timeout counts as a failure too: 3 of 6 = 0.5 ...
    CallThrough(c, "alice", "t1", on, timeout);
    CHECK(StateOf(c, {{"resource", "E1"}}, "resource:E1") == "closed");
    // ... and one more makes 4 of 7 > 0.5.
    CallThrough(c, "alice", "t1", on, timeout);
    const int64_t retry = RequireBreakerDenial(Acquire(c, "alice", "t1", on),
                                               "errors", "resource:E1");
    CHECK(retry > 29000);
    CHECK(retry <= 30000);
  }

  SECTION("3 failures below min_calls do not trip; 3 of 4 does") {
    const json on = {{"resource", "E2"}};
    for (int i = 0; i < 3; ++i) CallThrough(c, "alice", "t1", on, error);
    CHECK(StateOf(c, {{"resource", "E2"}}, "resource:E2") == "closed");
    CallThrough(c, "alice", "t1", on, ok);
    RequireBreakerDenial(Acquire(c, "alice", "t1", on), "errors",
                         "resource:E2");
    // The other resource, with the same rule, is not involved.
    AcquireLease(c, "alice", "t1", {{"resource", "E1"}});
  }
}

// ---------------------------------------------------------------- spend

TEST_CASE("settling more than spend_velocity.tokens within its window trips",
          "[integration][breaker]") {
  RunningDaemon d;
  Client c = d.daemon.Connect();
  SetBreaker(c, "user:bob",
             R"({"spend_velocity":{"tokens":1000,"window_ms":60000},
                 "open_ms":30000})");
  // Reserved tokens are not spend: 5000 reserved, 600 settled.
  CallThrough(c, "bob", "t1", {{"tokens", 5000}}, {{"tokens", 600}});
  // Exactly 1000 settled is not more than 1000.
  CallThrough(c, "bob", "t2", {{"tokens", 400}}, {{"tokens", 400}});
  CHECK(StateOf(c, {{"user", "bob"}}, "user:bob") == "closed");
  CallThrough(c, "bob", "t1", {{"tokens", 1}}, {{"tokens", 1}});
  const int64_t retry = RequireBreakerDenial(Acquire(c, "bob", "t1"),
                                             "spend_velocity", "user:bob");
  CHECK(retry > 29000);
  CHECK(retry <= 30000);
  // Every task of that user is held; other users are not.
  RequireBreakerDenial(Acquire(c, "bob", "t-new"), "spend_velocity",
                       "user:bob");
  AcquireLease(c, "alice", "t5", {{"tokens", 100'000}});
}

// ---------------------------------------------------------------- throttled

TEST_CASE("a throttled outcome holds the resource for its retry_after_ms",
          "[integration][breaker]") {
  RunningDaemon d;
  Client c = d.daemon.Connect();
  const json on_r = {{"resource", "R"}};
  std::string lease = AcquireLease(c, "alice", "t1", on_r);
  AcquireLease(c, "bob", "t9", on_r);  // another user's call on R
  const int64_t start = MonoMs();
  Commit(c, lease,
         {{"tokens", 1},
          {"latency_ms", 20},
          {"outcome", "throttled"},
          {"retry_after_ms", 400}});

  int64_t retry = RequireBreakerDenial(Acquire(c, "alice", "t1", on_r),
                                       "throttled", "resource:R");
  CHECK(retry > 200);
  CHECK(retry <= 400);
  // Honoured for every task and user, not only the one that heard it.
  RequireBreakerDenial(Acquire(c, "bob", "t9", on_r), "throttled",
                       "resource:R");
  RequireBreakerDenial(Acquire(c, "carol", "t7", on_r), "throttled",
                       "resource:R");
  // Only R is held: the task itself may call elsewhere.
  AcquireLease(c, "alice", "t1", {{"resource", "other"}});
  AcquireLease(c, "alice", "t1");

  // Then R admits again (polled with real acquires: denied until then).
  std::string after;
  json last;
  const bool admitted = PollUntil(
      [&] {
        last = Acquire(c, "carol", "t7", on_r);
        if (last.value("granted", false) != true) return false;
        after = last["lease"].get<std::string>();
        return true;
      },
      3000);
  const int64_t held_ms = MonoMs() - start;
  INFO("last: " << last.dump());
  REQUIRE(admitted);
  CHECK(held_ms >= 395);
  CHECK(held_ms < 1400);
  Commit(c, after, {{"tokens", 1}, {"latency_ms", 20}});
  Commit(c, AcquireLease(c, "bob", "t9", on_r), {{"tokens", 1}});
}

TEST_CASE("a throttled call without a resource holds its task",
          "[integration][breaker]") {
  RunningDaemon d;
  Client c = d.daemon.Connect();
  std::string lease = AcquireLease(c, "alice", "t1");
  Commit(c, lease,
         {{"tokens", 1}, {"outcome", "throttled"}, {"retry_after_ms", 5000}});
  const int64_t retry =
      RequireBreakerDenial(Acquire(c, "alice", "t1"), "throttled", "task:t1");
  CHECK(retry > 4000);
  CHECK(retry <= 5000);
  AcquireLease(c, "alice", "t2");
}

}  // namespace
}  // namespace brake::integration
