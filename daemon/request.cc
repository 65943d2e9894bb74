#include "daemon/request.h"

#include <limits>
#include <string>
#include <utility>

#include "common/json_error.h"
#include "daemon/counters.h"
#include "daemon/json_fields.h"

namespace brake {
namespace {

// Deeper nesting than any valid request needs; rejected before parsing, so a
// hostile line can never make the parser or dump() recurse deeply.
constexpr int kMaxDepth = 32;

}  // namespace

using json = nlohmann::json;

void Request::Clear() {
  scanned_ = false;
  op_ = {};
  has_id_ = false;
  plain_id_ = true;
  too_deep_ = false;
  id_ = FastValue{};
}

Status Request::Decode(std::string_view line) {
  if (Scan(line)) return Status::Ok();
  return Parse(line);
}

bool Request::Scan(std::string_view line) {
  Clear();
  if (!ScanFastRequest(line, &scan_)) return false;
  scanned_ = true;
  op_ = scan_.op_name;
  if (const FastValue* id = scan_.Get(FastKey::kId)) {  // never null
    has_id_ = true;
    id_ = *id;
  }
  return true;
}

Status Request::Parse(std::string_view line) {
  Clear();
  body_ = json();
  if (NestedDeeperThan(line, kMaxDepth)) {
    too_deep_ = true;
    std::string message = "request: nested deeper than ";
    message += std::to_string(kMaxDepth);
    message += " levels";
    return Status(ErrorCode::kBadJson, std::move(message));
  }
  body_ = json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (body_.is_discarded()) {
    body_ = json();
    return Status(ErrorCode::kBadJson, "request: not a valid JSON line" +
                                           WhereJsonFails<json>(line));
  }
  if (!body_.is_object()) {
    return Status::BadRequest("request: must be a JSON object");
  }
  if (auto it = body_.find("id"); it != body_.end()) {
    if (!it->is_string() && !it->is_number_integer()) {
      return Status::BadRequest("id: must be a string or an integer");
    }
    has_id_ = true;
    if (it->is_string()) {
      id_.kind = FastValue::Kind::kString;
      id_.text = it->get_ref<const std::string&>();
    } else if (it->is_number_unsigned() &&
               it->get<uint64_t>() >
                   static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      plain_id_ = false;
    } else {
      id_.kind = FastValue::Kind::kInt;
      id_.number = it->get<int64_t>();
    }
  }
  auto op = body_.find("op");
  if (op == body_.end()) return Status::BadRequest("op: is required");
  if (!op->is_string()) return Status::BadRequest("op: must be a string");
  op_ = op->get_ref<const std::string&>();
  return Status::Ok();
}

json Request::IdJson() const {
  if (!has_id_) return nullptr;
  if (!scanned_) return body_["id"];
  if (id_.kind == FastValue::Kind::kInt) return id_.number;
  return std::string(id_.text);
}

const json* Request::Member(FastKey key) const {
  auto it = body_.find(FastKeyName(key));
  if (it == body_.end() || it->is_null()) return nullptr;
  return &*it;
}

FieldValue Request::ParsedField(const char* name) const {
  FieldValue v;
  auto it = body_.find(name);
  if (it == body_.end() || it->is_null()) return v;
  v.json = &*it;
  if (it->is_string()) {
    v.kind = FieldValue::Kind::kString;
    v.text = it->get_ref<const std::string&>();
  } else if (it->is_number_unsigned()) {
    const uint64_t u = it->get<uint64_t>();
    if (u <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      v.kind = FieldValue::Kind::kInt;
      v.number = static_cast<int64_t>(u);
    } else {
      v.kind = FieldValue::Kind::kOther;
    }
  } else if (it->is_number_integer()) {
    v.kind = FieldValue::Kind::kInt;
    v.number = it->get<int64_t>();
  } else {
    v.kind = FieldValue::Kind::kOther;
  }
  return v;
}

std::string_view Request::Text(FastKey key) const {
  if (scanned_) {
    const FastValue* f = scan_.Get(key);
    return f != nullptr && f->kind == FastValue::Kind::kString
               ? f->text
               : std::string_view();
  }
  const json* m = Member(key);
  return m != nullptr && m->is_string()
             ? std::string_view(m->get_ref<const std::string&>())
             : std::string_view();
}

int64_t Request::Int(FastKey key, int64_t fallback) const {
  return OptInt(key).value_or(fallback);
}

std::optional<int64_t> Request::OptInt(FastKey key) const {
  if (scanned_) {
    const FastValue* f = scan_.Get(key);
    if (f == nullptr || f->kind != FastValue::Kind::kInt) return std::nullopt;
    return f->number;
  }
  const json* m = Member(key);
  if (m == nullptr || !m->is_number_integer()) return std::nullopt;
  return m->get<int64_t>();
}

}  // namespace brake
