// The request scanner on its own: PeekTask's hint, and the member names
// FastKeyOf, FastKeyName and the scanner know (request_test.cc compares the
// scanner's reading of whole lines with nlohmann's).
#include <catch2/catch.hpp>
#include <string>
#include <utility>
#include <vector>

#include "daemon/fast_request.h"

namespace brake {
namespace {

TEST_CASE("fast path: PeekTask finds a plain task name or nothing",
          "[fast_path]") {
  CHECK(PeekTask(R"({"op":"acquire","user":"u","task":"t1"})") == "t1");
  CHECK(PeekTask(R"({"task" :  "a b","op":"acquire"})") == "a b");
  CHECK(PeekTask(R"({"op":"acquire","task":""})").empty());
  CHECK(PeekTask(R"({"op":"commit","lease":"L1"})").empty());
  CHECK(PeekTask(R"({"task":"t\"1"})").empty());  // escaped: not a hint
  CHECK(PeekTask(R"({"task":17})").empty());
  CHECK(PeekTask(R"({"task":"unterminated)").empty());
  CHECK(PeekTask(R"({"task")").empty());
  CHECK(PeekTask("").empty());
}

TEST_CASE("fast path: every member name maps to its key and no other name "
          "does", "[fast_path]") {
  const std::vector<std::pair<std::string, FastKey>> known = {
      {"id", FastKey::kId},
      {"op", FastKey::kOp},
      {"user", FastKey::kUser},
      {"task", FastKey::kTask},
      {"tokens", FastKey::kTokens},
      {"requests", FastKey::kRequests},
      {"model", FastKey::kModel},
      {"resource", FastKey::kResource},
      {"fingerprint", FastKey::kFingerprint},
      {"parent", FastKey::kParent},
      {"wait_ms", FastKey::kWaitMs},
      {"lease", FastKey::kLease},
      {"input_tokens", FastKey::kInputTokens},
      {"output_tokens", FastKey::kOutputTokens},
      {"latency_ms", FastKey::kLatencyMs},
      {"outcome", FastKey::kOutcome},
      {"retry_after_ms", FastKey::kRetryAfterMs},
      {"usage", FastKey::kUsage},
  };
  REQUIRE(known.size() == kFastKeys);
  for (const auto& [name, key] : known) {
    CHECK(FastKeyOf(name) == key);
    CHECK(FastKeyName(key) == name);
    // Near misses: a byte changed anywhere, one more, one fewer.
    for (size_t i = 0; i < name.size(); ++i) {
      std::string other = name;
      other[i] = other[i] == 'x' ? 'y' : 'x';
      CHECK(FastKeyOf(other) == FastKey::kUnknown);
    }
    CHECK(FastKeyOf(name + "s") == FastKey::kUnknown);
    CHECK(FastKeyOf(name.substr(1)) == FastKey::kUnknown);
  }
  CHECK(FastKeyOf("") == FastKey::kUnknown);
  CHECK(FastKeyOf("Task") == FastKey::kUnknown);
  CHECK(FastKeyOf("id\"") == FastKey::kUnknown);

  // And the scanner finds each in a line (a name it missed would only send
  // its lines down the general path, which answers the same: only this
  // shows it).
  for (const auto& [name, key] : known) {
    if (key == FastKey::kOp) continue;
    FastRequest r;
    const std::string line = R"({"op":"acquire",")" + name + R"(":7})";
    REQUIRE(ScanFastRequest(line, &r));
    const FastValue* v = r.Get(key);
    REQUIRE(v != nullptr);
    CHECK(v->number == 7);
  }
}

}  // namespace
}  // namespace brake
