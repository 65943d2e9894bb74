// Replies: the JSON answers shared by the ops table and the waiters.
//
// One place builds an acquire's answer (granted or refused) and an error
// line, so an answer given at once and one given after waiting look alike.
// Stateless; loop thread.
#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "budget/engine.h"
#include "common/status.h"

namespace brake {

// Fills `reply` with an acquire's answer fields ("granted", "lease",
// "waited_ms", "remaining", or "reason", "scope", "limit",
// "retry_after_ms"; "shadow" when any).
void FillAcquireReply(const AcquireOutcome& outcome, int64_t waited_ms,
                      nlohmann::json* reply);
// A refusal with `reason` replacing the denial's own (timeout, queue_full).
void FillDenial(const Denial& denial, nlohmann::json* reply);
// retry_after in microseconds -> whole milliseconds rounded up; null when
// it never comes.
nlohmann::json RetryAfterMs(int64_t retry_after_us);
// A complete reply line: `fields` plus "ok":true and "id" (when not null).
std::string OkLine(const nlohmann::json& id, nlohmann::json fields);
// A complete error line with "id" (when not null).
std::string ErrorLineWithId(const nlohmann::json& id, ErrorCode code,
                            const std::string& message);

}  // namespace brake
