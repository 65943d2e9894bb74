// Redis killed under load: while it is away no daemon holds a request for a
// store call (its held_requests counter stands still, its link is down), so
// every acquire is answered from what the daemon holds (its slice, else
// `unavailable` with on_unavailable closed, or the local share with local);
// nothing hangs. Redis started again
// (with its append-only file): service is back within 2 s, the spend Redis
// holds equals every commit made (nothing counted twice, nothing lost), and
// no cap was passed.
#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "tests/integration/cluster/cluster_fixture.h"
#include "tests/integration/cluster/load.h"

namespace brake::integration {
namespace {

constexpr int64_t kSmallCap = 20'000;

json AwayPolicies() {
  json policies = EveryUser({TotalQuota("tok", "tokens", 1'000'000'000'000)});
  policies["user:small"] = {
      {"limits", {TotalQuota("tok", "tokens", kSmallCap)}}};
  return policies;
}

struct Outage {
  int64_t killed_ms = 0;
  int64_t seen_down_ms = 0;  // every daemon's link was down by then
  int64_t restarted_ms = 0;
  std::vector<Answer> answers;
  // Each daemon's cluster.status held_requests when its link was seen down,
  // and just before Redis came back.
  std::vector<uint64_t> held_down, held_back;
};

// Each daemon's cluster.status, or nullopt when one's link is still up.
std::optional<std::vector<json>> StatusesWhileDown(ClusterFixture& cluster) {
  std::vector<json> out;
  for (size_t d = 0; d < cluster.size(); ++d) {
    json s = cluster.Connect(d).Call({{"op", "cluster.status"}});
    if (s.value("link", "") != "down") return std::nullopt;
    out.push_back(std::move(s));
  }
  return out;
}

std::vector<uint64_t> HeldRequests(const std::vector<json>& statuses) {
  std::vector<uint64_t> held;
  for (const json& s : statuses) held.push_back(s["held_requests"]);
  return held;
}

// Load for a second, Redis away for 1.5 s, back for 2.5 s.
Outage RunOutage(ClusterFixture& cluster, Load& load) {
  Outage o;
  SleepMs(1000);
  o.killed_ms = MonoMs();
  cluster.redis().Kill9();
  std::optional<std::vector<json>> down;
  REQUIRE(PollUntil([&] { return (down = StatusesWhileDown(cluster)).has_value(); },
                    1000));
  o.seen_down_ms = MonoMs();
  o.held_down = HeldRequests(*down);
  SleepMs(std::max<int64_t>(0, o.killed_ms + 1500 - MonoMs()));
  down = StatusesWhileDown(cluster);
  REQUIRE(down.has_value());
  o.held_back = HeldRequests(*down);
  o.restarted_ms = MonoMs();
  REQUIRE(cluster.redis().Start());
  SleepMs(2500);
  load.Stop();
  o.answers = load.Answers();
  return o;
}

const std::vector<std::string> kUsers = {"big0", "big1", "big2", "small"};

// The spend in Redis is every commit, once idle slices are given back; the
// small cap was reached and passed by at most `slack` (0: never passed).
void CheckExact(ClusterFixture& cluster, const Load& load, const Outage& o,
                int64_t slack) {
  int64_t small_refused = 0;
  for (const Answer& a : o.answers) {
    if (a.user == "small" && !a.granted && a.error.empty()) ++small_refused;
  }
  CHECK(small_refused > 0);
  CHECK(load.Committed("small") <= kSmallCap + slack);
  auto exact = [&] {
    for (const std::string& user : kUsers) {
      if (cluster.redis().HashInt(
              ClusterFixture::CapKey("user:" + user, "tok", "tokens"),
              "used") != load.Committed(user)) {
        return false;
      }
    }
    return true;
  };
  INFO(cluster.Logs());
  REQUIRE(PollUntil(exact, 10000));
}

// While every link was down no daemon held a request for Redis: its
// held_requests counter stood still, so each acquire sent then was answered
// from what the daemon held, never after a store call. The wall clock only
// catches a hang (a second: four call timeouts), not scheduling on a loaded
// machine. Those not granted answered `allowed_error`. Returns how many were
// granted then.
int64_t CheckAnswersWhileAway(const Outage& o, const std::string& allowed_error,
                              int64_t* refused) {
  CHECK(o.held_back == o.held_down);
  int64_t granted = 0, slow = 0, hung = 0, other = 0, sent = 0;
  *refused = 0;
  for (const Answer& a : o.answers) {
    if (a.sent_ms < o.seen_down_ms || a.sent_ms >= o.restarted_ms) continue;
    ++sent;
    if (a.latency_ms > 50) ++slow;
    if (a.latency_ms >= 1000) ++hung;
    if (a.granted) ++granted;
    else if (!a.error.empty() && a.error != allowed_error) ++other;
    else if (a.error == allowed_error) ++*refused;
  }
  INFO("answers while away: " << sent << ", over 50 ms: " << slow);
  CHECK(sent > 0);
  CHECK(hung == 0);
  CHECK(other == 0);
  return granted;
}

// Service is back: after restart + 2 s no daemon answers `unavailable`, and
// every daemon grants.
void CheckBack(const Outage& o, size_t daemons) {
  std::vector<int64_t> grants_after(daemons, 0);
  int64_t late_unavailable = 0;
  for (const Answer& a : o.answers) {
    INFO(a.error);
    CHECK(a.error.rfind("harness", 0) != 0);  // a client's call failed
    if (a.sent_ms < o.restarted_ms + 2000) continue;
    if (a.error == "unavailable") ++late_unavailable;
    if (a.granted) ++grants_after[a.daemon];
  }
  CHECK(late_unavailable == 0);
  for (size_t d = 0; d < daemons; ++d) CHECK(grants_after[d] > 0);
}

TEST_CASE("Redis away, closed: acquires answer at once, then recover",
          "[cluster]") {
  ClusterFixture cluster(3, AwayPolicies(), nullptr, nullptr, /*aof=*/true);
  Load load(cluster, 4, kUsers, 100);
  const Outage o = RunOutage(cluster, load);
  int64_t refused = 0;
  CheckAnswersWhileAway(o, "unavailable", &refused);
  CHECK(refused > 0);  // the slices ran out: Redis was needed
  CheckBack(o, cluster.size());
  CheckExact(cluster, load, o, 0);
}

TEST_CASE("Redis away, local: granted from the local share",
          "[cluster]") {
  ClusterFixture cluster(3, AwayPolicies(), nullptr,
                         {{"cluster", {{"on_unavailable", "local"}}}},
                         /*aof=*/true);
  Load load(cluster, 4, kUsers, 100);
  const Outage o = RunOutage(cluster, load);
  int64_t refused = 0;
  const int64_t granted = CheckAnswersWhileAway(o, "", &refused);
  CHECK(granted > 0);
  CheckBack(o, cluster.size());
  // Local shares are bounded, not exact (docs/CLUSTER.md): each daemon
  // divides the remaining it last saw, and what the others leased after
  // that may be granted twice: at most what remained at the stalest view,
  // so never more than one more cap. (Runs have passed it by 0 to 37%.)
  CheckExact(cluster, load, o, kSmallCap);
}

}  // namespace
}  // namespace brake::integration
