// Request: one request line, decoded once into what the ops table validates
// and the handlers read.
//
// Two decoders fill it. A hot line (acquire, commit or cancel, flat and
// plain: fast_request.h) is scanned in place without building a tree; any
// other line, and a hot line the scanner declines, is parsed by
// nlohmann-json. Either way the same accessors answer: a field as the ops
// table names it (Field, for validation), a hot field by its FastKey (the
// handlers' reads), the op and the id. A Request is reused from line to line,
// so that a steady stream of hot requests allocates nothing: the typed
// requests below keep their strings' capacity. Loop thread only.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "budget/engine.h"
#include "common/status.h"
#include "daemon/fast_request.h"

namespace brake {

// One field's value as validation sees it, whichever decoder read it.
struct FieldValue {
  enum class Kind {
    kAbsent,  // absent or null: the protocol does not tell them apart
    kInt,     // an integer that fits int64_t
    kString,
    kOther,   // anything else: `json` has it (only from nlohmann)
  };
  Kind kind = Kind::kAbsent;
  int64_t number = 0;
  std::string_view text;
  const nlohmann::json* json = nullptr;  // every parsed value, else nullptr
};

class Request {
 public:
  Request() = default;
  Request(const Request&) = delete;
  Request& operator=(const Request&) = delete;

  // Scan, else Parse. A line that is not a request at all gets its error
  // here (bad_json, bad_request), naming the member at fault; an unknown op
  // is the caller's to refuse (op() names it).
  Status Decode(std::string_view line);
  // The scanner alone: false when it declines (the request is then empty).
  bool Scan(std::string_view line);
  // nlohmann alone.
  Status Parse(std::string_view line);

  std::string_view op() const { return op_; }
  // True when the scanner read the line (so body() is empty).
  bool scanned() const { return scanned_; }
  // The object nlohmann parsed; only for a parsed request.
  const nlohmann::json& body() const { return body_; }

  // The id as given, null when none: for replies built by nlohmann.
  nlohmann::json IdJson() const;
  // The id for fast_reply.h's writers: nullptr when none; false from
  // plain_id() when it is an integer beyond int64_t (IdJson has it).
  const FastValue* id() const { return has_id_ ? &id_ : nullptr; }
  bool has_id() const { return has_id_; }
  // True when Parse refused the line for its nesting (counted apart).
  bool too_deep() const { return too_deep_; }
  bool plain_id() const { return plain_id_; }

  // A field as `spec` names it (FieldSpec::key its FastKey, if any).
  // Inline for a scanned line: validation asks for each field of its op.
  FieldValue Field(const char* name, FastKey key) const {
    if (!scanned_) return ParsedField(name);
    FieldValue v;
    const FastValue* f = key == FastKey::kUnknown ? nullptr : scan_.Get(key);
    if (f == nullptr || f->kind == FastValue::Kind::kNull) return v;
    v.kind = f->kind == FastValue::Kind::kInt ? FieldValue::Kind::kInt
                                              : FieldValue::Kind::kString;
    v.number = f->number;
    v.text = f->text;
    return v;
  }

  // Hot fields, once validated: "" or the fallback when absent or null.
  std::string_view Text(FastKey key) const;
  int64_t Int(FastKey key, int64_t fallback) const;
  std::optional<int64_t> OptInt(FastKey key) const;

  // The typed requests the hot handlers fill, reused from line to line.
  AcquireRequest acquire;
  AcquireOutcome outcome;
  CommitRequest commit;

 private:
  FieldValue ParsedField(const char* name) const;
  void Clear();
  const nlohmann::json* Member(FastKey key) const;

  bool scanned_ = false;
  std::string_view op_;
  bool has_id_ = false;
  bool plain_id_ = true;
  bool too_deep_ = false;
  FastValue id_;
  FastRequest scan_;
  nlohmann::json body_;
};

}  // namespace brake
