// The two decoders of a request line (daemon/request.h) against each other:
// whenever the scanner accepts a line, nlohmann must read the same request
// (op, id, every hot field) and the ops table must judge both alike, with the
// same message. And every reply the dispatcher writes, by fast_reply.h's
// writers or by nlohmann, is what nlohmann would write for the same answer.
// A fixed table of edge cases, then a few thousand generated lines and
// byte-level mutations (fixed seeds).
#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdint>
#include <iterator>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "budget/engine.h"
#include "daemon/config.h"
#include "daemon/dispatcher.h"
#include "daemon/ops.h"
#include "daemon/request.h"
#include "daemon/fast_reply.h"
#include "daemon/fast_request.h"
#include "tests/daemon/dispatcher_harness.h"

namespace brake {
namespace {

using nlohmann::json;

// Policies that make every kind of answer likely: denials by a small task
// bucket, usd remaining from a user quota, a shadow limit, a loop breaker
// (breaker_open with a cause), a concurrency cap, a priced model.
const char* const kSetup[] = {
    R"({"op":"policy.set","scope":"task:*","limits":[
        {"name":"tb","resource":"requests","algorithm":"token_bucket","rate":5,"per_ms":1000,"burst":5},
        {"name":"sh","resource":"requests","algorithm":"fixed_window","limit":2,"window_ms":60000,"shadow":true}],
        "breaker":{"loop":{"repeats":3,"window_ms":60000},"open_ms":500}})",
    R"({"op":"policy.set","scope":"user:*","limits":[
        {"name":"daily","resource":"usd","algorithm":"quota","limit":0.5,"period":"day"},
        {"name":"tpm","resource":"tokens","algorithm":"sliding_log","limit":200000,"window_ms":60000}]})",
    R"({"op":"policy.set","scope":"resource:openai","limits":[
        {"name":"inflight","resource":"requests","algorithm":"concurrency","limit":3}]})",
    R"({"op":"prices.set","model":"gpt-4o","input_usd_per_mtok":2.5,"output_usd_per_mtok":10})",
    R"({"op":"prices.set","model":"m\u00e9","input_usd_per_mtok":0.3,"output_usd_per_mtok":1.7})",
};

// Decodes `line` with both decoders; true when the scanner took it, after
// checking that nlohmann read the same request from it.
bool DecodersAgree(const std::string& line) {
  Request scanned;
  Request parsed;
  const bool took = scanned.Scan(line);
  const Status parse = parsed.Parse(line);
  if (!took) return false;
  INFO("request: " << line);
  REQUIRE(parse.ok());
  CHECK(scanned.op() == parsed.op());
  CHECK(scanned.IdJson() == parsed.IdJson());
  const Dispatcher::Op* op = FindOp(scanned.op());
  REQUIRE(op != nullptr);
  const Status a = ValidateFields(*op, scanned);
  const Status b = ValidateFields(*op, parsed);
  CHECK(a.code() == b.code());
  CHECK(a.message() == b.message());
  for (size_t k = 0; k < kFastKeys; ++k) {
    const FastKey key = static_cast<FastKey>(k);
    INFO("member " << FastKeyName(key));
    CHECK(scanned.Text(key) == parsed.Text(key));
    CHECK(scanned.OptInt(key) == parsed.OptInt(key));
  }
  return true;
}

// One dispatcher; Send checks both decoders on each line and that the reply
// is nlohmann's own spelling of itself.
class Pipeline {
 public:
  explicit Pipeline(Config config = Config()) : harness_(config) {
    for (const char* line : kSetup) {
      std::string compact = json::parse(line).dump();
      REQUIRE(Send(compact, kAdmin).find("\"ok\":true") != std::string::npos);
    }
  }

  std::string Send(const std::string& line, const Peer& peer) {
    scanned_ += DecodersAgree(line);
    std::string reply;
    harness_.dispatcher().Handle(peer, line, now_us_, &reply);
    harness_.dispatcher().TakeDeferred();
    INFO("request: " << line);
    REQUIRE(!reply.empty());
    REQUIRE(reply.back() == '\n');
    json r = json::parse(reply, nullptr, false);
    REQUIRE(r.is_object());
    CHECK(r.dump(-1, ' ', false, json::error_handler_t::replace) + "\n" ==
          reply);
    now_us_ += 37'000;
    return reply;
  }
  void SetStorageOk(bool ok) { harness_.dispatcher().set_storage_ok(ok); }
  // Lines the scanner took.
  int scanned() const { return scanned_; }

 private:
  Harness harness_;
  int64_t now_us_ = kT0;
  int scanned_ = 0;
};

std::string LeaseOf(const std::string& reply) {
  json r = json::parse(reply);
  return r.contains("lease") ? r["lease"].get<std::string>() : "";
}

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

// ---- generated lines
// ---------------------------------------------------------

class Generator {
 public:
  explicit Generator(uint64_t seed) : rng_(seed) {}

  template <size_t N>
  const char* Pick(const char* const (&options)[N]) {
    return options[rng_() % N];
  }
  bool Chance(int percent) { return static_cast<int>(rng_() % 100) < percent; }

  std::string Name() {
    static const char* const kNames[] = {
        R"("alice")",       R"("bob")",  R"("t1")",      R"("t2")",
        R"("t-3")",         R"("t4")",   R"("é")",       R"("\u00e9")",
        R"("a\"b")",        R"("a\/b")", R"("a\nb")",    R"("")",
        R"("*")",           R"("x\\y")", "\"\xc2\x85\"", "\"\xff\"",
        "\"\xe2\x82\xac\"", R"(null)",   R"(7)",         R"(true)",
        R"(["a"])"};
    if (Chance(2)) return "\"" + std::string(127 + rng_() % 3, 'n') + "\"";
    return Pick(kNames);
  }
  std::string Int() {
    static const char* const kInts[] = {"0",
                                        "1",
                                        "2",
                                        "5",
                                        "100",
                                        "1000",
                                        "250000",
                                        "-1",
                                        "-0",
                                        "01",
                                        "1.0",
                                        "1e3",
                                        "999999999999",
                                        "1000000000000",
                                        "1000000000001",
                                        "123456789012345678",
                                        "1234567890123456789",
                                        "18446744073709551616",
                                        "null",
                                        "true",
                                        R"("5")",
                                        "{}",
                                        "3600000",
                                        "86400000",
                                        "86400001"};
    return Pick(kInts);
  }
  std::string Id() {
    static const char* const kIds[] = {"1",
                                       "42",
                                       "-7",
                                       "0",
                                       R"("r1")",
                                       R"("")",
                                       R"("a\nb")",
                                       R"("\u0041")",
                                       "null",
                                       "1.5",
                                       "18446744073709551615",
                                       R"("é\t\"")",
                                       "[1]"};
    return Pick(kIds);
  }
  std::string Lease(const std::vector<std::string>& leases) {
    if (!leases.empty() && Chance(80)) {
      return "\"" + leases[rng_() % leases.size()] + "\"";
    }
    static const char* const kLeases[] = {
        R"("L999999")", R"("")", R"(null)", R"("\"")", "12", R"("L\u0031")"};
    return Pick(kLeases);
  }

  // One request line: mostly acquire / commit / cancel with plausible
  // fields, sometimes broken on purpose.
  std::string Line(const std::vector<std::string>& leases) {
    std::vector<std::pair<std::string, std::string>> fields;
    int kind = static_cast<int>(rng_() % 10);
    if (kind < 5) {
      fields.push_back({"op", R"("acquire")"});
      fields.push_back({"user", Chance(90) ? Pick(kUsers) : Name()});
      fields.push_back({"task", Chance(90) ? Pick(kTasks) : Name()});
      if (Chance(50))
        fields.push_back({"tokens", Chance(80) ? Pick(kTokens) : Int()});
      if (Chance(15)) fields.push_back({"requests", Chance(70) ? "1" : Int()});
      if (Chance(20))
        fields.push_back({"model", Chance(80) ? Pick(kModels) : Name()});
      if (Chance(20))
        fields.push_back({"resource", Chance(80) ? R"("openai")" : Name()});
      if (Chance(25))
        fields.push_back(
            {"fingerprint", Chance(80) ? Pick(kFingerprints) : Name()});
      if (Chance(10))
        fields.push_back({"parent", Chance(70) ? R"("t1")" : Name()});
      if (Chance(10)) fields.push_back({"wait_ms", Chance(70) ? "0" : Int()});
    } else if (kind < 8) {
      fields.push_back({"op", R"("commit")"});
      if (Chance(97)) fields.push_back({"lease", Lease(leases)});
      if (Chance(50))
        fields.push_back({"tokens", Chance(80) ? Pick(kTokens) : Int()});
      if (Chance(25))
        fields.push_back({"input_tokens", Chance(80) ? Pick(kTokens) : Int()});
      if (Chance(25))
        fields.push_back({"output_tokens", Chance(80) ? Pick(kTokens) : Int()});
      if (Chance(40))
        fields.push_back({"latency_ms", Chance(80) ? "120" : Int()});
      if (Chance(40)) fields.push_back({"outcome", Pick(kOutcomes)});
      if (Chance(15))
        fields.push_back({"retry_after_ms", Chance(70) ? "300" : Int()});
    } else if (kind < 9) {
      fields.push_back({"op", R"("cancel")"});
      if (Chance(97)) fields.push_back({"lease", Lease(leases)});
    } else {
      fields.push_back({"op", Pick(kOtherOps)});
      if (Chance(50)) fields.push_back({"user", Pick(kUsers)});
    }
    if (Chance(60)) fields.push_back({"id", Id()});
    if (Chance(3)) fields.push_back({"unknown", Int()});
    if (Chance(3) && fields.size() > 1) fields.push_back(fields[1]);
    std::shuffle(fields.begin() + (Chance(50) ? 0 : 1), fields.end(), rng_);
    const char* sp = Chance(85) ? "" : Pick(kSpaces);
    std::string line = std::string(sp) + "{";
    for (size_t i = 0; i < fields.size(); ++i) {
      if (i > 0) line += std::string(sp) + "," + sp;
      line += "\"" + fields[i].first + "\"" + sp + ":" + sp + fields[i].second;
    }
    line += std::string(sp) + "}" + sp;
    if (Chance(1)) line += "x";
    if (Chance(1) && line.size() > 3) line.resize(rng_() % line.size());
    return line;
  }

  std::mt19937_64& rng() { return rng_; }

 private:
  static constexpr const char* kUsers[] = {R"("alice")", R"("bob")",
                                           R"("carol")", R"("é")"};
  static constexpr const char* kTasks[] = {R"("t1")", R"("t2")", R"("t3")",
                                           R"("t4")", R"("t5")", R"("t\/6")"};
  static constexpr const char* kTokens[] = {"0",    "10",    "100",
                                            "1000", "20000", "150000"};
  static constexpr const char* kModels[] = {R"("gpt-4o")", R"("m\u00e9")",
                                            R"("mé")", R"("unpriced")"};
  static constexpr const char* kFingerprints[] = {R"("fp1")", R"("fp2")",
                                                  R"("fp\"3")"};
  static constexpr const char* kOutcomes[] = {
      R"("ok")",    R"("error")", R"("timeout")", R"("throttled")",
      R"("bogus")", "null",       R"("OK")",      "1"};
  static constexpr const char* kOtherOps[] = {
      R"("ping")",    R"("status")", R"("acquirex")",    R"("acq\u0075ire")",
      R"("metrics")", "null",        R"("breaker.list")"};
  static constexpr const char* kSpaces[] = {" ", "\t", "  ", " \t "};

  std::mt19937_64 rng_;
};

void RunGenerated(Pipeline& t, Generator& g, int lines) {
  std::vector<std::string> leases;
  for (int i = 0; i < lines; ++i) {
    std::string line = g.Line(leases);
    const Peer& peer = g.Chance(85) ? kUser : kAdmin;
    if (g.Chance(1)) t.SetStorageOk(g.Chance(50));
    std::string reply = t.Send(line, peer);
    json r = json::parse(reply, nullptr, false);
    REQUIRE(r.is_object());
    if (r.contains("lease") && r["lease"].is_string()) {
      leases.push_back(r["lease"].get<std::string>());
      if (leases.size() > 40) leases.erase(leases.begin());
    }
  }
  t.SetStorageOk(true);
  t.Send(R"({"op":"metrics"})", kAdmin);
  for (const char* scope : {"alice", "bob", "carol"}) {
    t.Send(std::string(R"({"op":"status","user":")") + scope + "\"}", kAdmin);
  }
  t.Send(R"({"op":"status","task":"t1"})", kAdmin);
  t.Send(R"({"op":"status","resource":"openai"})", kAdmin);
  t.Send(R"({"op":"breaker.list"})", kAdmin);
}

TEST_CASE("request: generated lines decoded alike by both decoders",
          "[dispatcher][request]") {
  Generator g(20261130);
  SECTION("default config") {
    Pipeline t;
    RunGenerated(t, g, 4000);
    INFO("lines scanned: " << t.scanned());
    CHECK(t.scanned() > 1200);
  }
  SECTION("uid_users") {
    Config config;
    config.uid_users[1000] = {"alice", "bob"};
    Pipeline t(config);
    RunGenerated(t, g, 3000);
    CHECK(t.scanned() > 600);
  }
}

// Byte-level mutations of well-formed lines: broken escapes, stray bytes,
// cut numbers and keys, which the generator above never writes.
TEST_CASE("request: mutated lines decoded alike by both decoders",
          "[dispatcher][request]") {
  const std::vector<std::string> templates = {
      R"({"id":1,"op":"acquire","user":"alice","task":"t1","tokens":100,"model":"gpt-4o","fingerprint":"f"})",
      R"({"id":"x","op":"acquire","user":"bob","task":"t2","resource":"openai","requests":2})",
      R"({"op":"commit","lease":"LEASE","tokens":90,"latency_ms":120,"outcome":"ok"})",
      R"({"op":"commit","lease":"LEASE","input_tokens":10,"output_tokens":5,"outcome":"throttled","retry_after_ms":100})",
      R"({"op":"cancel","lease":"LEASE","id":-4})"};
  const std::string alphabet =
      "\"\\{}[]:,0123456789-.eEnultrfasx/ \t\x01\xc3\xa9\xff";
  std::mt19937_64 rng(99);
  Pipeline t;
  int granted = 0;
  for (int i = 0; i < 20000; ++i) {
    std::string line = templates[rng() % templates.size()];
    if (size_t at = line.find("LEASE"); at != std::string::npos) {
      line.replace(at, 5, "L" + std::to_string(1 + rng() % (granted + 1)));
    }
    for (int m = static_cast<int>(rng() % 4); m > 0 && !line.empty(); --m) {
      size_t at = rng() % line.size();
      char c = alphabet[rng() % alphabet.size()];
      switch (rng() % 3) {
        case 0:
          line[at] = c;
          break;
        case 1:
          line.insert(line.begin() + static_cast<long>(at), c);
          break;
        default:
          line.erase(at, 1);
      }
    }
    std::string reply = t.Send(line, rng() % 4 == 0 ? kAdmin : kUser);
    granted += reply.find("\"granted\":true") != std::string::npos;
  }
  CHECK(t.scanned() > 4000);
}

}  // namespace
}  // namespace brake
