#include "daemon/fast_request.h"

#include <cstring>
#include <iterator>
#include <string>
#include <utility>

#include "common/json_plain.h"

namespace brake {
namespace {

// JSON's whitespace (RFC 8259), which nlohmann's lexer skips.
bool IsSpace(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

class Scanner {
 public:
  Scanner(std::string_view line, FastRequest* out) : s_(line), out_(out) {}

  bool Object() {
    SkipSpace();
    if (!Eat('{')) return false;
    SkipSpace();
    if (Peek() == '}') return false;  // no op: the slow path says so
    for (;;) {
      if (out_->count == kMaxFastFields) return false;
      const FastKey known = Key();
      if (known == FastKey::kUnknown) return false;
      uint8_t& slot = out_->slot[static_cast<size_t>(known)];
      if (slot != FastRequest::kAbsent) return false;  // duplicate: last wins there
      SkipSpace();
      if (!Eat(':')) return false;
      SkipSpace();
      FastValue& v = out_->values[out_->count];
      if (!Value(&v)) return false;
      slot = static_cast<uint8_t>(out_->count++);
      SkipSpace();
      if (Eat(',')) {
        SkipSpace();
        continue;
      }
      if (!Eat('}')) return false;
      break;
    }
    SkipSpace();
    return pos_ == s_.size();
  }

  // A known key and its closing quote (kUnknown for anything else, which
  // the caller declines): matched in place against the names that start
  // with its first byte, without scanning for the quote first.
  [[gnu::always_inline]] FastKey Key() {
    if (!Eat('"')) return FastKey::kUnknown;
    switch (Peek()) {
      case 'i': return Either("id", FastKey::kId,
                              "input_tokens", FastKey::kInputTokens);
      case 'o':
        return Either("op", FastKey::kOp, "outcome", FastKey::kOutcome,
                      "output_tokens", FastKey::kOutputTokens);
      case 'u': return Either("user", FastKey::kUser, "usage", FastKey::kUsage);
      case 't': return Either("task", FastKey::kTask,
                              "tokens", FastKey::kTokens);
      case 'r':
        return Either("requests", FastKey::kRequests, "resource",
                      FastKey::kResource, "retry_after_ms",
                      FastKey::kRetryAfterMs);
      case 'm': return Either("model", FastKey::kModel);
      case 'f': return Either("fingerprint", FastKey::kFingerprint);
      case 'p': return Either("parent", FastKey::kParent);
      case 'w': return Either("wait_ms", FastKey::kWaitMs);
      case 'l': return Either("lease", FastKey::kLease,
                              "latency_ms", FastKey::kLatencyMs);
      default: return FastKey::kUnknown;
    }
  }
  // The first of the names given that stands at pos_ with its closing
  // quote, skipped; kUnknown when none. Each compare is of a constant
  // size, which the compiler makes a load or two.
  template <size_t N, class... More>
  FastKey Either(const char (&name)[N], FastKey key, More&&... more) {
    constexpr size_t n = N - 1;
    if (s_.size() - pos_ > n && s_[pos_ + n] == '"' &&
        std::memcmp(s_.data() + pos_, name, n) == 0) {
      pos_ += n + 1;
      return key;
    }
    if constexpr (sizeof...(more) == 0) {
      return FastKey::kUnknown;
    } else {
      return Either(std::forward<More>(more)...);
    }
  }
  bool AtEnd() const { return pos_ == s_.size(); }

 private:
  char Peek() const { return pos_ < s_.size() ? s_[pos_] : '\0'; }
  bool Eat(char c) {
    if (pos_ < s_.size() && s_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }
  [[gnu::always_inline]] void SkipSpace() {
    // Compact lines have none: one test in the usual case.
    while (pos_ < s_.size() &&
           static_cast<unsigned char>(s_[pos_]) <= ' ' && IsSpace(s_[pos_])) {
      ++pos_;
    }
  }

  bool Value(FastValue* v) {
    char c = Peek();
    if (c == '"') {
      v->kind = FastValue::Kind::kString;
      return String(&v->text);
    }
    if (c == '-' || (c >= '0' && c <= '9')) {
      v->kind = FastValue::Kind::kInt;
      return Integer(&v->number);
    }
    if (s_.compare(pos_, 4, "null") == 0) {
      pos_ += 4;
      v->kind = FastValue::Kind::kNull;
      return true;
    }
    return false;  // true, false, objects, arrays, garbage
  }

  // -?(0|[1-9][0-9]{0,17}): always fits int64. A fraction or exponent
  // leaves a '.', 'e' or digit behind, which the caller's structure check
  // refuses.
  bool Integer(int64_t* value) {
    bool negative = Eat('-');
    if (Eat('0')) {
      *value = 0;  // "-0" is the integer 0 to nlohmann too
      return true;
    }
    size_t start = pos_;
    int64_t v = 0;
    while (pos_ < s_.size() && s_[pos_] >= '0' && s_[pos_] <= '9') {
      // A 19th digit could overflow: leave such numbers to nlohmann (the
      // check comes before the multiplication, which would be UB).
      if (pos_ - start == 18) return false;
      v = v * 10 + (s_[pos_] - '0');
      ++pos_;
    }
    if (pos_ == start) return false;
    *value = negative ? -v : v;
    return true;
  }

  bool String(std::string_view* text) {
    ++pos_;  // the opening quote
    const size_t start = pos_;
    // The commonest case of all: up to the next quote, nothing to decode
    // or check.
    if (const size_t end = FirstNonPlainByte(s_, pos_);
        end < s_.size() && s_[end] == '"') {
      *text = s_.substr(start, end - start);
      pos_ = end + 1;
      return true;
    }
    bool high = false;
    // The common case: no escape, a view into the line.
    while (pos_ < s_.size()) {
      unsigned char c = static_cast<unsigned char>(s_[pos_]);
      if (c == '"') {
        *text = s_.substr(start, pos_ - start);
        ++pos_;
        return !high || IsValidUtf8(*text);
      }
      if (c == '\\') break;
      if (c < 0x20) return false;
      high |= c >= 0x80;
      ++pos_;
    }
    if (pos_ >= s_.size()) return false;
    // Escapes: decode into the request's scratch buffer.
    char* const begin = out_->scratch.data() + out_->scratch_used;
    char* const end = out_->scratch.data() + out_->scratch.size();
    size_t prefix = pos_ - start;
    if (prefix > static_cast<size_t>(end - begin)) return false;
    std::memcpy(begin, s_.data() + start, prefix);
    char* w = begin + prefix;
    while (pos_ < s_.size()) {
      unsigned char c = static_cast<unsigned char>(s_[pos_]);
      if (c == '"') {
        ++pos_;
        *text = std::string_view(begin, static_cast<size_t>(w - begin));
        out_->scratch_used += static_cast<size_t>(w - begin);
        return !high || IsValidUtf8(*text);
      }
      if (c < 0x20) return false;
      if (w == end) return false;
      if (c == '\\') {
        if (pos_ + 1 >= s_.size()) return false;
        char e = s_[pos_ + 1];
        switch (e) {
          case '"':
            *w = '"';
            break;
          case '\\':
            *w = '\\';
            break;
          case '/':
            *w = '/';
            break;
          case 'b':
            *w = '\b';
            break;
          case 'f':
            *w = '\f';
            break;
          case 'n':
            *w = '\n';
            break;
          case 'r':
            *w = '\r';
            break;
          case 't':
            *w = '\t';
            break;
          default:
            return false;  // \u and invalid escapes
        }
        ++w;
        pos_ += 2;
        continue;
      }
      high |= c >= 0x80;
      *w++ = static_cast<char>(c);
      ++pos_;
    }
    return false;
  }

  std::string_view s_;
  size_t pos_ = 0;
  FastRequest* out_;
};

}  // namespace

std::string_view PeekTask(std::string_view line) {
  constexpr std::string_view kKey = "\"task\"";
  const size_t at = line.find(kKey);
  if (at == std::string_view::npos) return {};
  size_t i = at + kKey.size();
  auto skip_space = [&] {
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
  };
  skip_space();
  if (i >= line.size() || line[i] != ':') return {};
  ++i;
  skip_space();
  if (i >= line.size() || line[i] != '"') return {};
  const size_t start = ++i;
  while (i < line.size() && line[i] != '"') {
    if (line[i] == '\\') return {};
    ++i;
  }
  if (i >= line.size()) return {};
  return line.substr(start, i - start);
}

bool IsValidUtf8(std::string_view s) {
  size_t i = 0;
  const size_t n = s.size();
  auto cont = [&](size_t at, unsigned char lo, unsigned char hi) {
    if (at >= n) return false;
    unsigned char c = static_cast<unsigned char>(s[at]);
    return c >= lo && c <= hi;
  };
  while (i < n) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      ++i;
    } else if (c >= 0xc2 && c <= 0xdf) {
      if (!cont(i + 1, 0x80, 0xbf)) return false;
      i += 2;
    } else if (c >= 0xe0 && c <= 0xef) {
      unsigned char lo = c == 0xe0 ? 0xa0 : 0x80;
      unsigned char hi = c == 0xed ? 0x9f : 0xbf;
      if (!cont(i + 1, lo, hi) || !cont(i + 2, 0x80, 0xbf)) return false;
      i += 3;
    } else if (c >= 0xf0 && c <= 0xf4) {
      unsigned char lo = c == 0xf0 ? 0x90 : 0x80;
      unsigned char hi = c == 0xf4 ? 0x8f : 0xbf;
      if (!cont(i + 1, lo, hi) || !cont(i + 2, 0x80, 0xbf) ||
          !cont(i + 3, 0x80, 0xbf))
        return false;
      i += 4;
    } else {
      return false;
    }
  }
  return true;
}

FastKey FastKeyOf(std::string_view name) {
  // The scanner's own matcher (one list of names), on the name quoted as
  // in a line. Not on the hot path: the ops table's keys, once.
  std::string quoted;
  quoted.reserve(name.size() + 2);
  quoted.append(1, '"').append(name).append(1, '"');
  Scanner scan(quoted, nullptr);
  const FastKey key = scan.Key();
  return scan.AtEnd() ? key : FastKey::kUnknown;
}

const char* FastKeyName(FastKey key) {
  static constexpr const char* kNames[] = {
      "id",          "op",            "user",       "task",
      "tokens",      "requests",      "model",      "resource",
      "fingerprint", "parent",        "wait_ms",    "lease",
      "input_tokens", "output_tokens", "latency_ms", "outcome",
      "retry_after_ms", "usage", ""};
  static_assert(std::size(kNames) == kFastKeys + 1);
  return kNames[static_cast<size_t>(key)];
}

bool ScanFastRequest(std::string_view line, FastRequest* out) {
  out->count = 0;
  out->scratch_used = 0;
  out->slot.fill(FastRequest::kAbsent);
  if (!Scanner(line, out).Object()) return false;
  const FastValue* op = out->Get(FastKey::kOp);
  if (op == nullptr || op->kind != FastValue::Kind::kString) return false;
  if (op->text == "acquire") {
    out->op = FastOp::kAcquire;
  } else if (op->text == "commit") {
    out->op = FastOp::kCommit;
  } else if (op->text == "cancel") {
    out->op = FastOp::kCancel;
  } else {
    return false;
  }
  out->op_name = op->text;
  // An id must be a string or an integer; anything else is an error the
  // slow path words.
  const FastValue* id = out->Get(FastKey::kId);
  return id == nullptr || id->kind != FastValue::Kind::kNull;
}

}  // namespace brake
