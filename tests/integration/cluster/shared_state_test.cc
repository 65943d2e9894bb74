// Policies and resource breakers are the cluster's: policy.set on one
// daemon is enforced by the others within 1 s, and a resource: breaker
// opened by `throttled` on one is open on the others within 200 ms.
#include <cstdint>
#include <string>
#include <tuple>

#include <catch2/catch.hpp>

#include "tests/integration/cluster/cluster_fixture.h"

namespace brake::integration {
namespace {

TEST_CASE("policy.set on one daemon is enforced by the others",
          "[cluster]") {
  ClusterFixture cluster(3, nullptr);
  Client c0 = cluster.Connect(0), c1 = cluster.Connect(1),
         c2 = cluster.Connect(2);
  const json acquire = {{"op", "acquire"}, {"user", "newbie"},
                        {"task", "n1"}, {"tokens", 500}};
  REQUIRE(c1.Call(acquire)["granted"] == true);  // no policy yet
  const json policy = {
      {"limits",
       {{{"name", "tiny"}, {"resource", "tokens"}, {"algorithm", "quota"},
         {"limit", 100}, {"period", "day"}}}}};
  const int64_t set_at = MonoMs();
  REQUIRE(c0.Call({{"op", "policy.set"}, {"scope", "user:newbie"},
                   {"limits", policy["limits"]}})["ok"] == true);
  for (Client* c : {&c1, &c2}) {
    REQUIRE(PollUntil([&] {
      json r = c->Call({{"op", "policy.get"}, {"scope", "user:newbie"}});
      return r["ok"] == true && r.contains("policy") && !r["policy"].is_null();
    }, 1000 - (MonoMs() - set_at)));
    json denied = c->Call(acquire);
    CHECK(denied["granted"] == false);
    CHECK(denied["limit"] == "tiny");
  }
  INFO("enforced everywhere after " << MonoMs() - set_at << " ms");
  CHECK(MonoMs() - set_at <= 1000);
  // And deleted everywhere.
  REQUIRE(c2.Call({{"op", "policy.delete"}, {"scope", "user:newbie"}})["ok"] ==
          true);
  REQUIRE(PollUntil([&] { return c0.Call(acquire)["granted"] == true; }, 1000));
}

TEST_CASE("a resource breaker opened on one daemon is open on all",
          "[cluster]") {
  ClusterFixture cluster(3, nullptr);
  Client c0 = cluster.Connect(0), c1 = cluster.Connect(1),
         c2 = cluster.Connect(2);
  auto acquire = [](const std::string& task) {
    return json{{"op", "acquire"}, {"user", "u"}, {"task", task},
                {"resource", "anthropic"}};
  };
  json lease = c0.Call(acquire("t0"));
  REQUIRE(lease["granted"] == true);
  REQUIRE(c1.Call(acquire("t1"))["granted"] == true);
  const int64_t throttled_at = MonoMs();
  REQUIRE(c0.Call({{"op", "commit"}, {"lease", lease["lease"]},
                   {"outcome", "throttled"}, {"retry_after_ms", 30000}})["ok"] ==
          true);
  for (Client* c : {&c1, &c2}) {
    REQUIRE(PollUntil([&] {
      json r = c->Call(acquire("t2"));
      return r["granted"] == false && r["reason"] == "breaker_open";
    }, 200 - (MonoMs() - throttled_at)));
  }
  INFO("open everywhere after " << MonoMs() - throttled_at << " ms");
  CHECK(MonoMs() - throttled_at <= 200);
  json refused = c2.Call(acquire("t3"));
  CHECK(refused["scope"] == "resource:anthropic");
  CHECK(refused["cause"] == "throttled");
  // A reset on one daemon closes it everywhere.
  REQUIRE(c2.Call({{"op", "breaker.reset"}, {"scope", "resource:anthropic"}})
              ["ok"] == true);
  REQUIRE(PollUntil([&] { return c0.Call(acquire("t4"))["granted"] == true; },
                    1000));
  REQUIRE(PollUntil([&] { return c1.Call(acquire("t5"))["granted"] == true; },
                    1000));
}

}  // namespace
}  // namespace brake::integration

namespace brake::integration {
namespace {

TEST_CASE("reset on one daemon clears a shared cap on all of them",
          "[cluster]") {
  const json policies = EveryUser({TotalQuota("tok", "tokens", 1000)});
  ClusterFixture cluster(3, policies);
  Client c0 = cluster.Connect(0), c1 = cluster.Connect(1),
         c2 = cluster.Connect(2);
  auto acquire = [](Client& c, const std::string& task, int64_t tokens) {
    return c.Call({{"op", "acquire"}, {"user", "r"}, {"task", task},
                   {"tokens", tokens}});
  };
  // 800 spent; what is left may sit in d0's slice (a refill ahead of need).
  for (auto [c, task, tokens] : {std::tuple{&c0, "a", 600}, {&c1, "b", 200}}) {
    json lease = acquire(*c, task, tokens);
    REQUIRE(lease["granted"] == true);
    REQUIRE(c->Call({{"op", "commit"}, {"lease", lease["lease"]}})["ok"] == true);
  }
  REQUIRE(acquire(c2, "c", 201)["granted"] == false);
  REQUIRE(c2.Call({{"op", "reset"}, {"scope", "user:r"}})["ok"] == true);
  // Every daemon forgets what was spent, and the cap holds again after:
  // 1,000 in all, some of it still in the slices the daemons hold.
  REQUIRE(PollUntil([&] { return acquire(c0, "a", 600)["granted"] == true; },
                    1000));
  CHECK(acquire(c1, "b", 500)["granted"] == false);
  json whole = c1.Call({{"op", "reset"}, {"scope", "user:*"}});
  CHECK(whole["ok"] == false);
  CHECK(whole["error"]["code"] == "bad_request");
}

}  // namespace
}  // namespace brake::integration
