// Framing and pipelining: many requests in one write are answered in order
// with their ids; a request may arrive in pieces.
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "tests/integration/expect.h"
#include "tests/integration/harness.h"

namespace brake::integration {
namespace {

TEST_CASE("100 pipelined requests in one write are answered in order",
          "[integration]") {
  // In strict durability the acquires' replies wait for their commits and
  // the reads' replies wait behind them, in runs gated by different batches.
  const std::string durability = GENERATE(as<std::string>{}, "batched",
                                          "strict");
  INFO("durability " << durability);
  RunningDaemon d(json{{"durability", durability}});
  Client c = d.daemon.Connect();
  CallOk(c, {{"op", "policy.set"},
             {"scope", "user:alice"},
             {"limits", json::parse(R"([{"name":"q","resource":"requests",
               "algorithm":"quota","limit":30,"period":"total"}])")}});

  // A mix of ops, including errors; ids alternate integers and strings.
  std::string batch;
  std::vector<json> ids;
  std::vector<std::string> kinds;
  for (int i = 0; i < 100; ++i) {
    json id = i % 2 == 0 ? json(i) : json("r" + std::to_string(i));
    json request;
    switch (i % 5) {
      case 0:
      case 1:
        request = {{"op", "acquire"}, {"user", "alice"}, {"task", "t1"}};
        kinds.push_back("acquire");
        break;
      case 2:
        request = {{"op", "ping"}};
        kinds.push_back("ping");
        break;
      case 3:
        request = {{"op", "status"}, {"user", "alice"}};
        kinds.push_back("status");
        break;
      default:
        request = {{"op", "cancel"}, {"lease", "nope"}};
        kinds.push_back("unknown_lease");
        break;
    }
    request["id"] = id;
    ids.push_back(id);
    batch += request.dump() + "\n";
  }
  c.SendRaw(batch);

  int granted = 0;
  int denied = 0;
  for (size_t i = 0; i < ids.size(); ++i) {
    std::optional<std::string> line = c.ReadLine();
    REQUIRE(line.has_value());
    json reply = json::parse(*line);
    INFO("reply " << i << ": " << *line);
    REQUIRE(reply["id"] == ids[i]);
    if (kinds[i] == "acquire") {
      REQUIRE(reply["ok"] == true);
      if (reply["granted"] == true) {
        ++granted;
        // Grants come first: the quota runs out in request order.
        CHECK(denied == 0);
      } else {
        ++denied;
        CHECK(reply["reason"] == "reserved");  // the grants' leases hold it
      }
    } else if (kinds[i] == "ping") {
      CHECK(reply["ok"] == true);
      CHECK(reply.contains("version"));
    } else if (kinds[i] == "status") {
      CHECK(reply["ok"] == true);
      // Each status sees exactly the acquires sent before it.
      CHECK(FindLimit(reply, "q")["held"] == granted);
    } else {
      CHECK(ErrorCodeOf(reply) == "unknown_lease");
    }
  }
  CHECK(granted == 30);
  CHECK(denied == 10);
}

TEST_CASE("1000 pipelined acquires on each of 4 connections", "[integration]") {
  const std::string durability = GENERATE(as<std::string>{}, "batched",
                                          "strict");
  INFO("durability " << durability);
  RunningDaemon d(json{{"durability", durability}});
  std::vector<Client> clients;
  for (int k = 0; k < 4; ++k) clients.push_back(d.daemon.Connect());
  for (int k = 0; k < 4; ++k) {
    std::string batch;
    for (int i = 0; i < 1000; ++i) {
      batch += json({{"op", "acquire"},
                     {"id", k * 1000 + i},
                     {"user", "u" + std::to_string(k)},
                     {"task", "t" + std::to_string(k)}})
                   .dump() +
               "\n";
    }
    clients[k].SendRaw(batch);
  }
  for (int k = 0; k < 4; ++k) {
    for (int i = 0; i < 1000; ++i) {
      json reply = json::parse(clients[k].ReadLine().value());
      REQUIRE(reply["id"] == k * 1000 + i);
      REQUIRE(reply["granted"] == true);
    }
  }
  json metrics = CallOk(clients[0], {{"op", "metrics"}});
  CHECK(MetricValue(metrics["text"], "brake_leases_open") == 4000.0);
}

TEST_CASE("a request may arrive one byte at a time", "[integration]") {
  RunningDaemon d;
  Client c = d.daemon.Connect();
  std::string line = R"({"op":"ping","id":"slow"})"
                     "\n";
  for (char ch : line) c.SendRaw(std::string(1, ch));
  json reply = json::parse(c.ReadLine().value());
  CHECK(reply["id"] == "slow");
  CHECK(reply["ok"] == true);
}

TEST_CASE("CRLF line ends are accepted and blank lines are not requests",
          "[integration]") {
  RunningDaemon d;
  Client c = d.daemon.Connect();
  c.SendRaw(
      "\n\r\n"
      R"({"op":"ping","id":1})"
      "\r\n\n"
      R"({"op":"ping","id":2})"
      "\n");
  json first = json::parse(c.ReadLine().value());
  CHECK(first["id"] == 1);
  CHECK(first["ok"] == true);
  json second = json::parse(c.ReadLine().value());
  CHECK(second["id"] == 2);
}

}  // namespace
}  // namespace brake::integration
