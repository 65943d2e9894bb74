// FastRequest: a bounded, allocation-free scanner for the hot request lines.
//
// Recognises a flat JSON object of at most kMaxFastFields members whose keys
// are plain (no escapes) and whose values are strings (plain or with the
// simple escapes \" \\ \/ \b \f \n \r \t), integers of at most 18 digits, or
// null, and whose "op" is acquire, commit or cancel. Everything else (nesting,
// floats, booleans, \u escapes, duplicate keys, malformed UTF-8, trailing
// bytes, too many members) is declined, and the caller falls back to the
// nlohmann parser, which then answers exactly as it always has. Accepting a
// line promises only that nlohmann would parse it to the same members;
// validation against the ops table is the caller's (fast_ops.cc).
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
  std::array<std::string_view, kMaxFastFields> keys;
  std::array<FastValue, kMaxFastFields> values;
  // Decoded escaped strings live here.
  std::array<char, 1024> scratch;
  size_t scratch_used = 0;

  // The member named `key`, or nullptr when absent.
  const FastValue* Find(std::string_view key) const {
    // Length and first byte first: most keys differ there, and a call to
    // memcmp per key compared was a tenth of a request's instructions.
    for (size_t i = 0; i < count; ++i) {
      const std::string_view k = keys[i];
      if (k.size() == key.size() && (k.empty() || k[0] == key[0]) &&
          k.compare(key) == 0) {
        return &values[i];
      }
    }
    return nullptr;
  }
};

// True when `line` is a request the fast path may answer (see above); false
// declines it, and `out` must then be ignored.
bool ScanFastRequest(std::string_view line, FastRequest* out);

// True when `s` is well-formed UTF-8 as nlohmann's lexer accepts it (RFC
// 3629: no overlong forms, no surrogates, nothing above U+10FFFF).
bool IsValidUtf8(std::string_view s);

}  // namespace brake
