// FastRequest: a bounded, allocation-free scanner for the hot request lines.
//
// Recognises a flat JSON object of at most kMaxFastFields members whose keys
// are plain (no escapes) and known (FastKey) and whose values are strings (plain or with the
// simple escapes \" \\ \/ \b \f \n \r \t), integers of at most 18 digits, or
// null, and whose "op" is acquire, commit or cancel. Everything else (nesting,
// floats, booleans, \u escapes, duplicate keys, malformed UTF-8, trailing
// bytes, too many members) is declined, and the caller falls back to the
// nlohmann parser, which then answers exactly as it always has. Accepting a
// line promises only that nlohmann would parse it to the same members;
// validation against the ops table is the caller's (daemon/request.h).
//
// Strings are views into the line, or into the request's own buffer when an
// escape had to be decoded; a FastRequest is valid while the line is.
// Stateless; any thread.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace brake {

inline constexpr size_t kMaxFastFields = 12;

enum class FastOp { kAcquire, kCommit, kCancel };

// The members the fast ops know (acquire's, commit's, cancel's, "id" and
// "op"). A line with any other member is declined: the general path
// ignores unknown members, the fast path leaves them to it.
enum class FastKey : uint8_t {
  kId,
  kOp,
  kUser,
  kTask,
  kTokens,
  kRequests,
  kModel,
  kResource,
  kFingerprint,
  kParent,
  kWaitMs,
  kLease,
  kInputTokens,
  kOutputTokens,
  kLatencyMs,
  kOutcome,
  kRetryAfterMs,
  kUsage,
  kUnknown,  // also the count of the known ones
};
inline constexpr size_t kFastKeys = static_cast<size_t>(FastKey::kUnknown);

// The FastKey named `name`, kUnknown when none.
FastKey FastKeyOf(std::string_view name);
// The member name of `key` ("" for kUnknown).
const char* FastKeyName(FastKey key);

struct FastValue {
  enum class Kind { kNull, kInt, kString };
  Kind kind = Kind::kNull;
  int64_t number = 0;     // kInt
  std::string_view text;  // kString, decoded
};

struct FastRequest {
  FastRequest() = default;
  // Views point into `scratch`: never copied.
  FastRequest(const FastRequest&) = delete;
  FastRequest& operator=(const FastRequest&) = delete;

  FastOp op = FastOp::kAcquire;
  std::string_view op_name;  // "acquire", "commit" or "cancel"
  size_t count = 0;          // members, "op" and "id" included
  std::array<FastValue, kMaxFastFields> values;
  // Index into `values` by FastKey; kAbsent when the member is not there.
  static constexpr uint8_t kAbsent = 0xff;
  std::array<uint8_t, kFastKeys> slot;
  // Decoded escaped strings live here.
  std::array<char, 1024> scratch;
  size_t scratch_used = 0;

  // The member `key`, or nullptr when absent.
  const FastValue* Get(FastKey key) const {
    const uint8_t i = slot[static_cast<size_t>(key)];
    return i == kAbsent ? nullptr : &values[i];
  }
};

// True when `line` is a request the fast path may answer (see above); false
// declines it, and `out` must then be ignored.
bool ScanFastRequest(std::string_view line, FastRequest* out);

// The value of the first member named "task" of `line`, when it is a plain
// string (no escapes); "" otherwise. For a hint only (Engine::Prefetch): it
// validates nothing, and a "task" inside another value may be taken.
std::string_view PeekTask(std::string_view line);

// True when `s` is well-formed UTF-8 as nlohmann's lexer accepts it (RFC
// 3629: no overlong forms, no surrogates, nothing above U+10FFFF).
bool IsValidUtf8(std::string_view s);

}  // namespace brake
