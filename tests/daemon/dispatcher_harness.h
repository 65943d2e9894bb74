// A Dispatcher over an in-memory Engine for unit tests: Handle() driven
// directly, with explicit clocks and peers, each reply parsed and checked to
// be exactly one JSON line. Test thread only.
#pragma once

#include <catch2/catch.hpp>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>

#include "budget/calendar.h"
#include "budget/engine.h"
#include "daemon/config.h"
#include "daemon/dispatcher.h"

namespace brake {

using json = nlohmann::json;

// 2024-03-01 10:00:00 UTC.
inline const int64_t kT0 =
    DaysFromCivil({2024, 3, 1}) * kUsPerDay + 10 * kUsPerHour;

inline const Peer kAdmin{0, true};
inline const Peer kUser{1000, false};

// Requests the dispatcher tests build often.
inline json Policy1(const std::string& scope, const json& limits) {
  return {{"op", "policy.set"}, {"scope", scope}, {"limits", limits}};
}

inline json Acq(const std::string& user, const std::string& task,
                int64_t tokens = 0) {
  return {{"op", "acquire"}, {"user", user}, {"task", task},
          {"tokens", tokens}};
}

// Two requests a minute per subject.
inline const json kRpm = {{"name", "rpm"},
                          {"resource", "requests"},
                          {"algorithm", "fixed_window"},
                          {"limit", 2},
                          {"window_ms", 60000}};

class Harness {
 public:
  explicit Harness(Config config = Config())
      : config_(std::move(config)), engine_("L", config_.lease_ttl_ms * 1000) {}

  // Sends one line and parses the one reply line it must produce.
  json Call(const std::string& line, const Peer& peer = kAdmin,
            int64_t now_us = kT0) {
    std::string out;
    dispatcher_.Handle(peer, line, now_us, &out);
    REQUIRE_FALSE(out.empty());
    REQUIRE(out.back() == '\n');
    REQUIRE(out.find('\n') == out.size() - 1);  // exactly one line
    json reply = json::parse(out, nullptr, /*allow_exceptions=*/false);
    REQUIRE(reply.is_object());
    REQUIRE(reply.contains("ok"));
    return reply;
  }
  json Call(const json& request, const Peer& peer = kAdmin,
            int64_t now_us = kT0) {
    return Call(request.dump(), peer, now_us);
  }
  // A call that must succeed.
  json Ok(const json& request, const Peer& peer = kAdmin,
          int64_t now_us = kT0) {
    json reply = Call(request, peer, now_us);
    INFO(reply.dump());
    REQUIRE(reply["ok"] == true);
    REQUIRE_FALSE(reply.contains("error"));
    return reply;
  }

  Engine& engine() { return engine_; }
  Config& config() { return config_; }
  Dispatcher& dispatcher() { return dispatcher_; }

 private:
  Config config_;
  ServerStats stats_;
  Engine engine_;
  Dispatcher dispatcher_{&engine_, &config_, &stats_};
};

// Checks an error reply: its shape, code and the field its message names.
inline void CheckError(const json& reply, const std::string& code,
                       const std::string& prefix) {
  INFO(reply.dump());
  CHECK(reply["ok"] == false);
  REQUIRE(reply.contains("error"));
  const json& error = reply["error"];
  CHECK(error["code"] == code);
  REQUIRE(error["message"].is_string());
  const std::string message = error["message"].get<std::string>();
  CHECK(message.rfind(prefix, 0) == 0);
  CHECK(error.size() == 2);
  for (const auto& [key, value] : reply.items()) {
    CHECK((key == "ok" || key == "error" || key == "id"));
  }
}

}  // namespace brake
