// Fuzz target: what the front reads of a provider's answer and of a
// client's body: SseReader and StreamTally on a stream, UsageOfAnswer on a
// whole answer, PlanCall on a request body.
//
// Byte 0 picks the API and where the stream is cut into reads; the rest is
// the bytes. Checked on every input:
//   - the events, the usage settled and what is passed on are the same
//     whether the stream comes whole or cut;
//   - the events' raw bytes, passed on or not, add up to the bytes read
//     (nothing is invented or lost); usage is never negative;
//   - a plan reserves at least a request's framing and a non-negative
//     output; the body it sends upstream is JSON with the maximum it
//     reserved.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "front/call.h"
#include "front/sse.h"
#include "front/usage.h"
#include "tests/fuzz/fuzz_check.h"

namespace {

using namespace brake::front;

constexpr Api kApis[] = {Api::kChat, Api::kCompletions, Api::kEmbeddings,
                         Api::kResponses, Api::kMessages};

struct Tally {
  std::string raw;     // every event's bytes
  std::string passed;  // what goes to the client
  Usage usage;
  bool finished = false;
  bool ok = true;
};

Tally Run(Api api, bool drop, std::string_view bytes, size_t step) {
  Tally t;
  SseReader reader(4096);
  StreamTally tally(api, drop);
  for (size_t pos = 0; pos < bytes.size() && t.ok; pos += step) {
    t.ok = reader.Feed(bytes.substr(pos, step), [&](const SseEvent& e) {
      t.raw += e.raw;
      if (tally.OnEvent(e.name, e.data)) t.passed += e.raw;
    });
  }
  t.usage = tally.Settle(100);
  t.finished = tally.finished();
  FUZZ_CHECK(t.usage.input_tokens >= 0 && t.usage.output_tokens >= 0, "negative usage");
  if (t.ok) {
    FUZZ_CHECK(t.raw.size() + reader.pending() == bytes.size(), "events do not add up to the bytes");
    FUZZ_CHECK(bytes.substr(0, t.raw.size()) == t.raw, "events are not the bytes read");
  }
  return t;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const Api api = kApis[data[0] % 5];
  const bool drop = (data[0] / 5) % 2 == 0;
  const size_t step = 1 + (data[0] / 10) % 13;
  const std::string_view bytes(reinterpret_cast<const char*>(data) + 1, size - 1);

  const Tally whole = Run(api, drop, bytes, bytes.size() + 1);
  const Tally cut = Run(api, drop, bytes, step);
  FUZZ_CHECK(whole.ok == cut.ok, "the bound depends on the cuts");
  if (whole.ok) {
    FUZZ_CHECK(whole.passed == cut.passed, "what is passed on depends on the cuts");
    FUZZ_CHECK(whole.usage.input_tokens == cut.usage.input_tokens &&
                   whole.usage.output_tokens == cut.usage.output_tokens &&
                   whole.usage.reported == cut.usage.reported,
               "the usage depends on the cuts");
    FUZZ_CHECK(whole.finished == cut.finished, "the end depends on the cuts");
  }

  const Usage u = UsageOfAnswer(api, bytes);
  FUZZ_CHECK(u.input_tokens >= 0 && u.output_tokens >= 0, "negative usage of an answer");

  auto plan = PlanCall(api, bytes, 77);
  if (!plan.ok()) {
    FUZZ_CHECK(!plan.status().message().empty(), "an error without a message");
    return 0;
  }
  FUZZ_CHECK(plan->prompt_tokens >= kTokensPerRequest, "a prompt below its framing");
  FUZZ_CHECK(plan->output_tokens >= 0, "a negative output maximum");
  FUZZ_CHECK(plan->fingerprint.size() == 16, "a fingerprint that is not 16 hex digits");
  if (!plan->body.empty()) {
    auto sent = nlohmann::json::parse(plan->body, nullptr, false);
    FUZZ_CHECK(sent.is_object(), "the body sent upstream is not a JSON object");
    if (plan->set_output_max) {
      const char* field = api == Api::kChat        ? "max_completion_tokens"
                          : api == Api::kResponses ? "max_output_tokens"
                                                   : "max_tokens";
      FUZZ_CHECK(sent.contains(field) && sent[field] == 77, "the maximum brake set is not sent");
    }
  }
  return 0;
}
