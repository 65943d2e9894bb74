// max_open_leases: an acquire that would open one lease too many is
// refused, counted, and served again once leases settle.
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "tests/integration/expect.h"
#include "tests/integration/harness.h"

namespace brake::integration {
namespace {

TEST_CASE("max_open_leases bounds the leases held open", "[integration]") {
  RunningDaemon d(json{{"max_open_leases", 1000}, {"durability", "batched"}});
  Client c = d.daemon.Connect();
  std::vector<std::string> leases;
  for (int i = 0; i < 1000; ++i) {
    leases.push_back(AcquireLease(c, "alice", "t" + std::to_string(i % 7)));
  }
  CHECK(Metric(c, "brake_leases_open") == 1000);

  json refused = c.Call({{"op", "acquire"}, {"user", "bob"}, {"task", "b"}});
  RequireError(refused, "unavailable", "max_open_leases");
  CHECK(Metric(c, "brake_limit_hits_total{limit=\"max_open_leases\"}") == 1);

  CallOk(c, {{"op", "commit"}, {"lease", leases[0]}});
  CHECK(Acquire(c, "bob", "b")["granted"] == true);
  CHECK(Metric(c, "brake_leases_open") == 1000);
}

}  // namespace
}  // namespace brake::integration
