#include "daemon/dispatcher.h"

#include "daemon/fast_ops.h"
#include "daemon/json_fields.h"
#include "daemon/ops.h"

namespace brake {
namespace {

// Deeper nesting than any valid request needs; rejected while parsing, so a
// hostile line can never make the parser or dump() recurse deeply.
constexpr int kMaxDepth = 32;

void AppendLine(const json& reply, std::string* out) {
  out->append(reply.dump(-1, ' ', false, json::error_handler_t::replace));
  out->push_back('\n');
}

json ErrorReply(const json* id, ErrorCode code, const std::string& message) {
  json reply = json::object();
  if (id != nullptr) reply["id"] = *id;
  reply["ok"] = false;
  reply["error"] = {{"code", ErrorCodeName(code)}, {"message", message}};
  return reply;
}

}  // namespace

Dispatcher::Dispatcher(Engine* engine, const Config* config, ServerStats* stats)
    : engine_(engine),
      decider_(engine),
      config_(config),
      stats_(stats),
      top_(static_cast<size_t>(config->top_max_subjects)) {}

void Dispatcher::CountAnswer(const AcquireAnswer& a) {
  FlushCounts();  // the tracker counts in answer order
  if (a.granted) {
    ++counters_.acquires_granted;
  } else {
    ++counters_.acquires_denied[static_cast<size_t>(a.reason)];
  }
  if (a.waited_us >= 0) {
    counters_.waits.Observe(a.granted, a.reason, a.waited_us);
  }
}

void Dispatcher::CountAcquire(const AcquireAnswer& a) {
  CountAnswer(a);
  if (a.request != nullptr) top_.Record(*a.request, a.granted, a.usd_nano);
}

void Dispatcher::CountAcquireLater(const AcquireAnswer& a) {
  CountAnswer(a);
  if (a.request == nullptr) return;
  // Short names, copied into strings that keep their capacity.
  top_request_.user.assign(a.request->user);
  top_request_.task.assign(a.request->task);
  top_request_.resource.assign(a.request->resource);
  top_request_.tokens = a.request->tokens;
  top_granted_ = a.granted;
  top_usd_nano_ = a.usd_nano;
  top_pending_ = true;
}

void Dispatcher::FlushCounts() {
  if (!top_pending_) return;
  top_pending_ = false;
  top_.Record(top_request_, top_granted_, top_usd_nano_);
}

std::string Dispatcher::ErrorLine(ErrorCode code, const std::string& message) {
  std::string out;
  AppendLine(ErrorReply(nullptr, code, message), &out);
  return out;
}

void Dispatcher::Handle(const Peer& peer, std::string_view line,
                        int64_t now_us, std::string* out) {
  ++counters_.requests;
  if (fast_path_ && FastOps::Handle(*this, peer, line, now_us, out)) return;
  FlushCounts();  // `top` and `metrics` read the tracker
  if (NestedDeeperThan(line, kMaxDepth)) {
    ++counters_.errors;
    stats_->limit_hits.Add(LimitHit::kMaxDepth);
    AppendLine(ErrorReply(nullptr, ErrorCode::kBadJson,
                          "request: nested deeper than " +
                              std::to_string(kMaxDepth) + " levels"),
               out);
    return;
  }
  json request = json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (request.is_discarded()) {
    ++counters_.errors;
    AppendLine(ErrorReply(nullptr, ErrorCode::kBadJson,
                          "request: not a valid JSON line"),
               out);
    return;
  }
  if (!request.is_object()) {
    ++counters_.errors;
    AppendLine(ErrorReply(nullptr, ErrorCode::kBadRequest,
                          "request: must be a JSON object"),
               out);
    return;
  }
  const json* id = nullptr;
  if (auto it = request.find("id"); it != request.end()) {
    if (!it->is_string() && !it->is_number_integer()) {
      ++counters_.errors;
      AppendLine(ErrorReply(nullptr, ErrorCode::kBadRequest,
                            "id: must be a string or an integer"),
                 out);
      return;
    }
    id = &*it;
  }
  auto op_it = request.find("op");
  if (op_it == request.end() || !op_it->is_string()) {
    ++counters_.errors;
    AppendLine(ErrorReply(id, ErrorCode::kBadRequest,
                          op_it == request.end() ? "op: is required"
                                                 : "op: must be a string"),
               out);
    return;
  }
  const Op* op = FindOp(op_it->get_ref<const std::string&>());
  if (op == nullptr) {
    ++counters_.errors;
    AppendLine(ErrorReply(id, ErrorCode::kUnknownOp,
                          "op: unknown op " + op_it->get<std::string>()),
               out);
    return;
  }
  json reply = json::object();
  bool parked = false;
  Status status = Run(*op, peer, request, now_us, &reply, &parked);
  if (status.ok() && parked) return;  // the waiters or deferred ops answer it
  if (!status.ok()) {
    ++counters_.errors;
    AppendLine(ErrorReply(id, status.code(), status.message()), out);
    return;
  }
  if (id != nullptr) reply["id"] = *id;
  reply["ok"] = true;
  AppendLine(reply, out);
}

Status Dispatcher::Run(const Op& op, const Peer& peer, const json& request,
                       int64_t now_us, json* reply, bool* parked) {
  if (op.admin && !peer.admin) {
    return Status(ErrorCode::kForbidden,
                  std::string("op: ") + op.name + " is for admins only (uid " +
                      std::to_string(peer.uid) + " is not in admin_uids)");
  }
  if (Status s = ValidateFields(op, request); !s.ok()) return s;
  OpContext ctx{this, engine_, peer, request, now_us, reply};
  Status status = op.handler(ctx);
  *parked = ctx.parked;
  return status;
}

std::string Dispatcher::OpsHelp() {
  std::string out;
  for (const Op& op : AllOps()) {
    out += op.name;
    out += op.admin ? " (admin)" : "";
    out += ": ";
    out += op.help;
    out += "\n";
  }
  return out;
}

}  // namespace brake
