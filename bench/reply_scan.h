// ScanReply: a cheap, allocation-free classification of one braked reply
// line, for the load generator's hot path.
//
// It does not parse JSON. It finds the first occurrence of a few top-level
// keys ("id", "ok", "granted", "reason", "lease", "code") by string search
// and reads their scalar values. That is enough for the reply shapes of
// PROTOCOL.md, whose keys are unique in a reply (error codes live in the
// "error" object, which has no other "code"). Any thread may call it.
#pragma once

#include <cstdint>
#include <string_view>

namespace brake::bench {

enum class ReplyKind {
  kGranted,  // "ok":true, "granted":true
  kDenied,   // "ok":true, "granted":false; reason set
  kError,    // "ok":false; reason holds error.code (may be empty)
  kOk,       // "ok":true without "granted" (ping, commit, cancel)
  kOther,    // no "ok" at all, e.g. a line echoed by the echo server
};

struct ScannedReply {
  ReplyKind kind = ReplyKind::kOther;
  bool has_id = false;
  uint64_t id = 0;  // integer ids, or strings made of decimal digits
  // Views into the scanned line; valid while it is.
  std::string_view reason;  // denial reason or error code
  std::string_view lease;   // raw JSON string content, escapes kept
};

ScannedReply ScanReply(std::string_view line);

// The position just after `"key"` and the colon that follows it (and any
// blanks around the colon), or npos when the key does not occur. Exposed for
// tests.
size_t FindValue(std::string_view line, std::string_view key);

}  // namespace brake::bench
