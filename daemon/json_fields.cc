#include "daemon/json_fields.h"

#include <cmath>

namespace brake {
namespace {

std::string Field(std::string_view prefix, std::string_view key) {
  std::string f(prefix);
  if (!f.empty()) f += '.';
  f += key;
  return f;
}

Status Bad(std::string_view prefix, std::string_view key, std::string_view why) {
  return Status::BadRequest(Field(prefix, key) + ": " + std::string(why));
}

}  // namespace

namespace {

// A C0 control, DEL, or the first byte of a C1 control U+0080..U+009F
// (UTF-8 C2 80..9F): none of them is printable.
bool ControlAt(std::string_view value, size_t i) {
  const unsigned char c = static_cast<unsigned char>(value[i]);
  if (c < 0x20 || c == 0x7f) return true;
  return c == 0xc2 && i + 1 < value.size() &&
         static_cast<unsigned char>(value[i + 1]) >= 0x80 &&
         static_cast<unsigned char>(value[i + 1]) <= 0x9f;
}

}  // namespace

bool IsValidName(std::string_view value) {
  if (value.empty() || value.size() > kMaxNameBytes || value == "*") {
    return false;
  }
  for (size_t i = 0; i < value.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(value[i]);
    if (c >= 0x20 && c < 0x7f) continue;  // printable ASCII, the usual
    if (ControlAt(value, i)) return false;
  }
  return true;
}

Status ValidateName(std::string_view value, std::string_view field) {
  if (IsValidName(value)) return Status::Ok();
  if (value.empty()) {
    return Status::BadRequest(std::string(field) + ": must not be empty");
  }
  if (value == "*") {
    return Status::BadRequest(std::string(field) +
                              ": * is reserved for the default scopes");
  }
  if (value.size() > kMaxNameBytes) {
    return Status::BadRequest(std::string(field) + ": longer than " +
                              std::to_string(kMaxNameBytes) + " bytes");
  }
  for (size_t i = 0; i < value.size(); ++i) {
    if (ControlAt(value, i)) {
      return Status::BadRequest(std::string(field) +
                                ": contains a control character");
    }
  }
  return Status::Ok();
}

Status ValidateModel(std::string_view value, std::string_view field) {
  if (value == kUnnamedModel) return Status::Ok();
  return ValidateName(value, field);
}

Status ValidateScope(std::string_view value, std::string_view field) {
  if (value == "global") return Status::Ok();
  size_t colon = value.find(':');
  std::string_view kind = value.substr(0, colon);
  if (colon == std::string_view::npos ||
      (kind != "user" && kind != "task" && kind != "resource")) {
    return Status::BadRequest(
        std::string(field) +
        ": must be global, user:NAME, task:NAME or resource:NAME (NAME may "
        "be *)");
  }
  std::string_view name = value.substr(colon + 1);
  if (name == "*") return Status::Ok();
  return ValidateName(name, field);
}

Result<int64_t> ReadInt(const json& obj, const char* key, int64_t min,
                        int64_t max, std::optional<int64_t> fallback,
                        std::string_view prefix) {
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) {
    if (fallback) return *fallback;
    return Bad(prefix, key, "is required");
  }
  std::string range = "must be an integer between " + std::to_string(min) +
                      " and " + std::to_string(max);
  int64_t v;
  if (it->is_number_unsigned()) {
    uint64_t u = it->get<uint64_t>();
    if (u > static_cast<uint64_t>(max)) return Bad(prefix, key, range);
    v = static_cast<int64_t>(u);
  } else if (it->is_number_integer()) {
    v = it->get<int64_t>();
  } else {
    return Bad(prefix, key, range);
  }
  if (v < min || v > max) return Bad(prefix, key, range);
  return v;
}

Result<double> ReadNumber(const json& obj, const char* key, double min,
                          double max, std::optional<double> fallback,
                          std::string_view prefix) {
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) {
    if (fallback) return *fallback;
    return Bad(prefix, key, "is required");
  }
  if (!it->is_number()) {
    return Bad(prefix, key, "must be a number");
  }
  double v = it->get<double>();
  if (!std::isfinite(v) || v < min || v > max) {
    char buf[96];
    std::snprintf(buf, sizeof(buf), "must be a number between %g and %g", min,
                  max);
    return Bad(prefix, key, buf);
  }
  return v;
}

Result<std::string> ReadString(const json& obj, const char* key,
                               std::optional<std::string> fallback,
                               std::string_view prefix) {
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) {
    if (fallback) return *fallback;
    return Bad(prefix, key, "is required");
  }
  if (!it->is_string()) return Bad(prefix, key, "must be a string");
  return it->get<std::string>();
}

Result<std::string> ReadName(const json& obj, const char* key, bool required,
                             std::string_view prefix) {
  auto s = ReadString(obj, key,
                      required ? std::nullopt : std::optional<std::string>(""),
                      prefix);
  if (!s.ok()) return s;
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return s;
  if (Status v = ValidateName(*s, Field(prefix, key)); !v.ok()) return v;
  return s;
}

Result<bool> ReadBool(const json& obj, const char* key, bool fallback,
                      std::string_view prefix) {
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return fallback;
  if (!it->is_boolean()) return Bad(prefix, key, "must be true or false");
  return it->get<bool>();
}

int64_t UsdToNano(double usd) {
  return static_cast<int64_t>(std::llround(usd * 1e9));
}

double NanoToUsd(int64_t nano) { return static_cast<double>(nano) / 1e9; }

}  // namespace brake
