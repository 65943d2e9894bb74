// brake-bench --commit --hold N against a real braked: each connection ends
// the run with exactly N of its leases open, and commits the rest.
#include <catch2/catch.hpp>
#include <cstdint>
#include <string>

#include "tests/integration/expect.h"
#include "tests/integration/harness.h"

namespace brake::integration {
namespace {

TEST_CASE("brake-bench --hold keeps that many leases open per connection",
          "[integration]") {
  RunningDaemon d;
  const ProgramResult run = RunProgram(
      {BRAKE_BENCH_PATH, "--socket", d.daemon.socket_path(), "--connections",
       "2", "--depth", "4", "--seconds", "0.5", "--warmup-seconds", "0",
       "--user", "holder", "--task-prefix", "hold-", "--commit", "--hold",
       "3", "--json"},
      20000);
  INFO("exit " << run.exit_code << "\nstdout: " << run.out
               << "\nstderr: " << run.err);
  REQUIRE(run.exit_code == 0);
  const json summary = json::parse(run.out, nullptr, false);
  REQUIRE(summary.is_object());
  CHECK(summary["hold"] == 3);
  CHECK(summary["errors"] == 0);
  CHECK(summary["undrained"] == 0);
  CHECK(summary["commits"]["errors"] == 0);
  // Far more grants than are held: the rest were committed.
  CHECK(summary["commits"]["ok"].get<int64_t>() > 100);
  Client c = d.daemon.Connect();
  const json holder = CallOk(c, {{"op", "status"}, {"user", "holder"}});
  CHECK(holder["reserved"]["requests"] == 2 * 3);
}

TEST_CASE("brake-bench --hold needs --commit", "[integration]") {
  const ProgramResult run =
      RunProgram({BRAKE_BENCH_PATH, "--socket", "/nonexistent", "--hold", "3"},
                 20000);
  CHECK(run.exit_code != 0);
  CHECK_THAT(run.err, Catch::Contains("--hold needs --commit"));
}

}  // namespace
}  // namespace brake::integration
