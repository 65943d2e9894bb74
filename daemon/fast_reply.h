// FastReply: reply lines for acquire, commit and cancel written straight
// into the caller's buffer, byte for byte as nlohmann's dump() writes the
// same answers built by replies.cc and the handlers (keys in sorted order, no
// spaces, doubles through nlohmann's own to_chars, strings escaped the same
// way). Nothing is allocated beyond the growth of `out`.
//
// Every writer returns false, with `out` as it was, when it cannot promise
// the same bytes (a string in the answer that is not valid UTF-8, which
// dump() would repair); the caller then builds the reply with nlohmann.
// Stateless; any thread.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "budget/engine.h"
#include "daemon/fast_request.h"

namespace brake {

// A JSON string as dump() writes it (ensure_ascii off); false on malformed
// UTF-8.
bool AppendJsonString(std::string_view s, std::string* out);
void AppendJsonInt(int64_t v, std::string* out);
// A double as dump() writes it ("0.0123", "5.0", "1e-05"; null when not
// finite).
void AppendJsonDouble(double v, std::string* out);

// The full reply line, '\n' included, of an acquire answered at once
// (FillAcquireReply with waited_ms 0, then "id" and "ok").
bool AppendAcquireLine(const FastValue* id, const AcquireOutcome& outcome,
                       std::string* out);
// {"charged_tokens":..,"charged_usd":..,"duplicate":true,"id":..,"ok":true}
bool AppendCommitLine(const FastValue* id, const Settlement& settlement,
                      std::string* out);
// {"duplicate":true,"id":..,"ok":true}
bool AppendCancelLine(const FastValue* id, bool duplicate, std::string* out);

}  // namespace brake
