// The two decoders of a request line (daemon/request.h) against each other:
// whenever the scanner accepts a line, nlohmann must read the same request
// (op, id, every hot field) and the ops table must judge both alike, with the
// same message. And every reply the dispatcher writes, by fast_reply.h's
// writers or by nlohmann, is what nlohmann would write for the same answer.
// A fixed table of edge cases here; generated lines and byte-level
// mutations in request_generated_test.cc.
#include <catch2/catch.hpp>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "daemon/fast_reply.h"
#include "tests/daemon/request_pipeline.h"

namespace brake {
namespace {

using nlohmann::json;

TEST_CASE("request: a table of lines decoded alike by both decoders",
          "[dispatcher][request]") {
  Pipeline t;
  const std::vector<std::string> lines = {
      R"({"op":"acquire","user":"alice","task":"t1"})",
      R"({"id":1,"op":"acquire","user":"alice","task":"t1","tokens":100})",
      R"({"id":"a","op":"acquire","user":"alice","task":"t1","tokens":100,"requests":2,"model":"gpt-4o","resource":"openai","fingerprint":"f","parent":null,"wait_ms":0})",
      R"( { "op" : "acquire" , "user" : "alice" , "task" : "t2" } )",
      "{\t\"op\":\"acquire\",\"user\":\"alice\",\"task\":\"t2\"}\r",
      R"({"task":"t3","user":"bob","op":"acquire","id":-5})",
      R"({"op":"acquire","user":"a\"b","task":"t\/4","id":"x\ny\u0001"})",
      R"({"op":"acquire","user":"a\\b","task":"t\t5"})",
      R"({"op":"acquire","user":"\u0061lice","task":"t1"})",
      R"({"op":"acquire","user":"é","task":"t€"})",
      "{\"op\":\"acquire\",\"user\":\"\xc2\x85\",\"task\":\"t\"}",
      "{\"op\":\"acquire\",\"user\":\"\xff\",\"task\":\"t\"}",
      "{\"op\":\"acquire\",\"user\":\"\xed\xa0\x80\",\"task\":\"t\"}",
      R"({"op":"acquire","user":"*","task":"t1"})",
      R"({"op":"acquire","user":"","task":"t1"})",
      R"({"op":"acquire","user":"alice"})",
      R"({"op":"acquire","user":"alice","task":null})",
      R"({"op":"acquire","user":"alice","task":"t1","tokens":-1})",
      R"({"op":"acquire","user":"alice","task":"t1","tokens":-0})",
      R"({"op":"acquire","user":"alice","task":"t1","tokens":01})",
      R"({"op":"acquire","user":"alice","task":"t1","tokens":1.0})",
      R"({"op":"acquire","user":"alice","task":"t1","tokens":1e2})",
      R"({"op":"acquire","user":"alice","task":"t1","tokens":"5"})",
      R"({"op":"acquire","user":"alice","task":"t1","tokens":true})",
      R"({"op":"acquire","user":"alice","task":"t1","tokens":1000000000000})",
      R"({"op":"acquire","user":"alice","task":"t1","tokens":1000000000001})",
      R"({"op":"acquire","user":"alice","task":"t1","tokens":123456789012345678})",
      R"({"op":"acquire","user":"alice","task":"t1","tokens":99999999999999999999})",
      R"({"op":"acquire","user":"alice","task":"t1","requests":1000001})",
      R"({"op":"acquire","user":"alice","task":"t1","wait_ms":5})",
      R"({"op":"acquire","user":"alice","task":"t1","wait_ms":3600001})",
      R"({"op":"acquire","user":"alice","task":"t1","extra":1})",
      R"({"op":"acquire","user":"alice","task":"t1","user":"bob"})",
      R"({"op":"acquire","user":"alice","task":"t1","nested":{"a":1}})",
      R"({"op":"acquire","user":"alice","task":"t1"} x)",
      R"({"op":"acquire","user":"alice","task":"t1",})",
      R"({"op":"acquire","user":"alice","task":"t1")",
      R"({"op":"acquire","user":"alice","task":"t1""})",
      R"({"op":"acquire","user":"alice","task":"bob-task"})",
      R"({"op":"acquire","user":"bob","task":"bob-task"})",
      R"({"op":"acquire","user":"alice","task":"bob-task"})",
      R"({"id":null,"op":"acquire","user":"alice","task":"t1"})",
      R"({"id":1.5,"op":"acquire","user":"alice","task":"t1"})",
      R"({"id":18446744073709551615,"op":"acquire","user":"alice","task":"t1"})",
      R"({"id":-9223372036854775808,"op":"acquire","user":"alice","task":"t1"})",
      R"({"id":[],"op":"acquire","user":"alice","task":"t1"})",
      R"({"op":"acquire ","user":"alice","task":"t1"})",
      R"({"op":null,"user":"alice","task":"t1"})",
      R"({"user":"alice","task":"t1"})",
      R"({})",
      R"([])",
      R"("acquire")",
      R"({"op":"commit","lease":"L1"})",
      R"({"op":"commit","lease":"L2","tokens":10,"input_tokens":8,"output_tokens":2,"latency_ms":5,"outcome":"error","retry_after_ms":0})",
      R"({"op":"commit","lease":"L2"})",
      R"({"op":"commit","lease":"L3","tokens":5,"input_tokens":8})",
      R"({"op":"commit","lease":"L3","outcome":"bogus"})",
      R"({"op":"commit","lease":"L3","outcome":"throttled","retry_after_ms":86400001})",
      R"({"id":"c","op":"commit","lease":"L3","outcome":"throttled","retry_after_ms":250,"input_tokens":1000,"output_tokens":3000})",
      R"({"op":"commit","lease":"nope"})",
      R"({"op":"commit","lease":""})",
      R"({"op":"commit","lease":5})",
      R"({"op":"commit"})",
      R"({"op":"cancel","lease":"L4"})",
      R"({"id":4,"op":"cancel","lease":"L4"})",
      R"({"op":"cancel","lease":"L\u0035"})",
      R"({"op":"cancel","lease":"nope"})",
      R"({"op":"cancel","lease":"L6","tokens":1})",
      R"({"op":"ping"})",
  };
  for (const Peer& peer : {kUser, kAdmin}) {
    for (const std::string& line : lines) t.Send(line, peer);
  }
  t.SetStorageOk(false);
  t.Send(R"({"op":"acquire","user":"alice","task":"t1"})", kUser);
  t.Send(R"({"op":"commit","lease":"L7"})", kUser);
  t.SetStorageOk(true);
  t.Send(R"({"op":"metrics"})", kAdmin);
  CHECK(t.scanned() > 40);
}

TEST_CASE("request: with uid_users a peer settles only its users' leases",
          "[dispatcher][request]") {
  Config config;
  config.uid_users[1000] = {"alice"};
  Pipeline t(config);
  const std::string own =
      LeaseOf(t.Send(R"({"op":"acquire","user":"alice","task":"t1"})", kUser));
  REQUIRE_FALSE(own.empty());
  CHECK(t.Send(R"({"op":"acquire","user":"bob","task":"t2"})", kUser)
            .find("\"code\":\"forbidden\"") != std::string::npos);
  const std::string bobs =
      LeaseOf(t.Send(R"({"op":"acquire","user":"bob","task":"t2"})", kAdmin));
  REQUIRE_FALSE(bobs.empty());
  for (const char* op : {"commit", "cancel"}) {
    CHECK(t.Send(std::string(R"({"op":")") + op + R"(","lease":")" + bobs +
                     "\"}",
                 kUser)
              .find("\"code\":\"forbidden\"") != std::string::npos);
  }
  CHECK(t.Send(R"({"op":"cancel","lease":")" + own + "\"}", kUser)
            .find("\"ok\":true") != std::string::npos);
  CHECK(t.Send(R"({"op":"cancel","lease":")" + bobs + "\"}", kAdmin)
            .find("\"ok\":true") != std::string::npos);
}

TEST_CASE("request: doubles are written as nlohmann writes them",
          "[dispatcher][request]") {
  std::mt19937_64 rng(42);
  std::vector<double> values = {0.0,  -0.0, 1.0,  5.0,           0.1,
                                1e-9, 1e-5, 1e-4, 123456789.123, 1e15,
                                1e16, 1e21, -3.25};
  for (int i = 0; i < 20000; ++i) {
    int64_t nano =
        static_cast<int64_t>(rng() % 4'000'000'000'000ull) - 1'000'000'000'000;
    values.push_back(static_cast<double>(nano >> (rng() % 40)) / 1e9);
  }
  for (double v : values) {
    std::string ours;
    AppendJsonDouble(v, &ours);
    INFO(v);
    CHECK(ours == json(v).dump());
  }
}

TEST_CASE("request: strings are escaped as nlohmann escapes them",
          "[dispatcher][request]") {
  for (int c = 0; c < 0x80; ++c) {
    std::string s = "a" + std::string(1, static_cast<char>(c)) + "b";
    std::string ours;
    CHECK(AppendJsonString(s, &ours));
    CHECK(ours == json(s).dump());
  }
  std::string ours;
  CHECK(AppendJsonString("é€😀", &ours));
  CHECK(ours == json("é€😀").dump());
  ours.clear();
  CHECK_FALSE(AppendJsonString("\xff", &ours));
}

}  // namespace
}  // namespace brake
