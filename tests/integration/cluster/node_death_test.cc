// kill -9 of one daemon under load: the other two go on answering, the cap
// holds (a death may waste what the dead daemon held, never overshoot), and
// its slices leave Redis within their TTL.
#include <cstdint>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "tests/integration/cluster/cluster_fixture.h"
#include "tests/integration/cluster/load.h"

namespace brake::integration {
namespace {

constexpr int64_t kCap = 200'000;
constexpr int64_t kSliceTtlMs = 5000;

TEST_CASE("a daemon killed under load wastes, never overshoots",
          "[cluster]") {
  const json policies = EveryUser({TotalQuota("tok", "tokens", kCap)});
  ClusterFixture cluster(3, policies);
  const std::string key = ClusterFixture::CapKey("user:shared", "tok", "tokens");
  Load load(cluster, 4, {"shared"}, 100);
  // Until the dying daemon holds a slice of the cap.
  REQUIRE(PollUntil([&] {
    return cluster.redis().Command({"HGET", key, "h:n2"}).has_value();
  }, 5000));
  SleepMs(300);
  load.StopDaemon(2);
  cluster.daemon(2).Kill9();
  const int64_t killed = MonoMs();
  SleepMs(1000);
  const std::vector<Answer> after_kill = load.Answers();
  // The others answer, and grant.
  int64_t granted_after = 0, errors_after = 0;
  for (const Answer& a : after_kill) {
    if (a.sent_ms < killed || a.daemon == 2) continue;
    if (a.granted) ++granted_after;
    if (!a.error.empty()) ++errors_after;
  }
  CHECK(granted_after > 0);
  CHECK(errors_after == 0);
  // Its slice leaves the key within its TTL (dropped by the next call of a
  // live daemon once it has passed).
  CHECK(PollUntil([&] {
    return !cluster.redis().Command({"HGET", key, "x:n2"}).has_value();
  }, kSliceTtlMs + 1000 - (MonoMs() - killed)));
  load.Stop();
  // Never overshoot: all settled spend, and what the dead daemon may have
  // granted, within the cap; Redis counts at least what was committed.
  const int64_t committed = load.Committed("shared");
  const int64_t used = cluster.redis().HashInt(key, "used");
  INFO("committed " << committed << ", used " << used);
  CHECK(committed <= kCap);
  CHECK(used <= kCap);
  CHECK(used >= committed);
}

}  // namespace
}  // namespace brake::integration
