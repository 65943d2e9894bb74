// Usage: what an upstream answer cost, as its provider reported it or, when
// it reported nothing (a stream cut short), as brake estimates it.
//
// UsageOfAnswer reads a whole JSON answer. StreamTally watches a stream's
// events as they pass: the usage the provider reports in them (OpenAI's
// final chunk, the Responses API's response.completed, Anthropic's
// message_start and message_delta), the usage chunk to remove when the
// client did not ask for it, and the text received so far. An estimate is a
// ceiling: the prompt at its reserved ceiling, the output at one token per
// byte of text received, so a cut stream is never charged less than it can
// have cost. A reported zero stays zero. Pure.
#pragma once

#include <cstdint>
#include <string_view>

#include "front/call.h"

namespace brake::front {

struct Usage {
  int64_t input_tokens = 0;
  int64_t output_tokens = 0;
  bool reported = false;  // false: estimated
};

// The usage of a whole (not streamed) JSON answer; `reported` false when it
// names none.
Usage UsageOfAnswer(Api api, std::string_view body);

class StreamTally {
 public:
  // `drop_usage_chunk`: the client did not ask for OpenAI's usage chunk
  // (brake did), so it is not passed on.
  StreamTally(Api api, bool drop_usage_chunk)
      : api_(api), drop_usage_chunk_(drop_usage_chunk) {}

  // Looks at one event's name and data; false when the event must not be
  // passed on (the usage chunk brake asked for).
  bool OnEvent(std::string_view name, std::string_view data);

  // What to settle with: reported when the provider reported both input
  // and output, else the estimate (input from what was reported or the
  // prompt's ceiling, output from the text received).
  Usage Settle(int64_t prompt_ceiling) const;
  // The provider ended the stream as its protocol does ([DONE],
  // message_stop, response.completed).
  bool finished() const { return finished_; }
  // The provider sent an error in the stream.
  bool errored() const { return errored_; }
  int64_t events() const { return events_; }

 private:
  Api api_;
  bool drop_usage_chunk_;
  bool input_reported_ = false;
  bool output_reported_ = false;
  int64_t input_ = 0;
  int64_t output_ = 0;
  int64_t text_bytes_ = 0;  // of the output received
  int64_t events_ = 0;
  bool finished_ = false;
  bool errored_ = false;
};

}  // namespace brake::front
