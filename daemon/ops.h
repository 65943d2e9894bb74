// Ops: the table of every op braked answers, declared once.
//
// Each row names the op, whether only admins may call it, a line of help,
// its fields (type, required, bounds) and its handler. Dispatcher validates a
// request against its row before the handler runs. Loop thread only.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/status.h"
#include "daemon/dispatcher.h"
#include "daemon/request.h"

namespace brake {

enum class FieldKind {
  kName,    // ValidateName
  kModel,   // ValidateModel: a name, or "*"
  kScope,   // ValidateScope
  kString,  // any string up to 256 bytes
  kInt,     // integer in [min, max]
  kNumber,  // number in [min, max]
  kBool,
  kEnum,    // one of `choices`, '|'-separated
  kObject,
  kArray,
};

struct FieldSpec {
  const char* name;
  FieldKind kind;
  bool required = false;
  int64_t min = 0;
  int64_t max = 0;
  const char* choices = nullptr;
  FastKey key = FastKey::kUnknown;  // set by the table: the scanner's name
};

// What a handler gets. It answers in one of three ways: fills `reply`
// (Dispatcher adds "id" and "ok" and writes it), writes its whole line to
// `out` itself and sets `written` (the hot ops, through fast_reply.h), or
// hands the request on and sets `parked` (waiters, deferred ops). An error
// status is written by Dispatcher, and must come before any change of state.
struct OpContext {
  Dispatcher* dispatcher;
  Engine* engine;
  const Peer& peer;
  Request& request;
  std::string_view line;  // as read, for a request handled again later
  int64_t now_us;
  nlohmann::json* reply;
  std::string* out;
  bool written = false;
  bool parked = false;
};

struct Dispatcher::Op {
  const char* name;
  bool admin;
  const char* help;
  std::vector<FieldSpec> fields;
  Status (*handler)(OpContext& ctx);
};

// The table; nullptr when `name` is not an op.
const Dispatcher::Op* FindOp(std::string_view name);
const std::vector<Dispatcher::Op>& AllOps();
// Checks `request` against `op`'s fields; the message names the field.
Status ValidateFields(const Dispatcher::Op& op, const Request& request);
// With uid_users configured, a non-admin peer may act only as its users:
// kForbidden naming the field `user` otherwise.
Status MayActAs(const OpContext& ctx, const Config& config,
                std::string_view user);
Status MayActAs(const Peer& peer, const Config& config,
                std::string_view user);

}  // namespace brake
