// A token bucket shared by three daemons: 100/s with a burst of 100, under
// 200 clients spread over the daemons for 10 s, admits 1,050 to 1,150 in
// all (at most rate * time + burst), and no daemon's clients starve: each
// daemon's share is within 2x of every other's.
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <thread>
#include <vector>

#include <catch2/catch.hpp>

#include "tests/integration/cluster/cluster_fixture.h"

namespace brake::integration {
namespace {

TEST_CASE("a shared token bucket admits its rate across daemons",
          "[cluster]") {
  const json policies = {
      {"user:*",
       {{"limits",
         {{{"name", "rps"}, {"resource", "requests"},
           {"algorithm", "token_bucket"}, {"rate", 100}, {"burst", 100}}}}}}};
  ClusterFixture cluster(3, policies);
  constexpr int kClients = 200;
  constexpr int64_t kRunMs = 10'000;
  std::vector<Client> clients;
  for (int i = 0; i < kClients; ++i) clients.push_back(cluster.Connect(i % 3));
  std::atomic<int64_t> granted[3] = {0, 0, 0};
  std::atomic<int64_t> errors{0};
  const int64_t start = MonoMs();
  std::vector<std::thread> threads;
  for (int i = 0; i < kClients; ++i) {
    threads.emplace_back([&, i] {
      Client& c = clients[i];
      int n = 0;
      while (MonoMs() - start < kRunMs) {
        json r = c.Call({{"op", "acquire"},
                         {"user", "shared"},
                         {"task", "c" + std::to_string(i) + "-" +
                                      std::to_string(n++ % 4)}});
        if (r["ok"] != true) {
          ++errors;
          SleepMs(10);
          continue;
        }
        if (r["granted"] == true) {
          if (MonoMs() - start <= kRunMs) ++granted[i % 3];
          c.Call({{"op", "commit"}, {"lease", r["lease"]}});
        } else {
          // As a client should: wait what the daemon says, within reason.
          const int64_t wait = r.value("retry_after_ms", int64_t{10});
          SleepMs(std::clamp<int64_t>(wait, 1, 100));
        }
      }
    });
  }
  for (std::thread& t : threads) t.join();
  const int64_t total = granted[0] + granted[1] + granted[2];
  INFO("granted " << granted[0] << " + " << granted[1] << " + " << granted[2]
                  << " = " << total << ", errors " << errors.load());
  CHECK(errors == 0);
  CHECK(total >= 1050);
  CHECK(total <= 1150);
  const int64_t most = std::max({granted[0].load(), granted[1].load(),
                                 granted[2].load()});
  const int64_t least = std::min({granted[0].load(), granted[1].load(),
                                  granted[2].load()});
  CHECK(most <= 2 * least);
}

}  // namespace
}  // namespace brake::integration
