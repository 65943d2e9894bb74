#include "daemon/replies.h"

#include <utility>

#include "daemon/fast_reply.h"
#include "daemon/json_fields.h"

namespace brake {

using json = nlohmann::json;

json RetryAfterMs(int64_t retry_after_us) {
  if (retry_after_us == kNever) return nullptr;
  return (retry_after_us + 999) / 1000;  // waiting that long is enough
}

void FillDenial(const Denial& denial, json* reply) {
  (*reply)["granted"] = false;
  (*reply)["reason"] = ReasonName(denial.reason);
  (*reply)["scope"] = denial.scope;
  (*reply)["limit"] = denial.limit;
  (*reply)["retry_after_ms"] = RetryAfterMs(denial.retry_after_us);
  if (!denial.cause.empty()) (*reply)["cause"] = denial.cause;
  if (denial.held >= 0) {
    (*reply)["held"] = denial.resource == Resource::kUsd
                           ? json(NanoToUsd(denial.held))
                           : json(denial.held);
  }
}

void FillAcquireReply(const AcquireOutcome& outcome, int64_t waited_ms,
                      json* reply) {
  if (outcome.granted) {
    (*reply)["granted"] = true;
    (*reply)["lease"] = outcome.lease;
    (*reply)["waited_ms"] = waited_ms;
  } else {
    FillDenial(outcome.denial, reply);
  }
  // A grant's tightest limits, a refusal's refusing one.
  const Remaining& r = outcome.remaining;
  json remaining = json::object();
  if (r.requests) remaining["requests"] = *r.requests;
  if (r.tokens) remaining["tokens"] = *r.tokens;
  if (r.usd_nano) remaining["usd"] = NanoToUsd(*r.usd_nano);
  if (!remaining.empty()) (*reply)["remaining"] = std::move(remaining);
  json capacity = json::object();
  if (r.requests) capacity["requests"] = r.requests_capacity;
  if (r.tokens) capacity["tokens"] = r.tokens_capacity;
  if (r.usd_nano) capacity["usd"] = NanoToUsd(r.usd_capacity_nano);
  if (!capacity.empty()) (*reply)["capacity"] = std::move(capacity);
  if (!outcome.shadow.empty()) (*reply)["shadow"] = outcome.shadow;
}

std::string OkLine(const json& id, json fields) {
  if (!id.is_null()) fields["id"] = id;
  fields["ok"] = true;
  std::string line = fields.dump(-1, ' ', false, json::error_handler_t::replace);
  line.push_back('\n');
  return line;
}

std::string ErrorLineWithId(const json& id, ErrorCode code,
                            const std::string& message) {
  json reply = json::object();
  if (!id.is_null()) reply["id"] = id;
  reply["ok"] = false;
  reply["error"] = {{"code", ErrorCodeName(code)}, {"message", message}};
  std::string line = reply.dump(-1, ' ', false, json::error_handler_t::replace);
  line.push_back('\n');
  return line;
}

void AppendAcquireReply(const Request& request, const AcquireOutcome& outcome,
                        std::string* out) {
  if (request.plain_id() && AppendAcquireLine(request.id(), outcome, out)) {
    return;
  }
  json reply = json::object();
  FillAcquireReply(outcome, 0, &reply);
  out->append(OkLine(request.IdJson(), std::move(reply)));
}

void AppendCommitReply(const Request& request, const Settlement& settlement,
                       std::string* out) {
  if (request.plain_id() && AppendCommitLine(request.id(), settlement, out)) {
    return;
  }
  json reply = json::object();
  reply["charged_tokens"] = settlement.charged_tokens;
  reply["charged_usd"] = NanoToUsd(settlement.charged_usd_nano);
  if (settlement.duplicate) reply["duplicate"] = true;
  out->append(OkLine(request.IdJson(), std::move(reply)));
}

void AppendCancelReply(const Request& request, bool duplicate,
                       std::string* out) {
  if (request.plain_id() && AppendCancelLine(request.id(), duplicate, out)) {
    return;
  }
  json reply = json::object();
  if (duplicate) reply["duplicate"] = true;
  out->append(OkLine(request.IdJson(), std::move(reply)));
}

}  // namespace brake
