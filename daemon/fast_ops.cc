#include "daemon/fast_ops.h"

#include <vector>

#include "daemon/fast_reply.h"
#include "daemon/json_fields.h"
#include "daemon/ops.h"
#include "daemon/replies.h"

namespace brake {
namespace {

using Kind = FastValue::Kind;

bool Given(const FastValue* v) {
  return v != nullptr && v->kind != Kind::kNull;
}

// As ops.cc's Str / Int / OptInt: absent and null alike.
std::string_view Text(const FastRequest& r, FastKey key) {
  const FastValue* v = r.Get(key);
  return Given(v) ? v->text : std::string_view();
}
int64_t Int(const FastRequest& r, FastKey key, int64_t fallback) {
  const FastValue* v = r.Get(key);
  return Given(v) ? v->number : fallback;
}
std::optional<int64_t> OptInt(const FastRequest& r, FastKey key) {
  const FastValue* v = r.Get(key);
  if (!Given(v)) return std::nullopt;
  return v->number;
}

bool OneOf(std::string_view value, std::string_view choices) {
  while (true) {
    size_t bar = choices.find('|');
    if (choices.substr(0, bar) == value) return true;
    if (bar == std::string_view::npos) return false;
    choices.remove_prefix(bar + 1);
  }
}

// An op's fields with their FastKeys, looked up once.
struct FastFields {
  explicit FastFields(const Dispatcher::Op& op) : op(&op) {
    for (const FieldSpec& f : op.fields) keys.push_back(FastKeyOf(f.name));
  }
  const Dispatcher::Op* op;
  std::vector<FastKey> keys;  // kUnknown: a field the fast path never sees
};

// True when ValidateFields would pass `r` against `op` and `r` has no
// member the op does not know (those are left to the general path, which
// ignores them). Only the kinds these ops use are accepted.
bool Valid(const FastFields& op, const FastRequest& r) {
  size_t known = 1 + (r.Get(FastKey::kId) != nullptr);  // "op", "id"
  const std::vector<FieldSpec>& fields = op.op->fields;
  for (size_t i = 0; i < fields.size(); ++i) {
    const FieldSpec& f = fields[i];
    const FastValue* v = op.keys[i] == FastKey::kUnknown ? nullptr
                                                         : r.Get(op.keys[i]);
    if (v != nullptr) ++known;
    if (!Given(v)) {
      if (f.required) return false;
      continue;
    }
    switch (f.kind) {
      case FieldKind::kName:
        if (v->kind != Kind::kString || !IsValidName(v->text))
          return false;
        break;
      case FieldKind::kString:
        if (v->kind != Kind::kString || v->text.empty() ||
            v->text.size() > kMaxStringBytes)
          return false;
        break;
      case FieldKind::kInt:
        if (v->kind != Kind::kInt || v->number < f.min || v->number > f.max)
          return false;
        break;
      case FieldKind::kEnum:
        if (v->kind != Kind::kString || !OneOf(v->text, f.choices))
          return false;
        break;
      default:
        return false;
    }
  }
  return known == r.count;
}

nlohmann::json IdJson(const FastValue* id) {
  if (id == nullptr) return nullptr;
  if (id->kind == Kind::kInt) return id->number;
  return std::string(id->text);
}

}  // namespace

bool FastOps::Handle(Dispatcher& d, const Peer& peer, std::string_view line,
                     int64_t now_us, std::string* out) {
  FastRequest& r = d.fast_request_;
  if (!ScanFastRequest(line, &r)) return false;
  static const FastFields kAcquire(*FindOp("acquire"));
  static const FastFields kCommit(*FindOp("commit"));
  static const FastFields kCancel(*FindOp("cancel"));
  const FastFields& op = r.op == FastOp::kAcquire  ? kAcquire
                         : r.op == FastOp::kCommit ? kCommit
                                                   : kCancel;
  if (op.op->admin && !peer.admin) return false;
  if (!Valid(op, r)) return false;
  bool answered = false;
  switch (r.op) {
    case FastOp::kAcquire:
      answered = Acquire(d, peer, now_us, out);
      break;
    case FastOp::kCommit:
      answered = Commit(d, peer, now_us, out);
      break;
    case FastOp::kCancel:
      answered = Cancel(d, peer, now_us, out);
      break;
  }
  d.fast_answers_ += answered;
  return answered;
}

// The order of ops.cc's OpHandlers::Acquire; every "return false" comes
// before the first change of state.
bool FastOps::Acquire(Dispatcher& d, const Peer& peer, int64_t now_us,
                      std::string* out) {
  const FastRequest& r = d.fast_request_;
  if (!d.storage_ok_) return false;  // unavailable, or fail-open counting
  if (Int(r, FastKey::kWaitMs, 0) > 0) return false;  // the waiters' business
  AcquireRequest& a = d.fast_acquire_;
  a.user.assign(Text(r, FastKey::kUser));
  if (!MayActAs(peer, *d.config_, a.user).ok()) return false;
  a.task.assign(Text(r, FastKey::kTask));
  a.resource.assign(Text(r, FastKey::kResource));
  a.model.assign(Text(r, FastKey::kModel));
  a.parent.assign(Text(r, FastKey::kParent));
  a.fingerprint.assign(Text(r, FastKey::kFingerprint));
  a.tokens = Int(r, FastKey::kTokens, 0);
  a.requests = Int(r, FastKey::kRequests, 1);
  a.dry_run = false;
  if (!d.engine_->MissingFor(a).empty()) return false;  // load first
  if (static_cast<int64_t>(d.engine_->resident_subjects()) >=
          d.config_->max_subjects &&
      d.engine_->AddsSubjects(a)) {
    return false;  // memory full: refused, and counted, by the general path
  }
  const FastValue* id = r.Get(FastKey::kId);
  AcquireOutcome* outcome = &d.fast_outcome_;
  if (Status s = d.decider_.Acquire(a, peer.conn, now_us, outcome); !s.ok()) {
    ++d.counters_.errors;
    out->append(ErrorLineWithId(IdJson(id), s.code(), s.message()));
    return true;
  }
  d.CountAcquireLater(AcquireAnswer{&a, outcome->granted,
                                    outcome->denial.reason, outcome->usd_nano});
  if (!AppendAcquireLine(id, *outcome, out)) {
    nlohmann::json reply = nlohmann::json::object();
    FillAcquireReply(*outcome, 0, &reply);
    out->append(OkLine(IdJson(id), std::move(reply)));
  }
  return true;
}

bool FastOps::Commit(Dispatcher& d, const Peer& peer, int64_t now_us,
                     std::string* out) {
  const FastRequest& r = d.fast_request_;
  CommitRequest& c = d.fast_commit_;
  c.lease.assign(Text(r, FastKey::kLease));
  if (const Lease* lease = d.engine_->FindLease(c.lease)) {
    if (!MayActAs(peer, *d.config_, lease->user()).ok()) return false;
  }
  c.tokens = OptInt(r, FastKey::kTokens);
  c.input_tokens = OptInt(r, FastKey::kInputTokens);
  c.output_tokens = OptInt(r, FastKey::kOutputTokens);
  c.latency_ms = Int(r, FastKey::kLatencyMs, -1);
  std::string_view outcome = Text(r, FastKey::kOutcome);
  c.outcome.assign(outcome.empty() ? std::string_view("ok") : outcome);
  if (c.tokens && (c.input_tokens || c.output_tokens) &&
      *c.tokens < c.input_tokens.value_or(0) + c.output_tokens.value_or(0)) {
    return false;  // bad_request, worded by the general path
  }
  const FastValue* id = r.Get(FastKey::kId);
  auto s = d.decider_.Commit(c, Int(r, FastKey::kRetryAfterMs, 0), now_us);
  if (!s.ok()) {
    ++d.counters_.errors;
    out->append(
        ErrorLineWithId(IdJson(id), s.status().code(), s.status().message()));
    return true;
  }
  ++d.counters_.commits;
  if (!AppendCommitLine(id, *s, out)) {
    nlohmann::json reply = nlohmann::json::object();
    reply["charged_tokens"] = s->charged_tokens;
    reply["charged_usd"] = NanoToUsd(s->charged_usd_nano);
    if (s->duplicate) reply["duplicate"] = true;
    out->append(OkLine(IdJson(id), std::move(reply)));
  }
  return true;
}

bool FastOps::Cancel(Dispatcher& d, const Peer& peer, int64_t now_us,
                     std::string* out) {
  const FastRequest& r = d.fast_request_;
  std::string& lease_id = d.fast_commit_.lease;
  lease_id.assign(Text(r, FastKey::kLease));
  if (const Lease* lease = d.engine_->FindLease(lease_id)) {
    if (!MayActAs(peer, *d.config_, lease->user()).ok()) return false;
  }
  const FastValue* id = r.Get(FastKey::kId);
  auto dup = d.decider_.Cancel(lease_id, now_us);
  if (!dup.ok()) {
    ++d.counters_.errors;
    out->append(ErrorLineWithId(IdJson(id), dup.status().code(),
                                dup.status().message()));
    return true;
  }
  ++d.counters_.cancels;
  if (!AppendCancelLine(id, *dup, out)) {
    nlohmann::json reply = nlohmann::json::object();
    if (*dup) reply["duplicate"] = true;
    out->append(OkLine(IdJson(id), std::move(reply)));
  }
  return true;
}

}  // namespace brake
