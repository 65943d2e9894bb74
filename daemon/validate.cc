// Central validation of a request against its row of the ops table: every
// field's type, bounds and presence, with messages that name the field.
#include <string>

#include "daemon/json_fields.h"
#include "daemon/ops.h"

namespace brake {

using json = nlohmann::json;

Status ValidateFields(const Dispatcher::Op& op, const json& request) {
  for (const FieldSpec& f : op.fields) {
    auto it = request.find(f.name);
    if (it == request.end() || it->is_null()) {
      if (f.required) return Status::BadRequest(std::string(f.name) + ": is required");
      continue;
    }
    switch (f.kind) {
      case FieldKind::kName: {
        if (!it->is_string())
          return Status::BadRequest(std::string(f.name) + ": must be a string");
        if (Status s = ValidateName(it->get_ref<const std::string&>(), f.name);
            !s.ok())
          return s;
        break;
      }
      case FieldKind::kScope: {
        if (!it->is_string())
          return Status::BadRequest(std::string(f.name) + ": must be a string");
        if (Status s = ValidateScope(it->get_ref<const std::string&>(), f.name);
            !s.ok())
          return s;
        break;
      }
      case FieldKind::kString:
        if (!it->is_string() || it->get_ref<const std::string&>().empty() ||
            it->get_ref<const std::string&>().size() > kMaxStringBytes)
          return Status::BadRequest(std::string(f.name) +
                                    ": must be a non-empty string of at most " +
                                    std::to_string(kMaxStringBytes) + " bytes");
        break;
      case FieldKind::kInt: {
        auto v = ReadInt(request, f.name, f.min, f.max, std::nullopt);
        if (!v.ok()) return v.status();
        break;
      }
      case FieldKind::kNumber: {
        auto v = ReadNumber(request, f.name, static_cast<double>(f.min),
                            static_cast<double>(f.max), std::nullopt);
        if (!v.ok()) return v.status();
        break;
      }
      case FieldKind::kBool:
        if (!it->is_boolean())
          return Status::BadRequest(std::string(f.name) +
                                    ": must be true or false");
        break;
      case FieldKind::kEnum: {
        std::string choices = f.choices;
        bool found = false;
        if (it->is_string()) {
          std::string v = it->get<std::string>();
          size_t pos = 0;
          while (pos <= choices.size()) {
            size_t bar = choices.find('|', pos);
            if (bar == std::string::npos) bar = choices.size();
            if (choices.compare(pos, bar - pos, v) == 0 &&
                v.size() == bar - pos)
              found = true;
            pos = bar + 1;
          }
        }
        if (!found) {
          for (char& c : choices)
            if (c == '|') c = ',';
          return Status::BadRequest(std::string(f.name) + ": must be one of " +
                                    choices);
        }
        break;
      }
      case FieldKind::kObject:
        if (!it->is_object())
          return Status::BadRequest(std::string(f.name) + ": must be an object");
        break;
      case FieldKind::kArray:
        if (!it->is_array())
          return Status::BadRequest(std::string(f.name) + ": must be an array");
        break;
    }
  }
  return Status::Ok();
}

}  // namespace brake
