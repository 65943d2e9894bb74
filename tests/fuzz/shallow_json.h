// Shallow: the few top-level fields of a JSON line that request_fuzz's
// checks read.
//
// Parse() decides whether a line is JSON exactly as nlohmann::json::parse
// (the dispatcher's parser) decides it, and keeps the top-level "op",
// "lease", "user", "scope", "id", "ok", "error" (with its "code" and
// "message"), "granted", "reason" and "retry_after_ms", without building a
// DOM. Like json::parse, the last of duplicate keys wins.
//
// Two readers feed the same handler (the SAX interface below):
//   - a plain reader for lines made only of printable ASCII and JSON
//     whitespace with no \u escape: nearly every reply and most requests.
//     Over that alphabet nlohmann accepts exactly RFC 8259's grammar, so the
//     plain reader decides alone, valid or not, without allocating. It stops
//     ("unsure") at the first byte outside the alphabet, at a \u escape, at
//     an integer of more than 18 digits, at a float that strtod takes to
//     infinity and below 64 levels of nesting;
//   - nlohmann's SAX parser (json::sax_parse) for those lines: it alone knows
//     its UTF-8 checks, surrogate pairs, number overflow, a leading BOM and
//     its reading of a NUL byte as the end of the text.
// With BRAKE_FUZZ_CROSSCHECK set in the environment, every line the plain
// reader decides is parsed by nlohmann too, and any difference in the verdict
// or a field aborts (the corpus replay in ctest runs this way).
//
// Test code, one thread. A Shallow keeps its buffers from line to line.
#pragma once

#include <cstddef>
#include <cstdint>
#include <iterator>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace brake::fuzz {

using nlohmann::json;

// One top-level value of a JSON object as the checks need it: its type,
// and its value when it is a string, a bool or an integer.
struct Value {
  enum Kind : uint8_t {
    kAbsent,
    kNull,
    kBool,
    kInt,
    kUint,
    kFloat,
    kString,
    kObject,
    kArray
  };
  Kind kind = kAbsent;
  bool b = false;
  int64_t i = 0;   // kInt (the parser's negative integers)
  uint64_t u = 0;  // kUint (its non-negative ones)
  std::string s;   // kString

  bool present() const { return kind != kAbsent; }
  bool is_string() const { return kind == kString; }
  bool is_integer() const { return kind == kInt || kind == kUint; }
  // The string, "" when absent or not a string.
  const std::string& str() const {
    static const std::string empty;
    return kind == kString ? s : empty;
  }
  // Same type and value; for the types an id may have (string, integer).
  bool SameIdAs(const Value& o) const;
  // is_number_integer() && get<int64_t>() >= 0, as with a DOM.
  bool IsNonNegativeInt64() const {
    return (kind == kInt && i >= 0) ||
           (kind == kUint && u <= uint64_t{INT64_MAX});
  }
  // Same kind, and the same value for the kinds that carry one.
  bool operator==(const Value& o) const;
};

// A character iterator of the harness's own, for json::sax_parse: the parser
// that nlohmann instantiates for it is used by the checks alone, never by
// the code under test, so harness.ignorelist can leave it without coverage
// instrumentation.
struct HarnessChars {
  using iterator_category = std::forward_iterator_tag;
  using value_type = char;
  using difference_type = std::ptrdiff_t;
  using pointer = const char*;
  using reference = const char&;

  const char* p = nullptr;

  reference operator*() const { return *p; }
  HarnessChars& operator++() {
    ++p;
    return *this;
  }
  HarnessChars operator++(int) {
    HarnessChars before = *this;
    ++p;
    return before;
  }
  bool operator==(const HarnessChars&) const = default;
};

class Shallow {
 public:
  enum Field {
    kOp,
    kLease,
    kUser,
    kScope,
    kId,  // requests
    kOk,
    kError,
    kGranted,
    kReason,
    kRetryAfterMs,  // replies
    kFieldCount,
    kOther = kFieldCount,
  };

  // False when `text` is not JSON (and then no field is present).
  bool Parse(std::string_view text);
  bool is_object() const { return valid_ && top_ == Value::kObject; }
  const Value& operator[](Field f) const { return fields_[f]; }
  const Value& error_code() const { return code_; }
  const Value& error_message() const { return message_; }

  // SAX interface (json::sax_parse's, also driven by the plain reader).
  bool null() { return Scalar(Value::kNull); }
  bool boolean(bool b) {
    if (Value* v = Slot(Value::kBool)) v->b = b;
    return true;
  }
  bool number_integer(json::number_integer_t i) {
    if (Value* v = Slot(Value::kInt)) v->i = i;
    return true;
  }
  bool number_unsigned(json::number_unsigned_t u) {
    if (Value* v = Slot(Value::kUint)) v->u = u;
    return true;
  }
  bool number_float(json::number_float_t, const json::string_t&) {
    return Scalar(Value::kFloat);
  }
  bool string(json::string_t& s) {
    if (Value* v = Slot(Value::kString)) v->s = s;
    return true;
  }
  bool binary(json::binary_t&) { return Scalar(Value::kNull); }  // not JSON
  bool start_object(std::size_t) { return Open(Value::kObject); }
  bool start_array(std::size_t) { return Open(Value::kArray); }
  bool end_object() { return Close(); }
  bool end_array() { return Close(); }
  bool key(json::string_t& k);
  bool parse_error(std::size_t, const std::string&, const json::exception&) {
    return false;
  }

 private:
  void Clear();
  // json::sax_parse over `text`, from a cleared state.
  bool ParseWithNlohmann(std::string_view text);
  // Same verdict and fields as `o`.
  bool SameAs(const Shallow& o) const;
  // Where a value of `kind` that starts now goes (its type set), or nullptr
  // when the checks do not read it.
  Value* Slot(Value::Kind kind);
  bool Scalar(Value::Kind kind) {
    Slot(kind);
    return true;
  }
  bool Open(Value::Kind kind);
  bool Close();

  Value fields_[kFieldCount];
  Value code_, message_;  // of the top-level "error" object
  Value::Kind top_ = Value::kAbsent;
  bool valid_ = false;
  int depth_ = 0;
  Field key_ = kOther;     // at depth 1
  bool in_error_ = false;  // inside the top-level "error" object
  Value* sub_ = nullptr;   // the error field being read, at depth 2
  std::string scratch_;    // the plain reader's string being read
};

}  // namespace brake::fuzz
