// Status and Result<T>: how errors cross module borders in brake.
//
// A Status is either ok or carries one of the stable error codes of
// PROTOCOL.md plus a message that names the offending field. Refusals (rate
// limited, quota used, breaker open) are not errors; they are normal answers.
// Values only: no exceptions cross a module border. Any thread may use them.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>

namespace brake {

// The stable error codes of the protocol (docs/PROTOCOL.md, "Error codes").
enum class ErrorCode {
  kOk = 0,
  kBadJson,
  kBadRequest,
  kUnknownOp,
  kLineTooLong,
  kUnknownLease,
  kForbidden,
  kUnavailable,
  kInternal,
  kTooManyConnections,
};

// The wire name of `code`, e.g. "bad_request".
std::string_view ErrorCodeName(ErrorCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(ErrorCode code, std::string message)
      : code_(code), message_(std::move(message)) {}

  static Status Ok() { return Status(); }
  static Status BadRequest(std::string m) {
    return Status(ErrorCode::kBadRequest, std::move(m));
  }
  static Status Internal(std::string m) {
    return Status(ErrorCode::kInternal, std::move(m));
  }
  static Status Unavailable(std::string m) {
    return Status(ErrorCode::kUnavailable, std::move(m));
  }

  bool ok() const { return code_ == ErrorCode::kOk; }
  ErrorCode code() const { return code_; }
  const std::string& message() const { return message_; }
  // "bad_request: tokens: must be an integer >= 0"
  std::string ToString() const;

 private:
  ErrorCode code_ = ErrorCode::kOk;
  std::string message_;
};

// Either a value or a non-ok Status.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : value_(std::move(value)) {}  // NOLINT: implicit by design
  Result(Status status) : status_(std::move(status)) {}  // NOLINT

  bool ok() const { return status_.ok(); }
  const Status& status() const { return status_; }
  T& value() { return *value_; }
  const T& value() const { return *value_; }
  T& operator*() { return *value_; }
  const T& operator*() const { return *value_; }
  T* operator->() { return &*value_; }
  const T* operator->() const { return &*value_; }

 private:
  std::optional<T> value_;
  Status status_;
};

}  // namespace brake
