// Central validation of a request against its row of the ops table: every
// field's type, bounds and presence, with messages that name the field.
#include <cmath>
#include <cstdio>
#include <string>

#include "daemon/json_fields.h"
#include "daemon/ops.h"

namespace brake {
namespace {

using Kind = FieldValue::Kind;

Status Bad(const FieldSpec& f, const std::string& what) {
  return Status::BadRequest(std::string(f.name) + ": " + what);
}

bool OneOf(std::string_view value, std::string_view choices) {
  while (true) {
    const size_t bar = choices.find('|');
    if (choices.substr(0, bar) == value) return true;
    if (bar == std::string_view::npos) return false;
    choices.remove_prefix(bar + 1);
  }
}

Status Check(const FieldSpec& f, const FieldValue& v) {
  switch (f.kind) {
    case FieldKind::kName:
      if (v.kind != Kind::kString) return Bad(f, "must be a string");
      return ValidateName(v.text, f.name);
    case FieldKind::kModel:
      if (v.kind != Kind::kString) return Bad(f, "must be a string");
      return ValidateModel(v.text, f.name);
    case FieldKind::kScope:
      if (v.kind != Kind::kString) return Bad(f, "must be a string");
      return ValidateScope(v.text, f.name);
    case FieldKind::kString:
      if (v.kind != Kind::kString || v.text.empty() ||
          v.text.size() > kMaxStringBytes) {
        return Bad(f, "must be a non-empty string of at most " +
                          std::to_string(kMaxStringBytes) + " bytes");
      }
      return Status::Ok();
    case FieldKind::kInt:
      if (v.kind != Kind::kInt || v.number < f.min || v.number > f.max) {
        return Bad(f, "must be an integer between " + std::to_string(f.min) +
                          " and " + std::to_string(f.max));
      }
      return Status::Ok();
    case FieldKind::kNumber: {
      double d = 0;
      if (v.kind == Kind::kInt) {
        d = static_cast<double>(v.number);
      } else if (v.json != nullptr && v.json->is_number()) {
        d = v.json->get<double>();
      } else {
        return Bad(f, "must be a number");
      }
      const double min = static_cast<double>(f.min);
      const double max = static_cast<double>(f.max);
      if (!std::isfinite(d) || d < min || d > max) {
        char buf[96];
        std::snprintf(buf, sizeof(buf), "must be a number between %g and %g",
                      min, max);
        return Bad(f, buf);
      }
      return Status::Ok();
    }
    case FieldKind::kBool:
      if (v.json == nullptr || !v.json->is_boolean())
        return Bad(f, "must be true or false");
      return Status::Ok();
    case FieldKind::kEnum:
      if (v.kind != Kind::kString || !OneOf(v.text, f.choices)) {
        std::string choices = f.choices;
        for (char& c : choices)
          if (c == '|') c = ',';
        return Bad(f, "must be one of " + choices);
      }
      return Status::Ok();
    case FieldKind::kObject:
      if (v.json == nullptr || !v.json->is_object())
        return Bad(f, "must be an object");
      return Status::Ok();
    case FieldKind::kArray:
      if (v.json == nullptr || !v.json->is_array())
        return Bad(f, "must be an array");
      return Status::Ok();
  }
  return Status::Ok();
}

}  // namespace

Status ValidateFields(const Dispatcher::Op& op, const Request& request) {
  for (const FieldSpec& f : op.fields) {
    const FieldValue v = request.Field(f.name, f.key);
    if (v.kind == Kind::kAbsent) {
      if (f.required) return Bad(f, "is required");
      continue;
    }
    if (Status s = Check(f, v); !s.ok()) return s;
  }
  return Status::Ok();
}

}  // namespace brake
