// Replies: the answers shared by the ops table and the waiters.
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
#include "daemon/request.h"

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
// The whole reply line of an acquire, a commit or a cancel answered at once
// to `request`, appended to `out`: by fast_reply.h's writers, through
// nlohmann only when they cannot spell it (an integer id beyond int64_t, a
// string dump() would repair).
void AppendAcquireReply(const Request& request, const AcquireOutcome& outcome,
                        std::string* out);
void AppendCommitReply(const Request& request, const Settlement& settlement,
                       std::string* out);
void AppendCancelReply(const Request& request, bool duplicate,
                       std::string* out);
// A complete error line with "id" (when not null).
std::string ErrorLineWithId(const nlohmann::json& id, ErrorCode code,
                            const std::string& message);

}  // namespace brake
