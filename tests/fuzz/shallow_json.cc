#include "tests/fuzz/shallow_json.h"

#include <cmath>
#include <cstdlib>

#include "tests/fuzz/fuzz_check.h"

namespace brake::fuzz {
namespace {

// The bytes the plain reader decides on: JSON's whitespace and printable
// ASCII. DEL (0x7f) is left to nlohmann, which takes it as a plain character.
bool Plain(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' ||
         (c > ' ' && c < 0x7f);
}

bool Digit(char c) { return c >= '0' && c <= '9'; }

// k == name, compared byte by byte: std::string's == calls memcmp, which
// ASan intercepts and libFuzzer then records, for every key of every line.
bool Is(const std::string& k, std::string_view name) {
  if (k.size() != name.size()) return false;
  for (std::size_t i = 0; i < name.size(); ++i) {
    if (k[i] != name[i]) return false;
  }
  return true;
}

bool CrossCheck() {
  static const bool on = std::getenv("BRAKE_FUZZ_CROSSCHECK") != nullptr;
  return on;
}

// RFC 8259's grammar over plain bytes, feeding a Shallow. Why its verdict
// is nlohmann's: every byte it consumes is plain and none belongs to a \u
// escape, and over such text nlohmann's lexer and parser implement exactly
// that grammar (its extras, a BOM, UTF-8 checks, surrogates and NUL as the
// end of input, all involve other bytes). A text it rejects has a prefix of
// such bytes that no valid text starts with, so nlohmann, reading from the
// left, rejects it too. What it cannot decide (a byte that is not plain, a \u
// escape, a long integer, a float that overflows, deep nesting) is left to
// nlohmann whole.
class PlainReader {
 public:
  enum Result { kValid, kInvalid, kUnsure };

  PlainReader(std::string_view text, Shallow* sax, std::string* scratch)
      : p_(text.data()),
        end_(text.data() + text.size()),
        sax_(sax),
        scratch_(scratch) {}

  Result Read() {
    constexpr std::size_t kUnknownSize = static_cast<std::size_t>(-1);
    int depth = 0;
    bool want_value = true;
    for (;;) {
      SkipSpace();
      if (want_value) {
        if (p_ == end_) return Fail();
        const char c = *p_;
        if (c != '{' && c != '[') {
          if (!Scalar()) return result_;
          want_value = false;
          continue;
        }
        if (depth == kMaxDepth) return kUnsure;
        const bool object = c == '{';
        ++p_;
        object ? sax_->start_object(kUnknownSize)
               : sax_->start_array(kUnknownSize);
        object_[depth++] = object;
        SkipSpace();
        if (p_ != end_ && *p_ == (object ? '}' : ']')) {
          ++p_;
          Close(&depth);
          want_value = false;
        } else if (object && !Key()) {
          return result_;
        }
        continue;
      }
      // A value has ended.
      if (depth == 0) return p_ == end_ ? kValid : Fail();
      if (p_ == end_) return Fail();
      const bool object = object_[depth - 1];
      if (*p_ == ',') {
        ++p_;
        if (object) {
          SkipSpace();
          if (!Key()) return result_;
        }
        want_value = true;
      } else if (*p_ == (object ? '}' : ']')) {
        ++p_;
        Close(&depth);
      } else {
        return Fail();
      }
    }
  }

 private:
  static constexpr int kMaxDepth = 64;
  static constexpr int kMaxDigits = 18;  // fits int64_t and uint64_t

  // The text is not JSON at p_, unless the byte there is not plain.
  Result Fail() { return p_ != end_ && !Plain(*p_) ? kUnsure : kInvalid; }
  bool Stop(Result r) {
    result_ = r;
    return false;
  }

  void SkipSpace() {
    while (p_ != end_ &&
           (*p_ == ' ' || *p_ == '\t' || *p_ == '\n' || *p_ == '\r')) {
      ++p_;
    }
  }

  void Close(int* depth) {
    --*depth;
    object_[*depth] ? sax_->end_object() : sax_->end_array();
  }

  // A member name and its ':'.
  bool Key() {
    if (p_ == end_ || *p_ != '"') return Stop(Fail());
    if (!String()) return false;
    sax_->key(*scratch_);
    SkipSpace();
    if (p_ == end_ || *p_ != ':') return Stop(Fail());
    ++p_;
    return true;
  }

  bool Scalar() {
    switch (*p_) {
      case '"':
        if (!String()) return false;
        sax_->string(*scratch_);
        return true;
      case 't':
        if (!Word("true")) return false;
        sax_->boolean(true);
        return true;
      case 'f':
        if (!Word("false")) return false;
        sax_->boolean(false);
        return true;
      case 'n':
        if (!Word("null")) return false;
        sax_->null();
        return true;
      default:
        if (*p_ == '-' || Digit(*p_)) return Number();
        return Stop(Fail());
    }
  }

  bool Word(std::string_view word) {
    for (char c : word) {
      if (p_ == end_ || *p_ != c) return Stop(Fail());
      ++p_;
    }
    return true;
  }

  // From the opening quote; the decoded string goes to *scratch_.
  bool String() {
    scratch_->clear();
    ++p_;
    for (;;) {
      if (p_ == end_ || !Plain(*p_)) return Stop(Fail());
      const char c = *p_;
      if (c == '"') {
        ++p_;
        return true;
      }
      if (c < ' ') return Stop(Fail());  // a raw tab, CR or LF
      if (c != '\\') {
        scratch_->push_back(c);
        ++p_;
        continue;
      }
      ++p_;
      if (p_ == end_) return Stop(Fail());
      switch (*p_) {
        case '"':
        case '\\':
        case '/':
          scratch_->push_back(*p_);
          break;
        case 'b':
          scratch_->push_back('\b');
          break;
        case 'f':
          scratch_->push_back('\f');
          break;
        case 'n':
          scratch_->push_back('\n');
          break;
        case 'r':
          scratch_->push_back('\r');
          break;
        case 't':
          scratch_->push_back('\t');
          break;
        case 'u':
          return Stop(kUnsure);
        default:
          return Stop(Fail());
      }
      ++p_;
    }
  }

  // -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
  bool Number() {
    const bool negative = *p_ == '-';
    if (negative) ++p_;
    if (p_ == end_ || !Digit(*p_)) return Stop(Fail());
    const char* digits = p_;
    if (*p_ == '0') {
      ++p_;
    } else {
      while (p_ != end_ && Digit(*p_)) ++p_;
    }
    const char* digits_end = p_;
    bool fraction_or_exponent = false;
    if (p_ != end_ && *p_ == '.') {
      ++p_;
      if (p_ == end_ || !Digit(*p_)) return Stop(Fail());
      while (p_ != end_ && Digit(*p_)) ++p_;
      fraction_or_exponent = true;
    }
    if (p_ != end_ && (*p_ == 'e' || *p_ == 'E')) {
      ++p_;
      if (p_ != end_ && (*p_ == '+' || *p_ == '-')) ++p_;
      if (p_ == end_ || !Digit(*p_)) return Stop(Fail());
      while (p_ != end_ && Digit(*p_)) ++p_;
      fraction_or_exponent = true;
    }
    if (fraction_or_exponent) {
      // A float: the checks keep only its kind. nlohmann refuses one that
      // strtod takes to infinity (error 406): let it say so.
      scratch_->assign(negative ? digits - 1 : digits, p_);
      const double value = std::strtod(scratch_->c_str(), nullptr);
      if (!std::isfinite(value)) return Stop(kUnsure);
      sax_->number_float(value, *scratch_);
      return true;
    }
    if (digits_end - digits > kMaxDigits) return Stop(kUnsure);
    uint64_t magnitude = 0;
    for (const char* d = digits; d != digits_end; ++d) {
      magnitude = magnitude * 10 + static_cast<uint64_t>(*d - '0');
    }
    if (negative) {
      sax_->number_integer(-static_cast<int64_t>(magnitude));
    } else {
      sax_->number_unsigned(magnitude);
    }
    return true;
  }

  const char* p_;
  const char* const end_;
  Shallow* const sax_;
  std::string* const scratch_;
  Result result_ = kInvalid;     // why the last step failed
  bool object_[kMaxDepth] = {};  // per open container: object or array
};

}  // namespace

bool Value::SameIdAs(const Value& o) const {
  if (kind == kString || o.kind == kString) {
    return kind == o.kind && s == o.s;
  }
  if (kind == kInt && o.kind == kInt) return i == o.i;
  if (kind == kUint && o.kind == kUint) return u == o.u;
  if (kind == kInt && o.kind == kUint) return i >= 0 && uint64_t(i) == o.u;
  if (kind == kUint && o.kind == kInt) return o.i >= 0 && uint64_t(o.i) == u;
  return false;
}

bool Value::operator==(const Value& o) const {
  if (kind != o.kind) return false;
  switch (kind) {
    case kBool:
      return b == o.b;
    case kInt:
      return i == o.i;
    case kUint:
      return u == o.u;
    case kString:
      return s == o.s;
    default:
      return true;
  }
}

bool Shallow::Parse(std::string_view text) {
  Clear();
  const PlainReader::Result plain = PlainReader(text, this, &scratch_).Read();
  if (plain == PlainReader::kUnsure) {
    Clear();
    valid_ = ParseWithNlohmann(text);
  } else {
    valid_ = plain == PlainReader::kValid;
  }
  if (!valid_) Clear();  // as a discarded DOM: no fields
  if (plain != PlainReader::kUnsure && CrossCheck()) {
    Shallow other;
    other.Clear();
    other.valid_ = other.ParseWithNlohmann(text);
    if (!other.valid_) other.Clear();
    FUZZ_CHECK(SameAs(other),
               "the plain reader and nlohmann differ on: " + std::string(text));
  }
  return valid_;
}

bool Shallow::ParseWithNlohmann(std::string_view text) {
  return json::sax_parse(HarnessChars{text.data()},
                         HarnessChars{text.data() + text.size()}, this);
}

bool Shallow::SameAs(const Shallow& o) const {
  if (valid_ != o.valid_ || top_ != o.top_ || !(code_ == o.code_) ||
      !(message_ == o.message_)) {
    return false;
  }
  for (int f = 0; f < kFieldCount; ++f) {
    if (!(fields_[f] == o.fields_[f])) return false;
  }
  return true;
}

bool Shallow::key(json::string_t& k) {
  static constexpr std::string_view kNames[kFieldCount] = {
      "op", "lease", "user",    "scope",  "id",
      "ok", "error", "granted", "reason", "retry_after_ms"};
  if (depth_ == 1) {
    key_ = kOther;
    for (int f = 0; f < kFieldCount; ++f) {
      if (Is(k, kNames[f])) key_ = static_cast<Field>(f);
    }
    if (key_ == kError) code_.kind = message_.kind = Value::kAbsent;
  } else if (depth_ == 2 && in_error_) {
    sub_ = Is(k, "code") ? &code_ : Is(k, "message") ? &message_ : nullptr;
  }
  return true;
}

void Shallow::Clear() {
  for (Value& v : fields_) v.kind = Value::kAbsent;
  code_.kind = message_.kind = Value::kAbsent;
  top_ = Value::kAbsent;
  depth_ = 0;
  key_ = kOther;
  in_error_ = false;
  sub_ = nullptr;
}

Value* Shallow::Slot(Value::Kind kind) {
  Value* v = nullptr;
  if (depth_ == 0) {
    top_ = kind;
  } else if (depth_ == 1 && key_ != kOther) {
    v = &fields_[key_];
    if (key_ == kError) in_error_ = false;
  } else if (depth_ == 2 && in_error_ && sub_ != nullptr) {
    v = sub_;
  }
  if (v != nullptr) v->kind = kind;
  return v;
}

bool Shallow::Open(Value::Kind kind) {
  Slot(kind);
  if (depth_ == 1 && key_ == kError) in_error_ = kind == Value::kObject;
  if (depth_ == 1) sub_ = nullptr;
  ++depth_;
  return true;
}

bool Shallow::Close() {
  --depth_;
  if (depth_ == 1) in_error_ = false;
  return true;
}

}  // namespace brake::fuzz
