// What an operator sees of a cluster: brakectl cluster lists every node and
// the slices they hold; metrics count the calls to Redis and say whether
// the link is up.
#include <string>

#include <catch2/catch.hpp>

#include "tests/integration/cluster/cluster_fixture.h"

namespace brake::integration {
namespace {

TEST_CASE("brakectl cluster shows the nodes and their slices, metrics the link",
          "[cluster]") {
  const json policies = EveryUser({TotalQuota("tok", "tokens", 100'000)});
  ClusterFixture cluster(3, policies);
  for (size_t d = 0; d < cluster.size(); ++d) {
    Client c = cluster.Connect(d);
    REQUIRE(c.Call({{"op", "acquire"}, {"user", "ops"}, {"task", "o"},
                    {"tokens", 1000}})["granted"] == true);
  }
  const std::string key = ClusterFixture::CapKey("user:ops", "tok", "tokens");
  ProgramResult shown;
  REQUIRE(PollUntil([&] {
    shown = RunBrakectl(cluster.daemon(0).socket_path(), {"cluster"});
    return shown.exit_code == 0 && shown.out.find("n1") != std::string::npos &&
           shown.out.find("n2") != std::string::npos;
  }, 3000));
  INFO(shown.out);
  CHECK(shown.out.find("link            up") != std::string::npos);
  CHECK(shown.out.find(key) != std::string::npos);

  Client c0 = cluster.Connect(0);
  const std::string text = c0.Call({{"op", "metrics"}})["text"];
  CHECK(MetricValue(text, "brake_cluster_link_up") == 1);
  CHECK(MetricValue(text, "brake_cluster_redis_calls_total").value_or(0) >= 1);
  CHECK(MetricValue(text, "brake_cluster_held_requests_total").value_or(0) >= 1);
  CHECK(MetricValue(text, "brake_cluster_shares") == 1);
}

}  // namespace
}  // namespace brake::integration
