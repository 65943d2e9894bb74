// Storage failures, regression tests: two daemon bugs that
// storage_failure_test.cc's scenarios found, each kept as a case of its own
// (faults from storage_faults.h).
#include <sys/resource.h>

#include <catch2/catch.hpp>
#include <string>

#include "tests/integration/expect.h"
#include "tests/integration/harness.h"
#include "tests/integration/storage_faults.h"

namespace brake::integration {
namespace {

// Regression test (a daemon bug this test found, since fixed): after a
// commit whose WAL frames were written but whose fsync failed, the storage
// thread reopens the database, and the new connection reads those frames as
// a committed transaction. The retry (the failed batch again, idempotent)
// then changes no row, so SQLite commits it without writing or syncing
// anything, Store::Apply returns ok and the daemon logs "storage recovered"
// and serves acquires again, while every fsync still fails: the failed batch
// is reported committed although no fsync of it ever succeeded (after a real
// EIO the kernel may have dropped those pages). brake_storage_ok flaps
// between 0 and 1 every 100 ms for as long as the fault lasts.
TEST_CASE(
    "storage failure: while every fsync fails no transaction is reported "
    "committed",
    "[integration][storage_failure]") {
  const std::string strace = FindStrace();
  if (strace.empty()) return;
  RunningDaemon r;
  Daemon& d = r.daemon;
  StraceFault f(strace, d, r.dir.File("strace.log"));
  Client c = d.Connect();
  AcquireLease(c, "alice", "t1", {{"tokens", 10}});
  if (!f.fault.begin()) return;
  json first = c.Call(
      {{"op", "acquire"}, {"user", "alice"}, {"task", "t1"}, {"tokens", 5}});
  INFO("first acquire under the fault: " << first.dump());
  REQUIRE(IsUnavailable(first));
  const double batches = Metric(c, "brake_storage_batches_total");
  int flaps = 0;
  for (int i = 0; i < 12; ++i) {  // 600 ms: six retries
    SleepMs(50);
    if (Metric(c, "brake_storage_ok") != 0) ++flaps;
  }
  const double batches_after = Metric(c, "brake_storage_batches_total");
  const int recoveries = RecoveriesLogged(d);
  f.fault.end();
  INFO("daemon log:\n" << d.log().substr(0, 4000));
  CHECK(flaps == 0);
  CHECK(batches_after == batches);
  CHECK(recoveries == 0);
}

// Regression test (a daemon bug this test found, since fixed): while storage
// fails, a commit is answered unavailable but kept in memory; the same
// commit sent again is then answered {"ok":true,"duplicate":true} from
// memory (a duplicate's reply is treated as a read), acknowledging a commit
// that is not on disk. A kill -9 before storage recovers loses it: after the
// restart the lease is open again and the spend does not have it.
TEST_CASE(
    "storage failure: a commit repeated while storage fails is not "
    "acknowledged unless it survives kill -9",
    "[integration][storage_failure]") {
  RunningDaemon r;
  Daemon& d = r.daemon;
  json second;
  {
    Client c = d.Connect();
    std::string lease = AcquireLease(c, "alice", "t1", {{"tokens", 5}});
    rlimit limit{1, RLIM_INFINITY};
    if (prlimit(d.pid(), RLIMIT_FSIZE, &limit, nullptr) != 0) {
      WARN("prlimit(RLIMIT_FSIZE) on braked refused: case skipped");
      return;
    }
    json first = c.Call({{"op", "commit"}, {"lease", lease}, {"tokens", 42}});
    INFO("first commit: " << first.dump());
    REQUIRE(IsUnavailable(first));
    second = c.Call({{"op", "commit"}, {"lease", lease}, {"tokens", 42}});
    d.Kill9();
  }
  REQUIRE(d.Start());
  Client c = d.Connect();
  json status = CallOk(c, {{"op", "status"}, {"user", "alice"}});
  INFO("second commit: " << second.dump()
                         << "\nstatus after kill -9: " << status.dump());
  if (second.value("ok", false)) {
    CHECK(status["spend"]["tokens"] == 42);  // acknowledged: must be there
  } else {
    CHECK(IsUnavailable(second));
  }
}

}  // namespace
}  // namespace brake::integration
