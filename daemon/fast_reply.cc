#include "daemon/fast_reply.h"

#include <array>
#include <cmath>
#include <cstring>
#include <nlohmann/json.hpp>

#include "common/decimal.h"
#include "common/json_plain.h"
#include "daemon/json_fields.h"

namespace brake {
namespace {

constexpr size_t kIntRoom = 20;     // "-9223372036854775808"
constexpr size_t kDoubleRoom = 64;  // nlohmann's to_chars needs at most 64

// Room a string may take once escaped ("\u00XX" for a byte) and quoted.
size_t StringRoom(std::string_view s) { return 6 * s.size() + 2; }

// A reply written through a cursor: room for `most` bytes is made once,
// and Done() trims `out` to what was written (Undo() to what it was). Each
// piece is a store or a small copy, where appending them one by one was a
// call into std::string and a capacity check each.
class JsonOut {
 public:
  JsonOut(std::string* out, size_t most) : out_(out), mark_(out->size()) {
    out->resize(mark_ + most);
    p_ = out->data() + mark_;
  }
  template <size_t N>
  void Lit(const char (&literal)[N]) {
    std::memcpy(p_, literal, N - 1);
    p_ += N - 1;
  }
  void Char(char c) { *p_++ = c; }
  // Replaces the last byte written (the ',' after the last member).
  void SetLast(char c) { p_[-1] = c; }
  void Int(int64_t v) { p_ = WriteDecimal(p_, v); }
  // As dump() writes it ("0.0123", "5.0", "1e-05"; null when not finite).
  void Double(double v) {
    if (!std::isfinite(v)) {
      Lit("null");
      return;
    }
    p_ = nlohmann::detail::to_chars(p_, p_ + kDoubleRoom, v);
  }
  // Quoted and escaped as dump() does (ensure_ascii off); false on
  // malformed UTF-8.
  bool Str(std::string_view s);
  void Done() { out_->resize(static_cast<size_t>(p_ - out_->data())); }
  void Undo() { out_->resize(mark_); }

 private:
  std::string* out_;
  size_t mark_;
  char* p_;
};

bool JsonOut::Str(std::string_view s) {
  static constexpr char kHex[] = "0123456789abcdef";
  *p_++ = '"';
  if (IsPlainJsonText(s)) {  // the common case: copied whole
    std::memcpy(p_, s.data(), s.size());
    p_ += s.size();
    *p_++ = '"';
    return true;
  }
  bool high = false;
  for (unsigned char c : s) {
    if (c >= 0x20 && c != '"' && c != '\\') {
      high |= c >= 0x80;
      *p_++ = static_cast<char>(c);
      continue;
    }
    *p_++ = '\\';
    switch (c) {
      case '"': *p_++ = '"'; break;
      case '\\': *p_++ = '\\'; break;
      case '\b': *p_++ = 'b'; break;
      case '\f': *p_++ = 'f'; break;
      case '\n': *p_++ = 'n'; break;
      case '\r': *p_++ = 'r'; break;
      case '\t': *p_++ = 't'; break;
      default:
        Lit("u00");
        *p_++ = kHex[c >> 4];
        *p_++ = kHex[c & 0xf];
    }
  }
  *p_++ = '"';
  return !high || IsValidUtf8(s);
}

size_t IdRoom(const FastValue* id) {
  if (id == nullptr) return 0;
  return 6 + (id->kind == FastValue::Kind::kInt ? kIntRoom
                                                : StringRoom(id->text));
}

// "id":VALUE, when there is one. A string id was checked to be valid UTF-8
// by the scanner, but say so anyway.
bool WriteId(const FastValue* id, JsonOut& out) {
  if (id == nullptr) return true;
  out.Lit("\"id\":");
  if (id->kind == FastValue::Kind::kInt) {
    out.Int(id->number);
  } else if (!out.Str(id->text)) {
    return false;
  }
  out.Char(',');
  return true;
}

// retry_after in us -> ms rounded up, or null (replies.cc's RetryAfterMs).
void WriteRetryAfter(int64_t retry_after_us, JsonOut& out) {
  if (retry_after_us == kNever) {
    out.Lit("null");
  } else {
    out.Int((retry_after_us + 999) / 1000);
  }
}

// "capacity":{...} or "remaining":{...}, with a member for each resource
// some limit counts, then a ','; nothing when none does (replies.cc's).
void WriteAmounts(const Remaining& r, bool capacity, JsonOut& out) {
  if (!r.requests && !r.tokens && !r.usd_nano) return;
  if (capacity) {
    out.Lit("\"capacity\":{");
  } else {
    out.Lit("\"remaining\":{");
  }
  bool first = true;
  auto sep = [&] {
    if (!first) out.Char(',');
    first = false;
  };
  if (r.requests) {
    sep();
    out.Lit("\"requests\":");
    out.Int(capacity ? r.requests_capacity : *r.requests);
  }
  if (r.tokens) {
    sep();
    out.Lit("\"tokens\":");
    out.Int(capacity ? r.tokens_capacity : *r.tokens);
  }
  if (r.usd_nano) {
    sep();
    out.Lit("\"usd\":");
    out.Double(NanoToUsd(capacity ? r.usd_capacity_nano : *r.usd_nano));
  }
  out.Lit("},");
}

bool WriteGranted(const FastValue* id, const AcquireOutcome& o,
                  JsonOut& out) {
  out.Char('{');
  WriteAmounts(o.remaining, /*capacity=*/true, out);
  out.Lit("\"granted\":true,");
  if (!WriteId(id, out)) return false;
  out.Lit("\"lease\":");
  if (!out.Str(o.lease)) return false;
  out.Lit(",\"ok\":true,");
  WriteAmounts(o.remaining, /*capacity=*/false, out);
  return true;
}

bool WriteDenied(const FastValue* id, const AcquireOutcome& o, JsonOut& out) {
  const Denial& d = o.denial;
  out.Char('{');
  WriteAmounts(o.remaining, /*capacity=*/true, out);
  if (!d.cause.empty()) {
    out.Lit("\"cause\":");
    if (!out.Str(d.cause)) return false;
    out.Char(',');
  }
  out.Lit("\"granted\":false,");
  if (d.held >= 0) {
    out.Lit("\"held\":");
    if (d.resource == Resource::kUsd) {
      out.Double(NanoToUsd(d.held));
    } else {
      out.Int(d.held);
    }
    out.Char(',');
  }
  if (!WriteId(id, out)) return false;
  out.Lit("\"limit\":");
  if (!out.Str(d.limit)) return false;
  out.Lit(",\"ok\":true,\"reason\":");
  if (!out.Str(ReasonName(d.reason))) return false;
  out.Char(',');
  WriteAmounts(o.remaining, /*capacity=*/false, out);
  out.Lit("\"retry_after_ms\":");
  WriteRetryAfter(d.retry_after_us, out);
  out.Lit(",\"scope\":");
  if (!out.Str(d.scope)) return false;
  out.Char(',');
  return true;
}

}  // namespace

bool AppendJsonString(std::string_view s, std::string* out) {
  JsonOut w(out, StringRoom(s));
  if (!w.Str(s)) {
    w.Undo();
    return false;
  }
  w.Done();
  return true;
}

void AppendJsonInt(int64_t v, std::string* out) {
  JsonOut w(out, kIntRoom);
  w.Int(v);
  w.Done();
}

void AppendJsonDouble(double v, std::string* out) {
  JsonOut w(out, kDoubleRoom);
  w.Double(v);
  w.Done();
}

bool AppendAcquireLine(const FastValue* id, const AcquireOutcome& o,
                       std::string* out) {
  // The members' names and punctuation take under 256 bytes; then the
  // id, the strings and three numbers at most.
  size_t most = 256 + IdRoom(id) + 3 * kDoubleRoom;
  if (o.granted) {
    most += 64 + 4 * kIntRoom + 2 * kDoubleRoom;  // remaining and capacity
    most += StringRoom(o.lease);
  } else {
    const Denial& d = o.denial;
    most += 64 + 2 * kDoubleRoom;  // remaining and capacity: one member each
    most += StringRoom(d.cause) + StringRoom(d.limit) +
            StringRoom(ReasonName(d.reason)) + StringRoom(d.scope) +
            kDoubleRoom;  // held
  }
  for (const std::string& s : o.shadow) most += StringRoom(s) + 1;
  JsonOut w(out, most);
  bool ok = o.granted ? WriteGranted(id, o, w) : WriteDenied(id, o, w);
  if (ok && !o.shadow.empty()) {
    w.Lit("\"shadow\":[");
    for (size_t i = 0; ok && i < o.shadow.size(); ++i) {
      if (i > 0) w.Char(',');
      ok = w.Str(o.shadow[i]);
    }
    w.Lit("],");
  }
  if (!ok) {
    w.Undo();
    return false;
  }
  if (o.granted) {
    w.Lit("\"waited_ms\":0}\n");
  } else {
    w.SetLast('}');  // the ',' after the last member
    w.Char('\n');
  }
  w.Done();
  return true;
}

bool AppendCommitLine(const FastValue* id, const Settlement& s,
                      std::string* out) {
  JsonOut w(out, 128 + IdRoom(id) + kIntRoom + kDoubleRoom);
  w.Lit("{\"charged_tokens\":");
  w.Int(s.charged_tokens);
  w.Lit(",\"charged_usd\":");
  w.Double(NanoToUsd(s.charged_usd_nano));
  w.Char(',');
  if (s.duplicate) w.Lit("\"duplicate\":true,");
  if (!WriteId(id, w)) {
    w.Undo();
    return false;
  }
  w.Lit("\"ok\":true}\n");
  w.Done();
  return true;
}

bool AppendCancelLine(const FastValue* id, bool duplicate, std::string* out) {
  JsonOut w(out, 64 + IdRoom(id));
  w.Char('{');
  if (duplicate) w.Lit("\"duplicate\":true,");
  if (!WriteId(id, w)) {
    w.Undo();
    return false;
  }
  w.Lit("\"ok\":true}\n");
  w.Done();
  return true;
}

}  // namespace brake
