// brake-bench --users J against a real braked: connection i acquires for
// user U-<i % J>, so a run spreads its settlements over J users (the
// ledger's writes per commit grow with them: docs/DESIGN.md, "How the
// ledger is stored").
#include <catch2/catch.hpp>
#include <cstdint>
#include <string>

#include "tests/integration/expect.h"
#include "tests/integration/harness.h"

namespace brake::integration {
namespace {

int64_t SpentRequests(Client& c, const std::string& user) {
  return CallOk(c, {{"op", "status"}, {"user", user}})["spend"]["requests"]
      .get<int64_t>();
}

TEST_CASE("brake-bench --users spreads the connections over that many users",
          "[integration]") {
  RunningDaemon d;
  for (const bool spread : {false, true}) {
    const std::string user = spread ? "spread" : "plain";
    std::vector<std::string> args = {
        BRAKE_BENCH_PATH, "--socket", d.daemon.socket_path(),
        "--connections", "3", "--depth", "2", "--seconds", "0.3",
        "--warmup-seconds", "0", "--user", user, "--users", "2",
        "--task-prefix", user + "-t", "--commit", "--json"};
    if (spread) {
      for (const char* more : {"--spread", "--tasks", "6"}) {
        args.push_back(more);
      }
    }
    const ProgramResult run = RunProgram(args, 20000);
    INFO("spread " << spread << " exit " << run.exit_code << "\nstdout: "
                   << run.out << "\nstderr: " << run.err);
    REQUIRE(run.exit_code == 0);
    const json summary = json::parse(run.out, nullptr, false);
    REQUIRE(summary.is_object());
    CHECK(summary["users"] == 2);
    CHECK(summary["errors"] == 0);
    const int64_t ok = summary["commits"]["ok"].get<int64_t>();
    REQUIRE(ok > 0);
    // Connections 0 and 2 are user-0's, connection 1 user-1's: every
    // committed lease is spent by one of them (the window's, and a few the
    // drain after it commits), none by the bare name.
    Client c = d.daemon.Connect();
    const int64_t first = SpentRequests(c, user + "-0");
    const int64_t second = SpentRequests(c, user + "-1");
    CHECK(second > 0);
    CHECK(first > second);  // two connections to one
    CHECK(first + second >= ok);
    CHECK(SpentRequests(c, user) == 0);
  }
}

TEST_CASE("brake-bench --users must be at least one", "[integration]") {
  const ProgramResult run = RunProgram(
      {BRAKE_BENCH_PATH, "--socket", "/nonexistent", "--users", "0"}, 20000);
  CHECK(run.exit_code != 0);
  CHECK_THAT(run.err, Catch::Contains("--users"));
}

}  // namespace
}  // namespace brake::integration
