#include "bench/reply_scan.h"

namespace brake::bench {
namespace {

bool IsBlank(char c) { return c == ' ' || c == '\t' || c == '\r'; }

bool StartsWith(std::string_view s, size_t pos, std::string_view prefix) {
  return pos != std::string_view::npos && s.size() - pos >= prefix.size() &&
         s.compare(pos, prefix.size(), prefix) == 0;
}

// The content of the JSON string starting at `pos` (which must be a quote),
// escapes left as they are, or empty when `pos` is not a string.
std::string_view StringAt(std::string_view s, size_t pos) {
  if (pos == std::string_view::npos || pos >= s.size() || s[pos] != '"') {
    return {};
  }
  for (size_t i = pos + 1; i < s.size(); ++i) {
    if (s[i] == '\\') {
      ++i;  // Skips the escaped character, so \" does not end the string.
    } else if (s[i] == '"') {
      return s.substr(pos + 1, i - pos - 1);
    }
  }
  return {};
}

}  // namespace

size_t FindValue(std::string_view line, std::string_view key) {
  size_t from = 0;
  while (true) {
    const size_t q = line.find(key, from);
    if (q == std::string_view::npos) return q;
    from = q + 1;
    if (q == 0 || line[q - 1] != '"') continue;
    size_t p = q + key.size();
    if (p >= line.size() || line[p] != '"') continue;
    ++p;
    while (p < line.size() && IsBlank(line[p])) ++p;
    if (p >= line.size() || line[p] != ':') continue;
    ++p;
    while (p < line.size() && IsBlank(line[p])) ++p;
    return p;
  }
}

ScannedReply ScanReply(std::string_view line) {
  ScannedReply r;
  size_t p = FindValue(line, "id");
  if (p != std::string_view::npos && p < line.size()) {
    if (line[p] == '"') ++p;
    uint64_t id = 0;
    size_t digits = 0;
    while (p < line.size() && line[p] >= '0' && line[p] <= '9' && digits < 19) {
      id = id * 10 + static_cast<uint64_t>(line[p] - '0');
      ++p;
      ++digits;
    }
    if (digits > 0) {
      r.has_id = true;
      r.id = id;
    }
  }

  p = FindValue(line, "ok");
  if (StartsWith(line, p, "false")) {
    r.kind = ReplyKind::kError;
    r.reason = StringAt(line, FindValue(line, "code"));
    return r;
  }
  if (!StartsWith(line, p, "true")) return r;  // kOther

  p = FindValue(line, "granted");
  if (StartsWith(line, p, "true")) {
    r.kind = ReplyKind::kGranted;
    r.lease = StringAt(line, FindValue(line, "lease"));
  } else if (StartsWith(line, p, "false")) {
    r.kind = ReplyKind::kDenied;
    r.reason = StringAt(line, FindValue(line, "reason"));
  } else {
    r.kind = ReplyKind::kOk;
  }
  return r;
}

}  // namespace brake::bench
