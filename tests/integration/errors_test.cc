// Every error code over the wire: the code, a message naming the field, the
// request id echoed, the connection kept open (except line_too_long) and no
// state changed.
#include <algorithm>
#include <catch2/catch.hpp>
#include <stdexcept>
#include <string>
#include <vector>

#include "tests/integration/expect.h"
#include "tests/integration/harness.h"

namespace brake::integration {
namespace {

// Everything a bad request could have changed, as the daemon reports it.
// Only limits without a clock in their status (quota "total", concurrency),
// so two snapshots taken at different times compare equal.
json Snapshot(Client& c) {
  json metrics = CallOk(c, {{"op", "metrics"}});
  const std::string text = metrics["text"];
  return {
      {"policies", CallOk(c, {{"op", "policy.list"}})["policies"]},
      {"alice", CallOk(c, {{"op", "status"}, {"user", "alice"}})},
      {"bob", CallOk(c, {{"op", "status"}, {"user", "bob"}})},
      {"t1", CallOk(c, {{"op", "status"}, {"task", "t1"}})},
      {"t2", CallOk(c, {{"op", "status"}, {"task", "t2"}})},
      {"leases_open", MetricValue(text, "brake_leases_open").value_or(-1)},
      {"tasks", MetricValue(text, "brake_tasks").value_or(-1)},
      {"granted", MetricValue(text, "brake_acquires_total{result=\"granted\"}")
                      .value_or(-1)},
  };
}

// alice owns t1 with one settled and one open lease under a quota.
void SetUpState(Client& c) {
  CallOk(c, {{"op", "policy.set"},
             {"scope", "user:alice"},
             {"limits", json::parse(R"([
               {"name":"q","resource":"requests","algorithm":"quota",
                "limit":10,"period":"total"},
               {"name":"inflight","resource":"requests",
                "algorithm":"concurrency","limit":4}])")}});
  std::string settled = AcquireLease(c, "alice", "t1", {{"tokens", 100}});
  CallOk(c, {{"op", "commit"}, {"lease", settled}, {"tokens", 120}});
  AcquireLease(c, "alice", "t1", {{"tokens", 50}});
}

struct BadLine {
  const char* what;
  std::string line;
  const char* code;
  const char* field;  // the message must mention it; "" for none
  json id;            // the reply must carry it; null for none
};

std::vector<BadLine> BadLines() {
  const std::string long_name(129, 'u');
  return {
      {"not JSON", "{nope", "bad_json", "(at byte 3)", nullptr},
      {"truncated JSON", R"({"op":"ping")", "bad_json", "(at byte 13)", nullptr},
      {"trailing garbage", R"({"op":"ping"} x)", "bad_json", "(at byte 15)",
       nullptr},
      {"not an object", "[1,2]", "bad_request", "", nullptr},
      {"a bare string", R"("ping")", "bad_request", "", nullptr},
      {"no op", R"({"id":1})", "bad_request", "op", 1},
      {"op not a string", R"({"id":2,"op":5})", "bad_request", "op", 2},
      {"id an array", R"({"id":[1],"op":"ping"})", "bad_request", "id",
       nullptr},
      {"unknown op", R"({"id":"x","op":"frobnicate"})", "unknown_op", "op",
       "x"},
      {"acquire without user", R"({"id":3,"op":"acquire","task":"t9"})",
       "bad_request", "user", 3},
      {"acquire without task", R"({"id":4,"op":"acquire","user":"alice"})",
       "bad_request", "task", 4},
      {"acquire with an empty user",
       R"({"id":5,"op":"acquire","user":"","task":"t9"})", "bad_request",
       "user", 5},
      {"acquire with a 129-byte user",
       R"({"id":6,"op":"acquire","task":"t9","user":")" + long_name + R"("})",
       "bad_request", "user", 6},
      {"acquire with a non-printable task",
       R"({"id":7,"op":"acquire","user":"alice","task":"t\u0001"})",
       "bad_request", "task", 7},
      {"acquire with negative tokens",
       R"({"id":8,"op":"acquire","user":"alice","task":"t1","tokens":-1})",
       "bad_request", "tokens", 8},
      {"acquire with string tokens",
       R"({"id":9,"op":"acquire","user":"alice","task":"t1","tokens":"5"})",
       "bad_request", "tokens", 9},
      {"acquire with fractional requests",
       R"({"id":10,"op":"acquire","user":"alice","task":"t1","requests":1.5})",
       "bad_request", "requests", 10},
      {"acquire with a negative wait",
       R"({"id":11,"op":"acquire","user":"alice","task":"t1","wait_ms":-5})",
       "bad_request", "wait_ms", 11},
      {"acquire with an unpriced model",
       R"({"id":12,"op":"acquire","user":"alice","task":"t1","model":"nope"})",
       "bad_request", "model", 12},
      {"acquire for a new task with an unknown parent",
       R"({"id":13,"op":"acquire","user":"bob","task":"t2","parent":"zz"})",
       "bad_request", "parent", 13},
      {"commit without lease", R"({"id":14,"op":"commit","tokens":5})",
       "bad_request", "lease", 14},
      {"commit with a bad outcome",
       R"({"id":15,"op":"commit","lease":"l","outcome":"great"})",
       "bad_request", "outcome", 15},
      {"commit with negative tokens",
       R"({"id":16,"op":"commit","lease":"l","tokens":-3})", "bad_request",
       "tokens", 16},
      {"cancel with a number lease", R"({"id":17,"op":"cancel","lease":5})",
       "bad_request", "lease", 17},
      {"status of nobody", R"({"id":18,"op":"status"})", "bad_request", "", 18},
      {"status of a user and a task",
       R"({"id":19,"op":"status","user":"alice","task":"t1"})", "bad_request",
       "", 19},
      {"policy.set with a bad scope",
       R"({"id":20,"op":"policy.set","scope":"bogus","limits":[]})",
       "bad_request", "scope", 20},
      {"policy.set without scope", R"({"id":21,"op":"policy.set","limits":[]})",
       "bad_request", "scope", 21},
      {"policy.set with limits not an array",
       R"({"id":22,"op":"policy.set","scope":"user:alice","limits":{}})",
       "bad_request", "limits", 22},
      {"policy.set with a zero rate",
       R"({"id":23,"op":"policy.set","scope":"user:alice","limits":[
          {"name":"a","resource":"requests","algorithm":"token_bucket",
           "rate":0,"per_ms":1000,"burst":1}]})",
       "bad_request", "limits[0].rate", 23},
      {"policy.set with an unknown algorithm",
       R"({"id":24,"op":"policy.set","scope":"user:alice","limits":[
          {"name":"a","resource":"requests","algorithm":"magic"}]})",
       "bad_request", "limits[0].algorithm", 24},
      {"policy.set with a limit missing window_ms",
       R"({"id":25,"op":"policy.set","scope":"user:alice","limits":[
          {"name":"a","resource":"requests","algorithm":"sliding_log",
           "limit":5}]})",
       "bad_request", "limits[0].window_ms", 25},
      {"policy.set with duplicate limit names",
       R"({"id":26,"op":"policy.set","scope":"user:alice","limits":[
          {"name":"a","resource":"requests","algorithm":"concurrency","limit":1},
          {"name":"a","resource":"requests","algorithm":"concurrency","limit":2}
          ]})",
       "bad_request", "limits[1]", 26},
      {"policy.get without scope", R"({"id":27,"op":"policy.get"})",
       "bad_request", "scope", 27},
      {"policy.delete with a bad scope",
       R"({"id":28,"op":"policy.delete","scope":"user:"})", "bad_request",
       "scope", 28},
      {"reset without scope", R"({"id":29,"op":"reset"})", "bad_request",
       "scope", 29},
      {"prices.set without input price",
       R"({"id":30,"op":"prices.set","model":"m","output_usd_per_mtok":1})",
       "bad_request", "input_usd_per_mtok", 30},
      {"prices.set with a negative price",
       R"({"id":31,"op":"prices.set","model":"m","input_usd_per_mtok":-1,
          "output_usd_per_mtok":1})",
       "bad_request", "input_usd_per_mtok", 31},
      {"commit of an unknown lease",
       R"({"id":32,"op":"commit","lease":"no-such-lease","tokens":1})",
       "unknown_lease", "lease", 32},
      {"cancel of an unknown lease",
       R"({"id":33,"op":"cancel","lease":"no-such-lease"})", "unknown_lease",
       "lease", 33},
      {"acquire for another user's task",
       R"({"id":34,"op":"acquire","user":"bob","task":"t1"})", "forbidden",
       "task", 34},
      {"acquire under another user's parent",
       R"({"id":35,"op":"acquire","user":"bob","task":"t2","parent":"t1"})",
       "forbidden", "parent", 35},
  };
}

TEST_CASE(
    "every bad request gets its error code, keeps the connection and "
    "changes nothing",
    "[integration]") {
  RunningDaemon d;
  Client c = d.daemon.Connect();
  SetUpState(c);
  const json before = Snapshot(c);

  for (BadLine& bad : BadLines()) {
    // The cases are wrapped for reading; the wire gets one line each.
    std::replace(bad.line.begin(), bad.line.end(), '\n', ' ');
    INFO("case: " << bad.what << "\nline: " << bad.line);
    c.SendLine(bad.line);
    std::optional<std::string> line = c.ReadLine();
    REQUIRE(line.has_value());
    json reply = json::parse(*line, nullptr, false);
    REQUIRE_FALSE(reply.is_discarded());
    RequireError(reply, bad.code, bad.field);
    if (bad.id.is_null()) {
      CHECK_FALSE(reply.contains("id"));
    } else {
      CHECK(reply["id"] == bad.id);
    }
    // Same connection still answers, and nothing changed.
    CHECK(CallOk(c, {{"op", "ping"}, {"id", "after"}})["id"] == "after");
    CHECK(Snapshot(c) == before);
  }
}

TEST_CASE("an error reply still counts in brake_errors_total",
          "[integration]") {
  RunningDaemon d;
  Client c = d.daemon.Connect();
  c.SendLine("{nope");
  c.ReadLine();
  c.SendLine(R"({"op":"commit","lease":"x"})");
  c.ReadLine();
  json metrics = CallOk(c, {{"op", "metrics"}});
  CHECK(MetricValue(metrics["text"], "brake_errors_total") == 2.0);
}

TEST_CASE(
    "a line over max_line_bytes gets line_too_long, then the "
    "connection closes",
    "[integration]") {
  RunningDaemon d(json{{"max_line_bytes", 1024}});
  Client setup = d.daemon.Connect();
  SetUpState(setup);
  const json before = Snapshot(setup);

  // {"op":"ping","pad":"xxx..."} padded to exactly `size` bytes.
  auto padded_ping = [](size_t size) {
    std::string head = R"({"op":"ping","pad":")";
    std::string tail = R"("})";
    return head + std::string(size - head.size() - tail.size(), 'x') + tail;
  };

  SECTION("a line of exactly max_line_bytes is accepted") {
    Client c = d.daemon.Connect();
    c.SendLine(padded_ping(1024));
    json reply = json::parse(c.ReadLine().value());
    CHECK(reply["ok"] == true);
  }

  SECTION("one byte more is too long; replies before it still arrive") {
    Client c = d.daemon.Connect();
    c.SendRaw(R"({"op":"ping","id":1})"
              "\n" +
              padded_ping(1025) + "\n" +
              R"({"op":"ping","id":2})"
              "\n");
    json first = json::parse(c.ReadLine().value());
    CHECK(first["id"] == 1);
    CHECK(first["ok"] == true);
    json error = json::parse(c.ReadLine().value());
    RequireError(error, "line_too_long");
    // The request behind the long line is never answered.
    CHECK(c.WaitForEof());
  }

  SECTION("a long line without a newline is refused before it ends") {
    Client c = d.daemon.Connect();
    c.SendRaw(std::string(4096, ' '));
    json error = json::parse(c.ReadLine().value());
    RequireError(error, "line_too_long");
    CHECK(c.WaitForEof());
  }

  SECTION("a long request sent in many small writes is refused") {
    Client c = d.daemon.Connect();
    std::string line = padded_ping(3000);
    // The daemon may close before the whole line is written (the write then
    // fails); only the error and the close matter.
    try {
      for (size_t i = 0; i < line.size(); i += 100) {
        c.SendRaw(line.substr(i, 100));
      }
    } catch (const std::runtime_error&) {
    }
    json error = json::parse(c.ReadLine().value());
    RequireError(error, "line_too_long");
    CHECK(c.WaitForEof());
  }

  // Other connections are unaffected and nothing changed.
  CHECK(Snapshot(setup) == before);
  Client fresh = d.daemon.Connect();
  CallOk(fresh, {{"op", "ping"}});
}

}  // namespace
}  // namespace brake::integration
