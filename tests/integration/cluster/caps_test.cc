// Shared caps are exact across daemons: three braked on one Redis, 200
// clients spread over them, racing on one user's 10,000-token quota and
// 1 usd cap. In every barrier trial the granted reservations stay within
// both caps; at the end the spend Redis holds for each trial equals the sum
// of every commit made on every daemon.
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "tests/integration/cluster/cluster_fixture.h"

namespace brake::integration {
namespace {

constexpr int64_t kTokenCap = 10'000;
constexpr int64_t kUsdCapNano = 1'000'000'000;
// usd per million tokens, input and output alike; in nano-usd per token
// that is 1,000 times as much.
const int64_t kModelPrice[] = {50, 150};

int Trials() {
  const char* env = std::getenv("BRAKE_CLUSTER_TRIALS");
  return env != nullptr ? std::atoi(env) : 1000;
}

struct TrialSums {
  int64_t committed_tokens = 0;
  int64_t committed_usd_nano = 0;
};

TEST_CASE("caps hold across three daemons in barrier trials",
          "[cluster]") {
  const json policies =
      EveryUser({TotalQuota("tok", "tokens", kTokenCap),
                 TotalQuota("usd", "usd", kUsdCapNano / 1'000'000'000)});
  const json prices = {
      {"m0", {{"input_usd_per_mtok", kModelPrice[0]},
              {"output_usd_per_mtok", kModelPrice[0]}}},
      {"m1", {{"input_usd_per_mtok", kModelPrice[1]},
              {"output_usd_per_mtok", kModelPrice[1]}}}};
  ClusterFixture cluster(3, policies, prices);
  constexpr int kClients = 200;
  std::vector<Client> clients;
  for (int i = 0; i < kClients; ++i) clients.push_back(cluster.Connect(i % 3));

  std::mt19937_64 rng(20261206);
  const int trials = Trials();
  std::vector<TrialSums> sums(trials);
  int64_t granted_total = 0, denied_total = 0;
  for (int t = 0; t < trials; ++t) {
    const std::string user = "trial" + std::to_string(t);
    std::vector<int64_t> tokens(kClients), price(kClients);
    // The barrier: every client's acquire is sent before any answer is read.
    for (int i = 0; i < kClients; ++i) {
      tokens[i] = std::uniform_int_distribution<int64_t>(20, 200)(rng);
      const int model = static_cast<int>(rng() % 2);
      price[i] = kModelPrice[model] * 1000;
      clients[i].SendLine(json{{"op", "acquire"},
                               {"user", user},
                               {"task", user + "-" + std::to_string(i)},
                               {"tokens", tokens[i]},
                               {"model", "m" + std::to_string(model)}}
                              .dump());
    }
    int64_t granted_tokens = 0, granted_usd = 0;
    std::vector<std::string> leases(kClients);
    for (int i = 0; i < kClients; ++i) {
      json r = json::parse(*clients[i].ReadLine());
      INFO(r.dump());
      REQUIRE(r["ok"] == true);
      if (r["granted"] == true) {
        leases[i] = r["lease"];
        granted_tokens += tokens[i];
        granted_usd += tokens[i] * price[i];
        ++granted_total;
      } else {
        ++denied_total;
      }
    }
    INFO("trial " << t);
    REQUIRE(granted_tokens <= kTokenCap);
    REQUIRE(granted_usd <= kUsdCapNano);
    for (int i = 0; i < kClients; ++i) {
      if (leases[i].empty()) continue;
      const int64_t used =
          std::uniform_int_distribution<int64_t>(0, tokens[i])(rng);
      clients[i].SendLine(
          json{{"op", "commit"}, {"lease", leases[i]}, {"tokens", used}}.dump());
      sums[t].committed_tokens += used;
      sums[t].committed_usd_nano += used * price[i];
    }
    for (int i = 0; i < kClients; ++i) {
      if (leases[i].empty()) continue;
      json r = json::parse(*clients[i].ReadLine());
      INFO(r.dump());
      REQUIRE(r["ok"] == true);
    }
  }
  CHECK(granted_total > 0);
  CHECK(denied_total > 0);  // the caps were reached, not merely approached

  // Idle slices are given back; then Redis holds exactly what was settled.
  RedisServer& redis = cluster.redis();
  auto spent_matches = [&] {
    for (int t = 0; t < trials; ++t) {
      const std::string scope = "user:trial" + std::to_string(t);
      if (redis.HashInt(ClusterFixture::CapKey(scope, "tok", "tokens"), "used") !=
              sums[t].committed_tokens ||
          redis.HashInt(ClusterFixture::CapKey(scope, "usd", "usd"), "used") !=
              sums[t].committed_usd_nano) {
        return false;
      }
    }
    return true;
  };
  REQUIRE(PollUntil(spent_matches, 10000));
}

}  // namespace
}  // namespace brake::integration
