// Circuit breakers over the wire: half-open probes and their slots, an open
// breaker surviving kill -9, and how status, breaker.list and brakectl show
// them (the rules that trip them: breaker_test.cc). Open times are kept
// small and every wait polls.
#include <catch2/catch.hpp>
#include <string>

#include "tests/integration/breaker_helpers.h"
#include "tests/integration/expect.h"
#include "tests/integration/harness.h"

namespace brake::integration {
namespace {

using Catch::Matchers::Contains;

// ---------------------------------------------------------------- probes

TEST_CASE("a probe slot is released by cancel and by a closed connection",
          "[integration][breaker]") {
  RunningDaemon d;
  Client c = d.daemon.Connect();
  SetBreaker(c, "resource:P", R"({"open_ms":200,"half_open_probes":1})");
  const json on_p = {{"resource", "P"}};
  CallOk(c,
         {{"op", "breaker.trip"}, {"scope", "resource:P"}, {"open_ms", 200}});
  RequireBreakerDenial(Acquire(c, "alice", "t1", on_p), "manual", "resource:P");
  AwaitHalfOpen(c, {{"resource", "P"}}, "resource:P");

  // The one probe slot is taken...
  std::string probe = AcquireLease(c, "alice", "t1", on_p);
  RequireBreakerDenial(Acquire(c, "alice", "t1", on_p), "manual", "resource:P");
  // ... and given back by cancel (a cancelled probe is no success).
  CallOk(c, {{"op", "cancel"}, {"lease", probe}});
  CHECK(StateOf(c, {{"resource", "P"}}, "resource:P") == "half_open");

  {
    // A probe granted on a connection that then goes away...
    Client gone = d.daemon.Connect();
    AcquireLease(gone, "bob", "t2", on_p);
    RequireBreakerDenial(Acquire(c, "alice", "t1", on_p), "manual",
                         "resource:P");
  }
  // ... frees its slot too: the breaker does not stick half-open.
  std::string next;
  json last;
  const bool freed = PollUntil(
      [&] {
        last = Acquire(c, "alice", "t1", on_p);
        if (last.value("granted", false) != true) return false;
        next = last["lease"].get<std::string>();
        return true;
      },
      3000);
  INFO("last: " << last.dump());
  REQUIRE(freed);
  Commit(c, next, {{"tokens", 1}, {"latency_ms", 5}});
  CHECK(StateOf(c, {{"resource", "P"}}, "resource:P") == "closed");
  AcquireLease(c, "alice", "t1", on_p);
  AcquireLease(c, "bob", "t2", on_p);
}

TEST_CASE("a probe slot is released when its lease expires",
          "[integration][breaker]") {
  RunningDaemon d(json{{"lease_ttl_ms", 1000}});
  Client c = d.daemon.Connect();
  SetBreaker(c, "resource:P", R"({"open_ms":50,"half_open_probes":1})");
  const json on_p = {{"resource", "P"}};
  CallOk(c, {{"op", "breaker.trip"}, {"scope", "resource:P"}});
  AwaitHalfOpen(c, {{"resource", "P"}}, "resource:P");
  const int64_t start = MonoMs();
  AcquireLease(c, "alice", "t1", on_p);  // a probe nobody settles
  RequireBreakerDenial(Acquire(c, "alice", "t1", on_p), "manual", "resource:P");
  std::string next;
  const bool freed = PollUntil(
      [&] {
        json r = Acquire(c, "alice", "t1", on_p);
        if (r.value("granted", false) != true) return false;
        next = r["lease"].get<std::string>();
        return true;
      },
      4000);
  REQUIRE(freed);
  CHECK(MonoMs() - start >= 900);  // not before the lease expired
  Commit(c, next, {{"tokens", 1}, {"latency_ms", 5}});
  CHECK(StateOf(c, {{"resource", "P"}}, "resource:P") == "closed");
}

// ---------------------------------------------------------------- kill -9

TEST_CASE("an open breaker survives kill -9 for its remaining time",
          "[integration][breaker]") {
  TempDir dir;
  Daemon daemon(dir.path());
  REQUIRE(daemon.Start());
  int64_t tripped_at = 0;
  {
    Client c = daemon.Connect();
    SetBreaker(c, "task:*",
               R"({"loop":{"repeats":5,"window_ms":60000},"open_ms":60000})");
    for (int i = 0; i < 5; ++i) {
      CallThrough(c, "alice", "t1", {{"fingerprint", "x"}}, {{"tokens", 1}});
    }
    tripped_at = MonoMs();
    RequireBreakerDenial(Acquire(c, "alice", "t1", {{"fingerprint", "x"}}),
                         "loop", "task:t1");
    CallOk(
        c,
        {{"op", "breaker.trip"}, {"scope", "resource:X"}, {"open_ms", 60000}});
    RequireBreakerDenial(Acquire(c, "bob", "t2", {{"resource", "X"}}), "manual",
                         "resource:X");
  }
  SleepMs(300);
  daemon.Kill9();
  REQUIRE(daemon.Restart());
  Client c = daemon.Connect();
  const int64_t elapsed = MonoMs() - tripped_at;

  const int64_t loop_retry = RequireBreakerDenial(
      Acquire(c, "alice", "t1", {{"fingerprint", "x"}}), "loop", "task:t1");
  CHECK(loop_retry <= 60000 - elapsed + 50);
  CHECK(loop_retry > 60000 - elapsed - 2000);
  // Open for the task, whatever the fingerprint.
  RequireBreakerDenial(Acquire(c, "alice", "t1"), "loop", "task:t1");
  const int64_t manual_retry = RequireBreakerDenial(
      Acquire(c, "bob", "t2", {{"resource", "X"}}), "manual", "resource:X");
  CHECK(manual_retry <= 60000 - elapsed + 50);
  CHECK(manual_retry > 60000 - elapsed - 2000);

  json list = CallOk(c, {{"op", "breaker.list"}});
  INFO("breaker.list: " << list.dump());
  CHECK(BreakerOf(list, "task:t1").value("cause", "") == "loop");
  CHECK(BreakerOf(list, "resource:X").value("cause", "") == "manual");

  CallOk(c, {{"op", "breaker.reset"}, {"scope", "task:t1"}});
  CallOk(c, {{"op", "breaker.reset"}, {"scope", "resource:X"}});
  AcquireLease(c, "alice", "t1", {{"fingerprint", "x"}});
  AcquireLease(c, "bob", "t2", {{"resource", "X"}});
  CHECK(CallOk(c, {{"op", "breaker.list"}})["breakers"].empty());
}

// ------------------------------------------------ status, list and brakectl

TEST_CASE("status, breaker.list and brakectl show open breakers",
          "[integration][breaker]") {
  RunningDaemon d;
  Client c = d.daemon.Connect();
  const std::string& socket = d.daemon.socket_path();
  AcquireLease(c, "alice", "t1", {{"resource", "R"}});
  CHECK(CallOk(c, {{"op", "breaker.list"}})["breakers"].empty());

  json tripped = CallOk(
      c, {{"op", "breaker.trip"}, {"scope", "task:t1"}, {"open_ms", 60000}});
  INFO("breaker.trip: " << tripped.dump());
  CHECK(BreakerOf(tripped, "task:t1").value("state", "") == "open");
  CallOk(c,
         {{"op", "breaker.trip"}, {"scope", "resource:R"}, {"open_ms", 30000}});

  json list = CallOk(c, {{"op", "breaker.list"}});
  INFO("breaker.list: " << list.dump());
  REQUIRE(list["breakers"].size() == 2);
  json task = BreakerOf(list, "task:t1");
  REQUIRE(task.is_object());
  CHECK(task["state"] == "open");
  CHECK(task["cause"] == "manual");
  CHECK(task["retry_in_ms"].get<int64_t>() > 59000);
  CHECK(task["retry_in_ms"].get<int64_t>() <= 60000);
  json resource = BreakerOf(list, "resource:R");
  REQUIRE(resource.is_object());
  CHECK(resource["retry_in_ms"].get<int64_t>() <= 30000);

  json status = CallOk(c, {{"op", "status"}, {"task", "t1"}});
  INFO("status: " << status.dump());
  json shown = BreakerOf(status, "task:t1");
  REQUIRE(shown.is_object());
  CHECK(shown["state"] == "open");
  CHECK(shown["cause"] == "manual");
  CHECK(shown["retry_in_ms"].get<int64_t>() > 59000);
  CHECK(
      BreakerOf(CallOk(c, {{"op", "status"}, {"resource", "R"}}), "resource:R")
          .value("state", "") == "open");

  ProgramResult human = RunBrakectl(socket, {"breaker", "list"});
  INFO("stdout: " << human.out << "\nstderr: " << human.err);
  CHECK(human.exit_code == 0);
  CHECK_THAT(human.out, Contains("task:t1"));
  CHECK_THAT(human.out, Contains("resource:R"));
  CHECK_THAT(human.out, Contains("manual"));

  ProgramResult as_json = RunBrakectl(socket, {"--json", "breaker", "list"});
  CHECK(as_json.exit_code == 0);
  json parsed = json::parse(as_json.out, nullptr, false);
  REQUIRE(parsed.is_object());
  CHECK(BreakerOf(parsed, "task:t1").value("cause", "") == "manual");

  // brakectl steers them too.
  ProgramResult reset = RunBrakectl(socket, {"breaker", "reset", "task:t1"});
  INFO("reset stderr: " << reset.err);
  CHECK(reset.exit_code == 0);
  AcquireLease(c, "alice", "t1");
  ProgramResult trip =
      RunBrakectl(socket, {"breaker", "trip", "user:bob", "--open-ms", "5000"});
  INFO("trip stderr: " << trip.err);
  CHECK(trip.exit_code == 0);
  RequireBreakerDenial(Acquire(c, "bob", "t2"), "manual", "user:bob");
  ProgramResult after = RunBrakectl(socket, {"breaker", "list"});
  CHECK(after.exit_code == 0);
  CHECK_THAT(after.out, Contains("user:bob"));
  CHECK_THAT(after.out, !Contains("task:t1"));
}

}  // namespace
}  // namespace brake::integration
