#include "daemon/fast_reply.h"

#include <array>
#include <charconv>
#include <cmath>
#include <cstring>
#include <nlohmann/json.hpp>

#include "common/json_plain.h"
#include "daemon/json_fields.h"

namespace brake {
namespace {

// Appends `literal` without strlen at run time.
template <size_t N>
void Lit(std::string* out, const char (&literal)[N]) {
  out->append(literal, N - 1);
}

// "id":VALUE, when there is one. A string id was checked to be valid UTF-8
// by the scanner, but say so anyway.
bool AppendId(const FastValue* id, std::string* out) {
  if (id == nullptr) return true;
  Lit(out, "\"id\":");
  if (id->kind == FastValue::Kind::kInt) {
    AppendJsonInt(id->number, out);
  } else if (!AppendJsonString(id->text, out)) {
    return false;
  }
  out->push_back(',');
  return true;
}

// retry_after in us -> ms rounded up, or null (replies.cc's RetryAfterMs).
void AppendRetryAfter(int64_t retry_after_us, std::string* out) {
  if (retry_after_us == kNever) {
    Lit(out, "null");
  } else {
    AppendJsonInt((retry_after_us + 999) / 1000, out);
  }
}

bool AppendGranted(const FastValue* id, const AcquireOutcome& o,
                   std::string* out) {
  Lit(out, "{\"granted\":true,");
  if (!AppendId(id, out)) return false;
  Lit(out, "\"lease\":");
  if (!AppendJsonString(o.lease, out)) return false;
  Lit(out, ",\"ok\":true,");
  const Remaining& r = o.remaining;
  if (r.requests || r.tokens || r.usd_nano) {
    Lit(out, "\"remaining\":{");
    bool first = true;
    auto sep = [&] {
      if (!first) out->push_back(',');
      first = false;
    };
    if (r.requests) {
      sep();
      Lit(out, "\"requests\":");
      AppendJsonInt(*r.requests, out);
    }
    if (r.tokens) {
      sep();
      Lit(out, "\"tokens\":");
      AppendJsonInt(*r.tokens, out);
    }
    if (r.usd_nano) {
      sep();
      Lit(out, "\"usd\":");
      AppendJsonDouble(NanoToUsd(*r.usd_nano), out);
    }
    Lit(out, "},");
  }
  return true;
}

bool AppendDenied(const FastValue* id, const AcquireOutcome& o,
                  std::string* out) {
  const Denial& d = o.denial;
  out->push_back('{');
  if (!d.cause.empty()) {
    Lit(out, "\"cause\":");
    if (!AppendJsonString(d.cause, out)) return false;
    out->push_back(',');
  }
  Lit(out, "\"granted\":false,");
  if (!AppendId(id, out)) return false;
  Lit(out, "\"limit\":");
  if (!AppendJsonString(d.limit, out)) return false;
  Lit(out, ",\"ok\":true,\"reason\":");
  if (!AppendJsonString(ReasonName(d.reason), out)) return false;
  Lit(out, ",\"retry_after_ms\":");
  AppendRetryAfter(d.retry_after_us, out);
  Lit(out, ",\"scope\":");
  if (!AppendJsonString(d.scope, out)) return false;
  out->push_back(',');
  return true;
}

}  // namespace

bool AppendJsonString(std::string_view s, std::string* out) {
  static constexpr char kHex[] = "0123456789abcdef";
  if (IsPlainJsonText(s)) {  // the common case: copied whole
    const size_t at = out->size();
    out->resize(at + s.size() + 2);
    char* p = out->data() + at;
    *p = '"';
    std::memcpy(p + 1, s.data(), s.size());
    p[s.size() + 1] = '"';
    return true;
  }
  out->push_back('"');
  size_t run = 0;  // start of the bytes not yet copied
  bool high = false;
  for (size_t i = 0; i < s.size(); ++i) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    if (c >= 0x20 && c != '"' && c != '\\') {
      high |= c >= 0x80;
      continue;
    }
    out->append(s.data() + run, i - run);
    run = i + 1;
    out->push_back('\\');
    switch (c) {
      case '"':
        out->push_back('"');
        break;
      case '\\':
        out->push_back('\\');
        break;
      case '\b':
        out->push_back('b');
        break;
      case '\f':
        out->push_back('f');
        break;
      case '\n':
        out->push_back('n');
        break;
      case '\r':
        out->push_back('r');
        break;
      case '\t':
        out->push_back('t');
        break;
      default:
        Lit(out, "u00");
        out->push_back(kHex[c >> 4]);
        out->push_back(kHex[c & 0xf]);
    }
  }
  out->append(s.data() + run, s.size() - run);
  out->push_back('"');
  return !high || IsValidUtf8(s);
}

void AppendJsonInt(int64_t v, std::string* out) {
  char buf[24];
  auto r = std::to_chars(buf, buf + sizeof(buf), v);
  out->append(buf, static_cast<size_t>(r.ptr - buf));
}

void AppendJsonDouble(double v, std::string* out) {
  if (!std::isfinite(v)) {
    Lit(out, "null");
    return;
  }
  std::array<char, 64> buf;
  char* end =
      nlohmann::detail::to_chars(buf.data(), buf.data() + buf.size(), v);
  out->append(buf.data(), static_cast<size_t>(end - buf.data()));
}

bool AppendAcquireLine(const FastValue* id, const AcquireOutcome& o,
                       std::string* out) {
  const size_t mark = out->size();
  bool ok = o.granted ? AppendGranted(id, o, out) : AppendDenied(id, o, out);
  if (ok && !o.shadow.empty()) {
    Lit(out, "\"shadow\":[");
    for (size_t i = 0; ok && i < o.shadow.size(); ++i) {
      if (i > 0) out->push_back(',');
      ok = AppendJsonString(o.shadow[i], out);
    }
    Lit(out, "],");
  }
  if (!ok) {
    out->resize(mark);
    return false;
  }
  if (o.granted) {
    Lit(out, "\"waited_ms\":0}\n");
  } else {
    out->back() = '}';  // the ',' after the last member
    out->push_back('\n');
  }
  return true;
}

bool AppendCommitLine(const FastValue* id, const Settlement& s,
                      std::string* out) {
  const size_t mark = out->size();
  Lit(out, "{\"charged_tokens\":");
  AppendJsonInt(s.charged_tokens, out);
  Lit(out, ",\"charged_usd\":");
  AppendJsonDouble(NanoToUsd(s.charged_usd_nano), out);
  out->push_back(',');
  if (s.duplicate) Lit(out, "\"duplicate\":true,");
  if (!AppendId(id, out)) {
    out->resize(mark);
    return false;
  }
  Lit(out, "\"ok\":true}\n");
  return true;
}

bool AppendCancelLine(const FastValue* id, bool duplicate, std::string* out) {
  const size_t mark = out->size();
  out->push_back('{');
  if (duplicate) Lit(out, "\"duplicate\":true,");
  if (!AppendId(id, out)) {
    out->resize(mark);
    return false;
  }
  Lit(out, "\"ok\":true}\n");
  return true;
}

}  // namespace brake
