// With more subjects in memory than the caches hold (Engine::prefetch_pays),
// braked announces the task of each line a few lines before it handles it
// (Engine::Prefetch), in reads of any number of lines; the answers are
// exactly those of one line at a time.
#include <catch2/catch.hpp>
#include <functional>
#include <string>
#include <vector>

#include "tests/integration/expect.h"
#include "tests/integration/harness.h"

namespace brake::integration {
namespace {

constexpr int kTasks = 40000;  // more than Engine's prefetch threshold
constexpr int kUsers = 4;

std::string UserOf(int task) { return "u" + std::to_string(task % kUsers); }

// Sends `requests` in writes of 1,000 lines and checks each reply, in
// order, with `check(i, reply)`.
void Pipeline(Client& c, const std::vector<json>& requests,
              const std::function<void(size_t, const json&)>& check) {
  for (size_t first = 0; first < requests.size(); first += 1000) {
    const size_t end = std::min(requests.size(), first + 1000);
    std::string batch;
    for (size_t i = first; i < end; ++i) {
      json r = requests[i];
      r["id"] = static_cast<int64_t>(i);
      batch += r.dump() + "\n";
    }
    c.SendRaw(batch);
    for (size_t i = first; i < end; ++i) {
      std::optional<std::string> line = c.ReadLine();
      REQUIRE(line.has_value());
      json reply = json::parse(*line);
      INFO("request " << i << ": " << requests[i].dump() << " -> " << *line);
      REQUIRE(reply["id"] == static_cast<int64_t>(i));
      check(i, reply);
    }
  }
}

json AcquireOf(const std::string& user, const std::string& task) {
  return {{"op", "acquire"}, {"user", user}, {"task", task}};
}

TEST_CASE("pipelined acquires over 40000 tasks answer as one at a time",
          "[integration]") {
  RunningDaemon d(json{{"durability", "batched"}});
  Client c = d.daemon.Connect();
  // One call per task per day.
  CallOk(c, {{"op", "policy.set"},
             {"scope", "task:*"},
             {"limits", json::parse(R"([{"name":"once","resource":"requests",
               "algorithm":"token_bucket","rate":1,"per_ms":86400000,
               "burst":1}])")}});
  std::vector<json> setup;
  for (int t = 0; t < kTasks; ++t) {
    setup.push_back(AcquireOf(UserOf(t), "t" + std::to_string(t)));
  }
  Pipeline(c, setup, [](size_t, const json& reply) {
    REQUIRE(reply["granted"] == true);
  });
  REQUIRE(Metric(c, "brake_subjects") > kTasks);

  // Every known task again (denied: its call is spent), a new task now and
  // then (granted), and a known task asked by another user (forbidden).
  std::vector<json> mixed;
  std::vector<std::string> expect;  // "denied task:tN", "granted", "forbidden"
  for (int i = 0; i < 4000; ++i) {
    const int t = static_cast<int>((static_cast<int64_t>(i) * 7919) % kTasks);
    const std::string task = "t" + std::to_string(t);
    if (i % 10 == 9) {
      mixed.push_back(AcquireOf(UserOf(i), "new" + std::to_string(i)));
      expect.push_back("granted");
    } else if (i % 10 == 5) {
      mixed.push_back(AcquireOf(UserOf(t + 1), task));
      expect.push_back("forbidden");
    } else {
      mixed.push_back(AcquireOf(UserOf(t), task));
      expect.push_back("denied task:" + task);
    }
  }
  Pipeline(c, mixed, [&](size_t i, const json& reply) {
    if (expect[i] == "granted") {
      REQUIRE(reply["granted"] == true);
    } else if (expect[i] == "forbidden") {
      REQUIRE(ErrorCodeOf(reply) == "forbidden");
    } else {
      REQUIRE(reply["granted"] == false);
      REQUIRE(reply["reason"] == "rate_limited");
      REQUIRE("denied " + reply["scope"].get<std::string>() == expect[i]);
    }
  });
  // Most of them took their subject from the pipeline.
  const int64_t prefetched = Metric(c, "brake_prefetched_decisions_total");
  CHECK(prefetched > 2000);

  // Reads of fewer lines than the pipeline is long: after a read's last
  // line the server announces none, so that each line is still decided
  // Engine::kPrefetchAhead announcements after its own, from the pipeline.
  constexpr int kReads = 200;
  constexpr int kLinesPerRead = 4;
  for (int r = 0; r < kReads; ++r) {
    std::vector<json> few;
    for (int l = 0; l < kLinesPerRead; ++l) {
      const int t = (r * kLinesPerRead + l) * 13 % kTasks;
      few.push_back(AcquireOf(UserOf(t), "t" + std::to_string(t)));
    }
    Pipeline(c, few, [](size_t, const json& reply) {
      REQUIRE(reply["granted"] == false);  // each task's call is spent
    });
  }
  // Nearly all (a write may now and then arrive in two reads).
  CHECK(Metric(c, "brake_prefetched_decisions_total") - prefetched >=
        kReads * kLinesPerRead * 9 / 10);
}

}  // namespace
}  // namespace brake::integration
