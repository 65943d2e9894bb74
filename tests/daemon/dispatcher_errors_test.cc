// Dispatcher: every bad request gets its error code and names its field;
// nesting limits, boundary values, and admin ops refused to other peers.
#include "daemon/dispatcher.h"

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/daemon/dispatcher_harness.h"

namespace brake {
namespace {

using nlohmann::json;

std::string Repeat(char c, size_t n) { return std::string(n, c); }

std::string Nested(int depth) {
  return R"({"op":"ping","x":)" + std::string(depth - 1, '[') +
         std::string(depth - 1, ']') + "}";
}

struct ErrorCase {
  std::string line;
  std::string code;
  std::string prefix;  // the field the message must start with
};

std::vector<ErrorCase> BadLines() {
  const std::string name129 = Repeat('n', 129);
  const std::string lease257 = Repeat('l', 257);
  auto acquire_with = [](const std::string& field, const std::string& value) {
    return R"({"op":"acquire","user":"alice","task":"t1",")" + field +
           "\":" + value + "}";
  };
  auto limit = [](const std::string& body) {
    return R"({"op":"policy.set","scope":"user:*","limits":[)" + body + "]}";
  };
  std::vector<ErrorCase> cases = {
      // bad_json
      {"{", "bad_json", "request:"},
      {"not json", "bad_json", "request:"},
      {"", "bad_json", "request:"},
      {R"({"op":"ping"} {"op":"ping"})", "bad_json", "request:"},
      {R"({"op":"ping",})", "bad_json", "request:"},
      {"{\"op\":\"ping\",\"user\":\"\xff\"}", "bad_json", "request:"},
      {Nested(33), "bad_json", "request:"},
      {std::string(100000, '['), "bad_json", "request:"},
      // the request itself
      {"[1]", "bad_request", "request:"},
      {"42", "bad_request", "request:"},
      {"{}", "bad_request", "op:"},
      {R"({"op":7})", "bad_request", "op:"},
      {R"({"op":null})", "bad_request", "op:"},
      {R"({"id":1.5,"op":"ping"})", "bad_request", "id:"},
      {R"({"id":true,"op":"ping"})", "bad_request", "id:"},
      {R"({"id":{},"op":"ping"})", "bad_request", "id:"},
      // unknown_op
      {R"({"op":"nope"})", "unknown_op", "op:"},
      {R"({"op":"PING"})", "unknown_op", "op:"},
      {R"({"op":""})", "unknown_op", "op:"},
      // acquire fields
      {R"({"op":"acquire","task":"t1"})", "bad_request", "user:"},
      {R"({"op":"acquire","user":"alice"})", "bad_request", "task:"},
      {R"({"op":"acquire","user":5,"task":"t1"})", "bad_request", "user:"},
      {R"({"op":"acquire","user":"","task":"t1"})", "bad_request", "user:"},
      {R"({"op":"acquire","user":")" + name129 + R"(","task":"t1"})",
       "bad_request", "user:"},
      {R"({"op":"acquire","user":"alice","task":")" + name129 + R"("})",
       "bad_request", "task:"},
      {R"({"op":"acquire","user":"a\u0001b","task":"t1"})", "bad_request",
       "user:"},
      {R"({"op":"acquire","user":"alice","task":"t\n1"})", "bad_request",
       "task:"},
      {R"({"op":"acquire","user":"a\u007f","task":"t1"})", "bad_request",
       "user:"},
      {R"({"op":"acquire","user":"a\u0085","task":"t1"})", "bad_request",
       "user:"},
      {acquire_with("tokens", "-1"), "bad_request", "tokens:"},
      {acquire_with("tokens", "1.5"), "bad_request", "tokens:"},
      {acquire_with("tokens", "1e30"), "bad_request", "tokens:"},
      {acquire_with("tokens", "18446744073709551616"), "bad_request",
       "tokens:"},
      {acquire_with("tokens", "18446744073709551615"), "bad_request",
       "tokens:"},
      {acquire_with("tokens", "1000000000001"), "bad_request", "tokens:"},
      {acquire_with("tokens", "\"5\""), "bad_request", "tokens:"},
      {acquire_with("tokens", "true"), "bad_request", "tokens:"},
      {acquire_with("requests", "-1"), "bad_request", "requests:"},
      {acquire_with("requests", "1000001"), "bad_request", "requests:"},
      {acquire_with("wait_ms", "-5"), "bad_request", "wait_ms:"},
      {acquire_with("wait_ms", "0.5"), "bad_request", "wait_ms:"},
      {acquire_with("model", "\"\""), "bad_request", "model:"},
      {acquire_with("resource", "7"), "bad_request", "resource:"},
      {acquire_with("fingerprint", "\"" + name129 + "\""), "bad_request",
       "fingerprint:"},
      {acquire_with("parent", "\"\""), "bad_request", "parent:"},
      {acquire_with("model", "\"unpriced\""), "bad_request", "model:"},
      // a new task's parent must exist and not be itself
      {R"({"op":"acquire","user":"alice","task":"new","parent":"missing"})",
       "bad_request", "parent:"},
      {R"({"op":"acquire","user":"alice","task":"new","parent":"new"})",
       "bad_request", "parent:"},
      // commit and cancel fields
      {R"({"op":"commit"})", "bad_request", "lease:"},
      {R"({"op":"commit","lease":""})", "bad_request", "lease:"},
      {R"({"op":"commit","lease":5})", "bad_request", "lease:"},
      {R"({"op":"commit","lease":")" + lease257 + R"("})", "bad_request",
       "lease:"},
      {R"({"op":"commit","lease":"x","tokens":-1})", "bad_request",
       "tokens:"},
      {R"({"op":"commit","lease":"x","input_tokens":1.5})", "bad_request",
       "input_tokens:"},
      {R"({"op":"commit","lease":"x","output_tokens":"1"})", "bad_request",
       "output_tokens:"},
      {R"({"op":"commit","lease":"x","latency_ms":-1})", "bad_request",
       "latency_ms:"},
      {R"({"op":"commit","lease":"x","outcome":"fine"})", "bad_request",
       "outcome:"},
      {R"({"op":"commit","lease":"x","outcome":1})", "bad_request",
       "outcome:"},
      {R"({"op":"commit","lease":"x","retry_after_ms":-1})", "bad_request",
       "retry_after_ms:"},
      {R"({"op":"cancel"})", "bad_request", "lease:"},
      {R"({"op":"cancel","lease":[]})", "bad_request", "lease:"},
      // unknown_lease
      {R"({"op":"commit","lease":"x"})", "unknown_lease", "lease:"},
      {R"({"op":"cancel","lease":"x"})", "unknown_lease", "lease:"},
      // status
      {R"({"op":"status"})", "bad_request", "user:"},
      {R"({"op":"status","user":"alice","task":"t1"})", "bad_request",
       "user:"},
      {R"({"op":"status","user":""})", "bad_request", "user:"},
      {R"({"op":"status","task":1})", "bad_request", "task:"},
      {R"({"op":"status","resource":")" + name129 + R"("})", "bad_request",
       "resource:"},
      // admin ops: scopes
      {R"({"op":"policy.set"})", "bad_request", "scope:"},
      {R"({"op":"policy.set","scope":"bogus"})", "bad_request", "scope:"},
      {R"({"op":"policy.set","scope":"user:"})", "bad_request", "scope:"},
      {R"({"op":"policy.set","scope":"users:bob"})", "bad_request", "scope:"},
      {R"({"op":"policy.set","scope":"user:a\u0002"})", "bad_request",
       "scope:"},
      {R"({"op":"policy.set","scope":"user:)" + name129 + R"("})",
       "bad_request", "scope:"},
      {R"({"op":"policy.set","scope":7})", "bad_request", "scope:"},
      {R"({"op":"policy.get"})", "bad_request", "scope:"},
      {R"({"op":"policy.delete","scope":"*"})", "bad_request", "scope:"},
      {R"({"op":"reset","scope":"everything"})", "bad_request", "scope:"},
      // policy.set limits
      {R"({"op":"policy.set","scope":"global","limits":{}})", "bad_request",
       "limits:"},
      // null limits would set an empty policy, exempting the scope from its
      // kind's default (found by the docs test)
      {R"({"op":"policy.set","scope":"user:bob","limits":null})",
       "bad_request", "limits:"},
      {R"({"op":"policy.set","scope":"user:bob","limits":null,"breaker":null})",
       "bad_request", "limits:"},
      // only a task's breaker sees fingerprints
      {R"({"op":"policy.set","scope":"user:*","breaker":{"loop":{"repeats":3,"window_ms":1000}}})",
       "bad_request", "breaker.loop:"},
      {R"({"op":"policy.set","scope":"global","breaker":[]})", "bad_request",
       "breaker:"},
      {limit("7"), "bad_request", "limits[0]:"},
      {limit(R"({"resource":"requests","algorithm":"concurrency","limit":1})"),
       "bad_request", "limits[0].name:"},
      {limit(R"({"name":"","resource":"requests","algorithm":"concurrency","limit":1})"),
       "bad_request", "limits[0].name:"},
      {limit(R"({"name":"x","resource":"bytes","algorithm":"concurrency","limit":1})"),
       "bad_request", "limits[0].resource:"},
      {limit(R"({"name":"x","resource":"requests","algorithm":"magic"})"),
       "bad_request", "limits[0].algorithm:"},
      {limit(R"({"name":"x","resource":"requests","algorithm":"fixed_window","limit":1})"),
       "bad_request", "limits[0].window_ms:"},
      {limit(R"({"name":"x","resource":"requests","algorithm":"fixed_window","limit":1,"window_ms":0})"),
       "bad_request", "limits[0].window_ms:"},
      {limit(R"({"name":"x","resource":"requests","algorithm":"fixed_window","limit":1,"window_ms":1000,"burst":2})"),
       "bad_request", "limits[0].burst:"},
      {limit(R"({"name":"x","resource":"requests","algorithm":"concurrency","limit":1},)"
             R"({"name":"y","resource":"requests","algorithm":"token_bucket","rate":-1})"),
       "bad_request", "limits[1].rate:"},
      {limit(R"({"name":"x","resource":"requests","algorithm":"concurrency","limit":1},)"
             R"({"name":"x","resource":"requests","algorithm":"concurrency","limit":2})"),
       "bad_request", "limits[1].name:"},
      {limit(R"({"name":"x","resource":"usd","algorithm":"token_bucket","rate":1})"),
       "bad_request", "limits[0].resource:"},
      {limit(R"({"name":"x","resource":"requests","algorithm":"quota","limit":1,"period":"year"})"),
       "bad_request", "limits[0].period:"},
      {limit(R"({"name":"x","resource":"requests","algorithm":"quota","limit":1,"period":"day","shadow":"yes"})"),
       "bad_request", "limits[0].shadow:"},
      // prices.set
      {R"({"op":"prices.set","input_usd_per_mtok":1,"output_usd_per_mtok":1})",
       "bad_request", "model:"},
      {R"({"op":"prices.set","model":"m","output_usd_per_mtok":1})",
       "bad_request", "input_usd_per_mtok:"},
      {R"({"op":"prices.set","model":"m","input_usd_per_mtok":-1,"output_usd_per_mtok":1})",
       "bad_request", "input_usd_per_mtok:"},
      {R"({"op":"prices.set","model":"m","input_usd_per_mtok":1,"output_usd_per_mtok":"1"})",
       "bad_request", "output_usd_per_mtok:"},
      {R"({"op":"prices.set","model":"m","input_usd_per_mtok":1,"output_usd_per_mtok":1e7})",
       "bad_request", "output_usd_per_mtok:"},
      // top
      {R"({"op":"top"})", "bad_request", "by:"},
      {R"({"op":"top","by":"model"})", "bad_request", "by:"},
      {R"({"op":"top","by":7})", "bad_request", "by:"},
      {R"({"op":"top","by":"user","limit":0})", "bad_request", "limit:"},
      {R"({"op":"top","by":"user","limit":1001})", "bad_request", "limit:"},
      {R"({"op":"top","by":"user","limit":2.5})", "bad_request", "limit:"},
      {R"({"op":"top","by":"user","limit":"5"})", "bad_request", "limit:"},
      // forbidden: a task of another user, a parent of another user
      {R"({"op":"acquire","user":"bob","task":"owned"})", "forbidden",
       "task:"},
      {R"({"op":"acquire","user":"bob","task":"b2","parent":"owned"})",
       "forbidden", "parent:"},
  };
  return cases;
}

TEST_CASE("dispatcher: every bad request gets its code and names the field",
          "[dispatcher]") {
  Harness h;
  // State that bad requests must leave alone.
  h.Ok(Policy1("user:*", json::array({kRpm})));
  h.Ok(json{{"op", "prices.set"},
            {"model", "gpt-4o"},
            {"input_usd_per_mtok", 2.5},
            {"output_usd_per_mtok", 10}});
  h.Ok(Acq("alice", "owned", 100), kUser);
  h.Ok(Acq("alice", "t1", 100), kUser);
  Batch drained;
  (void)h.engine().Drain(&drained, [](const Lease&, std::string*) {});
  REQUIRE_FALSE(h.engine().dirty());
  const json list_before = h.Ok(json{{"op", "policy.list"}});
  const json status_before =
      h.Ok(json{{"op", "status"}, {"user", "alice"}});

  for (const ErrorCase& c : BadLines()) {
    CAPTURE(c.line.substr(0, 200));
    json reply = h.Call(c.line, kUser);
    if (c.code == "bad_request" && reply["error"]["code"] == "forbidden") {
      reply = h.Call(c.line, kAdmin);  // an admin op: check its validation
    }
    CheckError(reply, c.code, c.prefix);
  }
  CHECK_FALSE(h.engine().dirty());
  CHECK(h.Ok(json{{"op", "policy.list"}}) == list_before);
  CHECK(h.Ok(json{{"op", "status"}, {"user", "alice"}}) == status_before);
  CHECK(h.engine().open_leases() == 2);
}

TEST_CASE("dispatcher: nesting up to 32 levels parses", "[dispatcher]") {
  Harness h;
  h.Ok(json::parse(Nested(32)));
  CheckError(h.Call(Nested(33)), "bad_json", "request:");
  // Brackets inside strings do not count.
  h.Ok(json{{"op", "ping"}, {"x", std::string(100, '[')}});
}

TEST_CASE("dispatcher: valid boundary values are accepted", "[dispatcher]") {
  Harness h;
  const std::string name128(128, 'n');
  json r = h.Ok(json{{"op", "acquire"},
                     {"user", name128},
                     {"task", name128},
                     {"tokens", 1'000'000'000'000},
                     {"requests", 0},
                     {"resource", "r\xc3\xa9sum\xc3\xa9"}});  // UTF-8 is fine
  CHECK(r["granted"] == true);
  h.Ok(json{{"op", "status"}, {"user", name128}, {"task", nullptr}});
  h.Ok(json{{"op", "policy.set"},
            {"scope", "user:" + name128},
            {"limits", json::array()}});  // an explicit exemption
}

TEST_CASE("dispatcher: admin ops are refused to other peers", "[dispatcher]") {
  Harness h;
  for (const json& request :
       {json{{"op", "policy.set"}, {"scope", "global"}, {"limits", json::array()}},
        json{{"op", "policy.get"}, {"scope", "global"}},
        json{{"op", "policy.list"}},
        json{{"op", "policy.delete"}, {"scope", "global"}},
        json{{"op", "reset"}, {"scope", "global"}},
        json{{"op", "prices.set"},
             {"model", "m"},
             {"input_usd_per_mtok", 1},
             {"output_usd_per_mtok", 1}}}) {
    CAPTURE(request.dump());
    CheckError(h.Call(request, kUser), "forbidden", "op:");
  }
  CHECK(h.engine().policies().empty());
  CHECK(h.engine().GetPrice("m") == nullptr);
  // Everything else is open to every peer.
  h.Ok(json{{"op", "ping"}}, kUser);
  h.Ok(json{{"op", "metrics"}}, kUser);
  h.Ok(json{{"op", "status"}, {"user", "x"}}, kUser);
}

}  // namespace
}  // namespace brake
