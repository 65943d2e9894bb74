// Leases stored many to a chunk (docs/DESIGN.md, "How open leases are
// stored") and settled in no order they were granted in: after kill -9
// exactly the open ones hold their reservations, and each settles once.
#include <catch2/catch.hpp>
#include <cstdint>
#include <string>
#include <vector>

#include "tests/integration/expect.h"
#include "tests/integration/harness.h"

namespace brake::integration {
namespace {

constexpr int kPerChunk = 20;

// Grants `n` leases of 10 tokens to alice, pipelined in one write so that
// the daemon stores them in one batch (one chunk).
std::vector<std::string> GrantPipelined(Client& c, int first, int n) {
  std::string lines;
  for (int i = first; i < first + n; ++i) {
    lines += json{{"id", i},
                  {"op", "acquire"},
                  {"user", "alice"},
                  {"task", "t" + std::to_string(i)},
                  {"tokens", 10}}
                 .dump() +
             "\n";
  }
  c.SendRaw(lines);
  std::vector<std::string> leases;
  for (int i = 0; i < n; ++i) {
    const std::optional<std::string> line = c.ReadLine();
    REQUIRE(line.has_value());
    const json reply = json::parse(*line);
    INFO(*line);
    REQUIRE(reply["granted"] == true);
    leases.push_back(reply["lease"].get<std::string>());
  }
  return leases;
}

int64_t Reserved(Client& c) {
  return CallOk(c, {{"op", "status"}, {"user", "alice"}})["reserved"]["tokens"]
      .get<int64_t>();
}

TEST_CASE("leases settled out of order hold exactly their reservations after kill -9",
          "[integration]") {
  RunningDaemon d;
  std::vector<std::string> leases;
  std::vector<bool> settled(2 * kPerChunk, false);
  {
    Client c = d.daemon.Connect();
    leases = GrantPipelined(c, 0, kPerChunk);
    const std::vector<std::string> more = GrantPipelined(c, kPerChunk, kPerChunk);
    leases.insert(leases.end(), more.begin(), more.end());
    // Lines of both chunks, first and last ones included, in no order.
    for (int i : {17, 3, 39, 20, 0, 26, 8, 19, 33}) {
      CallOk(c, {{"op", "commit"}, {"lease", leases[i]}, {"tokens", 10}});
      settled[i] = true;
    }
    CHECK(Reserved(c) == 10 * (2 * kPerChunk - 9));
    d.daemon.Kill9();
  }
  REQUIRE(d.daemon.Start());
  Client c = d.daemon.Connect();
  CHECK(Reserved(c) == 10 * (2 * kPerChunk - 9));
  // Each settles once: the open ones charge now; the settled ones answer as
  // duplicates or, their settlements forgotten with the restart, as unknown
  // (durability_test.cc), and charge nothing either way.
  for (int i = 0; i < 2 * kPerChunk; ++i) {
    const json commit =
        c.Call({{"op", "commit"}, {"lease", leases[i]}, {"tokens", 10}});
    INFO("lease " << i << ": " << commit.dump());
    if (settled[i]) {
      CHECK((commit.value("duplicate", false) ||
             ErrorCodeOf(commit) == "unknown_lease"));
    } else {
      CHECK(commit.value("ok", false));
      CHECK_FALSE(commit.value("duplicate", false));
    }
  }
  CHECK(Reserved(c) == 0);
  REQUIRE(d.daemon.Restart());
  Client again = d.daemon.Connect();
  CHECK(Reserved(again) == 0);
  CHECK(CallOk(again, {{"op", "status"}, {"user", "alice"}})["spend"]["tokens"] ==
        10 * 2 * kPerChunk);
}

}  // namespace
}  // namespace brake::integration
