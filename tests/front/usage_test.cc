#include "front/usage.h"

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "front/sse.h"

namespace brake::front {
namespace {

// Feeds `stream` to a tally through an SseReader, `step` bytes at a time;
// returns the raw bytes passed on.
std::string Pass(StreamTally* tally, const std::string& stream, size_t step) {
  SseReader reader;
  std::string passed;
  for (size_t i = 0; i < stream.size(); i += step) {
    REQUIRE(reader.Feed(std::string_view(stream).substr(i, step),
                        [&](const SseEvent& e) {
                          if (tally->OnEvent(e.name, e.data)) passed += e.raw;
                        }));
  }
  return passed;
}

const std::string kChatStream =
    "data: {\"choices\":[{\"delta\":{\"content\":\"Hel\"}}],\"usage\":null}\n\n"
    "data: {\"choices\":[{\"delta\":{\"content\":\"lo\"}}],\"usage\":null}\n\n"
    "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":11,\"completion_tokens\":2,"
    "\"total_tokens\":13}}\n\n"
    "data: [DONE]\n\n";

TEST_CASE("usage: a whole answer's, in each API's names", "[front]") {
  Usage u = UsageOfAnswer(
      Api::kChat, R"({"usage":{"prompt_tokens":7,"completion_tokens":3}})");
  CHECK(u.reported);
  CHECK(u.input_tokens == 7);
  CHECK(u.output_tokens == 3);
  u = UsageOfAnswer(Api::kResponses,
                    R"({"usage":{"input_tokens":5,"output_tokens":0}})");
  CHECK(u.reported);
  CHECK(u.output_tokens == 0);  // a reported zero stays zero
  u = UsageOfAnswer(Api::kMessages,
                    R"({"usage":{"input_tokens":4,"cache_read_input_tokens":10,)"
                    R"("cache_creation_input_tokens":2,"output_tokens":9}})");
  CHECK(u.input_tokens == 16);
  CHECK(u.output_tokens == 9);
  u = UsageOfAnswer(Api::kEmbeddings,
                    R"({"usage":{"prompt_tokens":8,"total_tokens":8}})");
  CHECK(u.reported);
  CHECK(u.input_tokens == 8);
  CHECK_FALSE(UsageOfAnswer(Api::kChat, R"({"choices":[]})").reported);
  CHECK_FALSE(UsageOfAnswer(Api::kChat, "not json").reported);
}

TEST_CASE("usage: an OpenAI stream settles from its usage chunk, removed when "
          "brake asked for it", "[front]") {
  for (size_t step : {1, 7, 1000}) {
    StreamTally dropping(Api::kChat, /*drop_usage_chunk=*/true);
    std::string passed = Pass(&dropping, kChatStream, step);
    CHECK(passed.find("prompt_tokens") == std::string::npos);
    CHECK(passed.find("[DONE]") != std::string::npos);
    CHECK(dropping.finished());
    Usage u = dropping.Settle(1000);
    CHECK(u.reported);
    CHECK(u.input_tokens == 11);
    CHECK(u.output_tokens == 2);
    StreamTally keeping(Api::kChat, false);
    CHECK(Pass(&keeping, kChatStream, step) == kChatStream);
  }
}

TEST_CASE("usage: a stream cut short is estimated at ceilings", "[front]") {
  StreamTally t(Api::kChat, true);
  Pass(&t, kChatStream.substr(0, kChatStream.find("data: {\"choices\":[]")), 5);
  CHECK_FALSE(t.finished());
  Usage u = t.Settle(500);
  CHECK_FALSE(u.reported);
  CHECK(u.input_tokens == 500);  // the prompt's ceiling
  CHECK(u.output_tokens == 5);   // a token per byte received: "Hel" + "lo"
}

TEST_CASE("usage: Anthropic's stream reports input at the start, output at "
          "the end", "[front]") {
  const std::string start =
      "event: message_start\r\ndata: {\"type\":\"message_start\",\"message\":"
      "{\"usage\":{\"input_tokens\":25,\"output_tokens\":1}}}\r\n\r\n"
      "event: content_block_delta\r\ndata: {\"type\":\"content_block_delta\","
      "\"delta\":{\"type\":\"text_delta\",\"text\":\"Hello!\"}}\r\n\r\n";
  const std::string end =
      "event: message_delta\r\ndata: {\"type\":\"message_delta\",\"usage\":"
      "{\"output_tokens\":3}}\r\n\r\n"
      "event: message_stop\r\ndata: {\"type\":\"message_stop\"}\r\n\r\n";
  StreamTally whole(Api::kMessages, false);
  CHECK(Pass(&whole, start + end, 3) == start + end);
  CHECK(whole.finished());
  Usage u = whole.Settle(999);
  CHECK(u.reported);
  CHECK(u.input_tokens == 25);
  CHECK(u.output_tokens == 3);
  StreamTally cut(Api::kMessages, false);
  Pass(&cut, start, 4);
  u = cut.Settle(999);
  CHECK_FALSE(u.reported);
  CHECK(u.input_tokens == 25);  // reported at the start
  CHECK(u.output_tokens == 6);  // "Hello!"
}

TEST_CASE("usage: the Responses API's response.completed", "[front]") {
  const std::string stream =
      "event: response.output_text.delta\ndata: {\"type\":\"response.output_text."
      "delta\",\"delta\":\"Hi\"}\n\n"
      "event: response.completed\ndata: {\"type\":\"response.completed\","
      "\"response\":{\"usage\":{\"input_tokens\":4,\"output_tokens\":1}}}\n\n";
  StreamTally t(Api::kResponses, false);
  Pass(&t, stream, 2);
  CHECK(t.finished());
  Usage u = t.Settle(100);
  CHECK(u.reported);
  CHECK(u.input_tokens == 4);
  CHECK(u.output_tokens == 1);
}

TEST_CASE("sse: events whole however the bytes are cut, joined data lines, "
          "a bound", "[front]") {
  const std::string stream =
      ": comment\n\nevent: a\ndata: one\ndata: two\n\ndata:three\n\n";
  for (size_t step : {1, 2, 3, 100}) {
    SseReader r;
    std::vector<std::string> names, data;
    std::string raw;
    for (size_t i = 0; i < stream.size(); i += step) {
      REQUIRE(r.Feed(std::string_view(stream).substr(i, step),
                     [&](const SseEvent& e) {
                       names.emplace_back(e.name);
                       data.emplace_back(e.data);
                       raw += e.raw;
                     }));
    }
    CHECK(raw == stream);
    REQUIRE(data.size() == 3);
    CHECK(data[0].empty());
    CHECK(names[1] == "a");
    CHECK(data[1] == "one\ntwo");
    CHECK(data[2] == "three");
    CHECK(r.pending() == 0);
  }
  SseReader small(16);
  CHECK(small.Feed("data: 0123456789", [](const SseEvent&) {}));
  CHECK_FALSE(small.Feed("0123456789", [](const SseEvent&) {}));
  CHECK_FALSE(small.Feed("\n\n", [](const SseEvent&) {}));
}

}  // namespace
}  // namespace brake::front
