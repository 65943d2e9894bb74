#include "common/status.h"

namespace brake {

std::string_view ErrorCodeName(ErrorCode code) {
  switch (code) {
    case ErrorCode::kOk: return "ok";
    case ErrorCode::kBadJson: return "bad_json";
    case ErrorCode::kBadRequest: return "bad_request";
    case ErrorCode::kUnknownOp: return "unknown_op";
    case ErrorCode::kLineTooLong: return "line_too_long";
    case ErrorCode::kUnknownLease: return "unknown_lease";
    case ErrorCode::kForbidden: return "forbidden";
    case ErrorCode::kUnavailable: return "unavailable";
    case ErrorCode::kInternal: return "internal";
    case ErrorCode::kTooManyConnections: return "too_many_connections";
  }
  return "internal";
}

std::string Status::ToString() const {
  if (ok()) return "ok";
  std::string s(ErrorCodeName(code_));
  s += ": ";
  s += message_;
  return s;
}

}  // namespace brake
