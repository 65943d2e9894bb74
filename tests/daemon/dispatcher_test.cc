// Dispatcher: JSON request lines in, JSON reply lines out, per PROTOCOL.md.
// No daemon, no sockets: Handle() is driven directly with explicit clocks.
// Bad requests, nesting and admin refusals: dispatcher_errors_test.cc.
#include "daemon/dispatcher.h"

#include <catch2/catch.hpp>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "budget/calendar.h"
#include "budget/engine.h"
#include "daemon/config.h"
#include "storage/store.h"
#include "tests/daemon/dispatcher_harness.h"

namespace brake {
namespace {

using nlohmann::json;

constexpr int64_t kFourteenHoursMs = 14 * 3'600'000;

const json kDailyUsd = {{"name", "daily"},
                        {"resource", "usd"},
                        {"algorithm", "quota"},
                        {"limit", 5.0},
                        {"period", "day"}};

TEST_CASE("dispatcher: ping", "[dispatcher]") {
  Harness h;
  json reply = h.Ok(json{{"op", "ping"}}, kUser);
  CHECK(reply["version"] == BRAKE_VERSION);
  CHECK_FALSE(reply.contains("id"));
  CHECK(reply.size() == 2);
}

TEST_CASE("dispatcher: id is echoed as given", "[dispatcher]") {
  Harness h;
  SECTION("integer") {
    CHECK(h.Ok(json{{"id", 7}, {"op", "ping"}})["id"] == 7);
    CHECK(h.Ok(json{{"id", -3}, {"op", "ping"}})["id"] == -3);
    json big = h.Call(std::string(R"({"id":18446744073709551615,"op":"ping"})"));
    CHECK(big["id"].get<uint64_t>() == 18446744073709551615ull);
  }
  SECTION("string") {
    CHECK(h.Ok(json{{"id", "req-1"}, {"op", "ping"}})["id"] == "req-1");
    CHECK(h.Ok(json{{"id", ""}, {"op", "ping"}})["id"] == "");
  }
  SECTION("on errors too") {
    json reply = h.Call(json{{"id", 9}, {"op", "nope"}});
    CheckError(reply, "unknown_op", "op:");
    CHECK(reply["id"] == 9);
    reply = h.Call(json{{"id", "x"}, {"op", "acquire"}, {"user", "a"}});
    CheckError(reply, "bad_request", "task:");
    CHECK(reply["id"] == "x");
    reply = h.Call(json{{"id", "y"}, {"op", "policy.list"}}, kUser);
    CheckError(reply, "forbidden", "op:");
    CHECK(reply["id"] == "y");
  }
  SECTION("absent when not given") {
    CHECK_FALSE(h.Call(json{{"op", "nope"}}).contains("id"));
    CHECK_FALSE(h.Ok(json{{"op", "metrics"}}).contains("id"));
  }
}

TEST_CASE("dispatcher: acquire, commit and cancel", "[dispatcher]") {
  Harness h;
  h.Ok(Policy1("user:*", json::array({kRpm})));

  json granted = h.Ok(json{{"id", 1},
                           {"op", "acquire"},
                           {"user", "alice"},
                           {"task", "t-42"},
                           {"tokens", 1200},
                           {"requests", 1},
                           {"resource", "openai"},
                           {"fingerprint", "9f2c"},
                           {"wait_ms", 0}},
                      kUser);
  CHECK(granted["granted"] == true);
  REQUIRE(granted["lease"].is_string());
  CHECK_FALSE(granted["lease"].get<std::string>().empty());
  CHECK(granted["waited_ms"] == 0);
  CHECK(granted["remaining"] == json{{"requests", 1}});
  CHECK(granted["capacity"] == json{{"requests", 2}});
  CHECK_FALSE(granted.contains("reason"));
  CHECK_FALSE(granted.contains("shadow"));
  const std::string lease = granted["lease"];

  SECTION("denied") {
    h.Ok(Acq("alice", "t-42"), kUser);
    json denied = h.Ok(Acq("alice", "t-42"), kUser);
    CHECK(denied["granted"] == false);
    CHECK(denied["reason"] == "rate_limited");
    CHECK(denied["scope"] == "user:alice");
    CHECK(denied["limit"] == "rpm");
    CHECK(denied["retry_after_ms"] == 60000);
    CHECK_FALSE(denied.contains("lease"));
  }
  SECTION("denied forever answers null") {
    h.Ok(Policy1("task:*", json::array({{{"name", "cap"},
                                         {"resource", "tokens"},
                                         {"algorithm", "quota"},
                                         {"limit", 100},
                                         {"period", "total"}}})));
    json denied = h.Ok(Acq("alice", "t-9", 101), kUser);
    CHECK(denied["reason"] == "too_large");
    CHECK(denied["retry_after_ms"].is_null());
  }
  SECTION("commit") {
    json c = h.Ok(json{{"op", "commit"},
                       {"lease", lease},
                       {"input_tokens", 1000},
                       {"output_tokens", 350},
                       {"latency_ms", 812},
                       {"outcome", "ok"}},
                  kUser);
    CHECK(c["charged_tokens"] == 1350);
    CHECK(c["charged_usd"] == 0.0);
    CHECK_FALSE(c.contains("duplicate"));
    json again = h.Ok(json{{"op", "commit"}, {"lease", lease}, {"tokens", 1}},
                      kUser);
    CHECK(again["duplicate"] == true);
    CHECK(again["charged_tokens"] == 1350);
    json status = h.Ok(json{{"op", "status"}, {"task", "t-42"}}, kUser);
    CHECK(status["spend"] == json{{"requests", 1}, {"tokens", 1350},
                                  {"usd", 0.0}});
  }
  SECTION("a null outcome is ok") {
    Batch before;
    (void)h.engine().Drain(&before, [](const Lease&, std::string*) {});
    h.Ok(json{{"op", "commit"}, {"lease", lease}, {"outcome", nullptr}},
         kUser);
    Batch after;
    (void)h.engine().Drain(&after, [](const Lease&, std::string*) {});
    REQUIRE(after.ledger_append.size() == 1);
    CHECK(after.ledger_append[0].outcome == "ok");
    CHECK(after.ledger_append[0].latency_ms == -1);
  }
  SECTION("commit with every outcome") {
    for (const char* outcome : {"ok", "error", "timeout", "throttled"}) {
      json g = h.Ok(Acq(std::string("u-") + outcome, outcome), kUser);
      json c = h.Ok(json{{"op", "commit"},
                         {"lease", g["lease"]},
                         {"tokens", 5},
                         {"outcome", outcome},
                         {"retry_after_ms", 100}},
                    kUser);
      CHECK(c["charged_tokens"] == 5);
    }
  }
  SECTION("cancel") {
    json c = h.Ok(json{{"op", "cancel"}, {"lease", lease}}, kUser);
    CHECK(c.size() == 1);  // just ok
    json status = h.Ok(json{{"op", "status"}, {"user", "alice"}}, kUser);
    CHECK(status["reserved"] == json{{"requests", 0}, {"tokens", 0},
                                     {"usd", 0.0}});
    CHECK(status["limits"][0]["used"] == 0);
    json again = h.Ok(json{{"op", "cancel"}, {"lease", lease}}, kUser);
    CHECK(again["duplicate"] == true);
  }
}

// A daily usd cap per user, two requests a minute in all, gpt-4o priced:
// returns an acquire of 1000 gpt-4o tokens for alice's t-42.
json DailyUsdAndRpm(Harness& h) {
  h.Ok(Policy1("user:*", json::array({kDailyUsd})));
  h.Ok(Policy1("global", json::array({kRpm})));
  h.Ok(json{{"op", "prices.set"},
            {"model", "gpt-4o"},
            {"input_usd_per_mtok", 2.5},
            {"output_usd_per_mtok", 10}});
  json acq = Acq("alice", "t-42", 1000);
  acq["model"] = "gpt-4o";
  return acq;
}

TEST_CASE("dispatcher: a grant names its tightest limits' capacity, on both reply paths",
          "[dispatcher]") {
  Harness h;
  json acq = DailyUsdAndRpm(h);
  acq["id"] = 7;  // the fast path
  json fast = h.Ok(acq, kUser);
  CHECK(fast["remaining"]["requests"] == 1);
  CHECK(fast["capacity"] == json{{"requests", 2}, {"usd", 5.0}});
  // An id over int64 has no fast path: nlohmann writes the reply.
  acq["id"] = std::numeric_limits<uint64_t>::max();
  json slow = h.Ok(acq, kUser);
  CHECK(slow["capacity"] == fast["capacity"]);
  CHECK(slow["remaining"]["requests"] == 0);
  CHECK(slow["remaining"]["usd"] == Approx(4.98));
}

TEST_CASE("dispatcher: status reply shape", "[dispatcher]") {
  Harness h;
  json acq = DailyUsdAndRpm(h);
  json g = h.Ok(acq, kUser);
  CHECK(g["remaining"]["usd"] == Approx(4.99));

  json s = h.Ok(json{{"op", "status"}, {"user", "alice"}}, kUser);
  CHECK(s["scope"] == "user:alice");
  REQUIRE(s["limits"].size() == 2);
  const json& global = s["limits"][0];
  CHECK(global["scope"] == "global");
  CHECK(global["name"] == "rpm");
  CHECK(global["algorithm"] == "fixed_window");
  CHECK(global["resource"] == "requests");
  CHECK(global["limit"] == 2);
  CHECK(global["used"] == 1);
  CHECK(global["remaining"] == 1);
  CHECK(global["resets_in_ms"] == 60000);
  const json& daily = s["limits"][1];
  CHECK(daily["scope"] == "user:alice");
  CHECK(daily["name"] == "daily");
  CHECK(daily["resource"] == "usd");
  CHECK(daily["algorithm"] == "quota");
  CHECK(daily["limit"] == 5.0);
  CHECK(daily["used"] == 0.0);
  CHECK(daily["held"] == Approx(0.01));  // 1000 tokens at the dearer 10/Mtok
  CHECK(daily["remaining"] == Approx(4.99));
  CHECK(daily["resets_in_ms"] == kFourteenHoursMs);
  CHECK(s["spend"] == json{{"requests", 0}, {"tokens", 0}, {"usd", 0.0}});
  CHECK(s["reserved"]["requests"] == 1);
  CHECK(s["reserved"]["tokens"] == 1000);
  CHECK(s["reserved"]["usd"] == Approx(0.01));
  CHECK(s["breakers"] == json::array());

  h.Ok(json{{"op", "commit"},
            {"lease", g["lease"]},
            {"input_tokens", 1000},
            {"output_tokens", 350}},
       kUser);
  s = h.Ok(json{{"op", "status"}, {"task", "t-42"}}, kUser);
  CHECK(s["scope"] == "task:t-42");
  CHECK(s["spend"]["usd"] == Approx(0.006));  // 2.5e-3 + 3.5e-3
  // A task's status lists what it inherits: global and its user's limits.
  std::vector<std::string> scopes;
  for (const json& l : s["limits"]) scopes.push_back(l["scope"]);
  CHECK(scopes == std::vector<std::string>{"global", "user:alice"});

  s = h.Ok(json{{"op", "status"}, {"resource", "openai"}}, kUser);
  CHECK(s["scope"] == "resource:openai");
  CHECK(s["limits"].size() == 1);
}

TEST_CASE("dispatcher: admin ops", "[dispatcher]") {
  Harness h;
  json set = h.Ok(Policy1("user:*", json::array({kRpm})));
  CHECK(set["scope"] == "user:*");
  CHECK(set["policy"]["limits"][0]["name"] == "rpm");

  SECTION("policy.set answers the canonical policy, with defaults filled") {
    json r = h.Ok(Policy1("task:t1", json::array({{{"name", "rps"},
                                                   {"resource", "requests"},
                                                   {"algorithm", "token_bucket"},
                                                   {"rate", 10}}})));
    CHECK(r["policy"] ==
          json{{"limits", json::array({{{"name", "rps"},
                                        {"resource", "requests"},
                                        {"algorithm", "token_bucket"},
                                        {"rate", 10},
                                        {"per_ms", 1000},
                                        {"burst", 10}}})}});
    json breaker = {{"open_ms", 30000}};
    json with = h.Ok(json{{"op", "policy.set"},
                          {"scope", "resource:openai"},
                          {"breaker", breaker}});
    json canonical = breaker;  // defaults written out
    canonical["open_backoff"] = 2.0;
    canonical["max_open_ms"] = 600000;
    canonical["half_open_probes"] = 3;
    CHECK(with["policy"] ==
          json{{"limits", json::array()}, {"breaker", canonical}});
  }
  SECTION("policy.get") {
    json r = h.Ok(json{{"op", "policy.get"}, {"scope", "user:*"}});
    CHECK(r["scope"] == "user:*");
    CHECK(r["policy"] == set["policy"]);
    json none = h.Ok(json{{"op", "policy.get"}, {"scope", "user:bob"}});
    CHECK(none["policy"].is_null());
  }
  SECTION("policy.list") {
    h.Ok(Policy1("global", json::array()));
    json r = h.Ok(json{{"op", "policy.list"}});
    REQUIRE(r["policies"].size() == 2);
    CHECK(r["policies"][0]["scope"] == "global");
    CHECK(r["policies"][0]["limits"] == json::array());
    CHECK(r["policies"][1]["scope"] == "user:*");
    CHECK(r["policies"][1]["limits"] == set["policy"]["limits"]);
  }
  SECTION("policy.delete") {
    CHECK(h.Ok(json{{"op", "policy.delete"}, {"scope", "user:*"}})["deleted"] ==
          true);
    CHECK(h.Ok(json{{"op", "policy.delete"}, {"scope", "user:*"}})["deleted"] ==
          false);
    CHECK(h.Ok(json{{"op", "policy.list"}})["policies"] == json::array());
  }
  SECTION("reset") {
    h.Ok(Acq("alice", "a"), kUser);
    h.Ok(Acq("alice", "a"), kUser);
    CHECK(h.Ok(Acq("alice", "a"), kUser)["granted"] == false);
    json r = h.Ok(json{{"op", "reset"}, {"scope", "user:alice"}});
    CHECK(r["scope"] == "user:alice");
    CHECK(h.Ok(Acq("alice", "a"), kUser)["granted"] == true);
    h.Ok(json{{"op", "reset"}, {"scope", "user:*"}});
    h.Ok(json{{"op", "reset"}, {"scope", "global"}});
  }
  SECTION("prices.set prices later acquires") {
    h.Ok(json{{"op", "prices.set"},
              {"model", "m"},
              {"input_usd_per_mtok", 1},
              {"output_usd_per_mtok", 0}});
    json acq = Acq("alice", "a", 2'000'000);
    acq["model"] = "m";
    h.Ok(acq, kUser);
    json s = h.Ok(json{{"op", "status"}, {"user", "alice"}});
    CHECK(s["reserved"]["usd"] == 2.0);
  }
  SECTION("metrics") {
    h.Ok(Acq("alice", "a"), kUser);
    json m = h.Ok(json{{"op", "metrics"}}, kUser);
    const std::string text = m["text"];
    CHECK(text.find("# TYPE brake_requests_total counter\n") !=
          std::string::npos);
    CHECK(text.find("brake_acquires_total{result=\"granted\"} 1\n") !=
          std::string::npos);
    CHECK(text.find("brake_leases_open 1\n") != std::string::npos);
    CHECK(text.find("brake_storage_ok 1\n") != std::string::npos);
  }
}

TEST_CASE("dispatcher: storage failures", "[dispatcher]") {
  Harness h;
  h.Ok(Policy1("user:*", json::array({kRpm})));
  json lease = h.Ok(Acq("alice", "t1"), kUser)["lease"];
  h.dispatcher().set_storage_ok(false);
  CHECK_FALSE(h.dispatcher().storage_ok());

  SECTION("fail closed: acquires are unavailable") {
    json reply = h.Call(json{{"id", 3}, {"op", "acquire"}, {"user", "alice"},
                             {"task", "t1"}},
                        kUser);
    CheckError(reply, "unavailable", "storage:");
    CHECK(reply["id"] == 3);
    CHECK(h.engine().open_leases() == 1);
    // Settling what is already granted still works.
    h.Ok(json{{"op", "commit"}, {"lease", lease}}, kUser);
    h.dispatcher().set_storage_ok(true);
    CHECK(h.Ok(Acq("alice", "t1"), kUser)["granted"] == true);
  }
  SECTION("fail open: acquires pass and are counted") {
    h.config().fail_open = true;
    CHECK(h.Ok(Acq("alice", "t1"), kUser)["granted"] == true);
    // Limits still apply.
    CHECK(h.Ok(Acq("alice", "t1"), kUser)["granted"] == false);
    const std::string text = h.Ok(json{{"op", "metrics"}})["text"];
    CHECK(text.find("brake_fail_open_grants_total 1\n") != std::string::npos);
    CHECK(text.find("brake_storage_ok 0\n") != std::string::npos);
  }
}

class FakeDeferred : public DeferredOps {
 public:
  void Usage(uint64_t conn, json id, UsageQuery query) override {
    conns.push_back(conn);
    ids.push_back(std::move(id));
    queries.push_back(std::move(query));
  }
  void Load(uint64_t conn, json id, std::vector<std::string> scopes,
            std::string request) override {
    conns.push_back(conn);
    ids.push_back(std::move(id));
    loads.push_back(std::move(scopes));
    requests.push_back(std::move(request));
  }
  void Redo(uint64_t, std::string request) override {
    redone.push_back(std::move(request));
  }
  std::vector<std::string> redone;
  std::vector<std::vector<std::string>> loads;
  std::vector<std::string> requests;
  std::vector<uint64_t> conns;
  std::vector<json> ids;
  std::vector<UsageQuery> queries;
};

TEST_CASE("dispatcher: usage is answered by the deferred ops", "[dispatcher]") {
  Harness h;
  SECTION("unavailable without them") {
    CheckError(h.Call(json{{"op", "usage"}, {"user", "alice"}}, kUser),
               "unavailable", "usage:");
  }
  SECTION("handed on, with no reply now") {
    FakeDeferred deferred;
    h.dispatcher().set_deferred(&deferred);
    auto send = [&](const json& request) {
      std::string out;
      h.dispatcher().Handle(Peer{1000, false, 42}, request.dump(), kT0, &out);
      CHECK(out.empty());
      CHECK(h.dispatcher().TakeDeferred());
      CHECK_FALSE(h.dispatcher().TakeDeferred());
    };
    send(json{{"id", 5}, {"op", "usage"}, {"user", "alice"}});
    send(json{{"op", "usage"},
              {"user", "alice"},
              {"task", "t1"},
              {"since_ms", 1000},
              {"by", "model"}});
    send(json{{"op", "usage"}, {"user", "alice"}, {"by", "total"}});
    send(json{{"op", "usage"}, {"user", "alice"}, {"by", nullptr}});
    REQUIRE(deferred.queries.size() == 4);
    CHECK(deferred.conns[0] == 42);
    CHECK(deferred.ids[0] == 5);
    CHECK(deferred.ids[1].is_null());
    CHECK(deferred.queries[0].user == "alice");
    CHECK(deferred.queries[0].task.empty());
    CHECK(deferred.queries[0].since_ms == 0);
    CHECK(deferred.queries[0].by == "task");
    CHECK(deferred.queries[1].task == "t1");
    CHECK(deferred.queries[1].since_ms == 1000);
    CHECK(deferred.queries[1].by == "model");
    CHECK(deferred.queries[2].by.empty());  // one total
    CHECK(deferred.queries[3].by == "task");  // null is the default

    for (const auto& [request, prefix] :
         {std::pair{json{{"op", "usage"}}, "user:"},
          std::pair{json{{"op", "usage"}, {"user", ""}}, "user:"},
          std::pair{json{{"op", "usage"}, {"user", "a"}, {"since_ms", -1}},
                    "since_ms:"},
          std::pair{json{{"op", "usage"}, {"user", "a"}, {"by", "week"}},
                    "by:"},
          std::pair{json{{"op", "usage"}, {"user", "a"}, {"task", 1}},
                    "task:"}}) {
      CheckError(h.Call(request, kUser), "bad_request", prefix);
    }
    CHECK(deferred.queries.size() == 4);
  }
}

TEST_CASE("dispatcher: ErrorLine and OpsHelp", "[dispatcher]") {
  std::string line = Dispatcher::ErrorLine(ErrorCode::kLineTooLong,
                                           "request: longer than 65536 bytes");
  REQUIRE(line.back() == '\n');
  json j = json::parse(line);
  CheckError(j, "line_too_long", "request:");
  CHECK_FALSE(j.contains("id"));

  const std::string help = "\n" + Dispatcher::OpsHelp();
  for (const char* op : {"ping", "acquire", "commit", "cancel", "status",
                         "usage", "metrics"}) {
    CAPTURE(op);
    CHECK(help.find("\n" + std::string(op) + ": ") != std::string::npos);
  }
  for (const char* op : {"policy.set", "policy.get", "policy.list",
                         "policy.delete", "reset", "prices.set"}) {
    CAPTURE(op);
    CHECK(help.find("\n" + std::string(op) + " (admin): ") !=
          std::string::npos);
  }
}

}  // namespace
}  // namespace brake
