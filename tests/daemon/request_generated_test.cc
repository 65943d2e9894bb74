// The request decoders and reply writers (request_pipeline.h) over a few
// thousand generated lines and byte-level mutations of them (fixed seeds):
// both decoders read the same request, and every reply is what nlohmann
// would write.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdint>
#include <iterator>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "tests/daemon/request_pipeline.h"

namespace brake {
namespace {

using nlohmann::json;

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
