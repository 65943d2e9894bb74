#include "daemon/dispatcher.h"

#include "daemon/json_fields.h"
#include "daemon/ops.h"

namespace brake {
namespace {

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
  Request& request = request_;
  Status status = request.Decode(line);
  const Op* op = nullptr;
  if (status.ok()) {
    if (!request.scanned()) FlushCounts();  // `top` and `metrics` read it
    op = FindOp(request.op());
    if (op == nullptr) {
      status = Status(ErrorCode::kUnknownOp,
                      "op: unknown op " + std::string(request.op()));
    }
  } else {
    FlushCounts();
    if (request.too_deep()) stats_->limit_hits.Add(LimitHit::kMaxDepth);
  }
  json reply = json::object();
  OpContext ctx{this, engine_, peer, request, line, now_us, &reply, out};
  if (op != nullptr) status = Run(*op, ctx);
  if (!status.ok()) {
    ++counters_.errors;
    const json id = request.IdJson();
    AppendLine(ErrorReply(id.is_null() ? nullptr : &id, status.code(),
                          status.message()),
               out);
    return;
  }
  if (ctx.parked || ctx.written) return;
  if (request.has_id()) reply["id"] = request.IdJson();
  reply["ok"] = true;
  AppendLine(reply, out);
}

Status Dispatcher::Run(const Op& op, OpContext& ctx) {
  if (op.admin && !ctx.peer.admin) {
    return Status(ErrorCode::kForbidden,
                  std::string("op: ") + op.name + " is for admins only (uid " +
                      std::to_string(ctx.peer.uid) + " is not in admin_uids)");
  }
  if (Status s = ValidateFields(op, ctx.request); !s.ok()) return s;
  return op.handler(ctx);
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
