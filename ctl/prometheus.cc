#include "ctl/prometheus.h"

#include <cmath>
#include <cstdlib>
#include <limits>

namespace brake::ctl {

namespace {

bool IsNameStart(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
         c == ':';
}
bool IsNameChar(char c) { return IsNameStart(c) || (c >= '0' && c <= '9'); }

// Reads a metric or label name at `*pos`; empty when there is none.
std::string_view TakeName(std::string_view line, size_t* pos) {
  size_t start = *pos;
  if (start >= line.size() || !IsNameStart(line[start])) return {};
  size_t end = start + 1;
  while (end < line.size() && IsNameChar(line[end])) ++end;
  *pos = end;
  return line.substr(start, end - start);
}

void SkipBlanks(std::string_view line, size_t* pos) {
  while (*pos < line.size() && (line[*pos] == ' ' || line[*pos] == '\t')) {
    ++*pos;
  }
}

// Reads `{k="v",...}` at `*pos` (just past the `{`) into `labels`.
bool TakeLabels(std::string_view line, size_t* pos, MetricLabels* labels) {
  for (;;) {
    SkipBlanks(line, pos);
    if (*pos < line.size() && line[*pos] == '}') {
      ++*pos;
      return true;
    }
    std::string_view key = TakeName(line, pos);
    if (key.empty()) return false;
    SkipBlanks(line, pos);
    if (*pos >= line.size() || line[*pos] != '=') return false;
    ++*pos;
    SkipBlanks(line, pos);
    if (*pos >= line.size() || line[*pos] != '"') return false;
    ++*pos;
    std::string value;
    for (;;) {
      if (*pos >= line.size()) return false;
      char c = line[(*pos)++];
      if (c == '"') break;
      if (c == '\\') {
        if (*pos >= line.size()) return false;
        char e = line[(*pos)++];
        if (e == 'n') {
          value += '\n';
        } else if (e == '\\' || e == '"') {
          value += e;
        } else {
          return false;
        }
      } else {
        value += c;
      }
    }
    labels->emplace_back(std::string(key), std::move(value));
    SkipBlanks(line, pos);
    if (*pos < line.size() && line[*pos] == ',') {
      ++*pos;  // a trailing comma before `}` is allowed
    } else if (*pos >= line.size() || line[*pos] != '}') {
      return false;
    }
  }
}

std::optional<double> ParseValue(std::string_view text) {
  if (text == "NaN") return std::numeric_limits<double>::quiet_NaN();
  if (text == "+Inf" || text == "Inf") {
    return std::numeric_limits<double>::infinity();
  }
  if (text == "-Inf") return -std::numeric_limits<double>::infinity();
  if (text.empty()) return std::nullopt;
  std::string s(text);
  char* end = nullptr;
  double v = std::strtod(s.c_str(), &end);
  if (end != s.c_str() + s.size() || std::isnan(v) || std::isinf(v)) {
    return std::nullopt;  // "nan" or "inf" spelt otherwise, or junk
  }
  return v;
}

bool Matches(const MetricSample& sample, std::string_view name,
             const MetricLabels& match) {
  if (sample.name != name) return false;
  for (const auto& [key, value] : match) {
    const std::string* have = FindLabel(sample.labels, key);
    if (have == nullptr || *have != value) return false;
  }
  return true;
}

}  // namespace

const std::string* FindLabel(const MetricLabels& labels,
                             std::string_view label) {
  for (const auto& [key, value] : labels) {
    if (key == label) return &value;
  }
  return nullptr;
}

Result<MetricSet> MetricSet::Parse(std::string_view text) {
  MetricSet set;
  size_t line_no = 0;
  while (!text.empty()) {
    size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text =
        nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    size_t pos = 0;
    SkipBlanks(line, &pos);
    if (pos == line.size() || line[pos] == '#') continue;
    auto bad = [&](const char* what) {
      return Status::BadRequest("metrics: line " + std::to_string(line_no) +
                                ": " + what);
    };
    MetricSample sample;
    std::string_view name = TakeName(line, &pos);
    if (name.empty()) return bad("expected a metric name");
    sample.name = std::string(name);
    if (pos < line.size() && line[pos] == '{') {
      ++pos;
      if (!TakeLabels(line, &pos, &sample.labels)) {
        return bad("malformed labels");
      }
    }
    size_t before = pos;
    SkipBlanks(line, &pos);
    if (pos == before) return bad("expected a space before the value");
    size_t end = line.find_first_of(" \t", pos);
    std::optional<double> value = ParseValue(
        line.substr(pos, end == std::string_view::npos ? std::string_view::npos
                                                       : end - pos));
    if (!value) return bad("malformed value");
    sample.value = *value;
    if (end != std::string_view::npos) {
      pos = end;
      SkipBlanks(line, &pos);
      std::string_view stamp = line.substr(pos);
      if (!stamp.empty()) {
        size_t i = stamp[0] == '-' ? 1 : 0;
        if (i == stamp.size()) return bad("malformed timestamp");
        for (; i < stamp.size(); ++i) {
          if (stamp[i] < '0' || stamp[i] > '9') {
            return bad("malformed timestamp");
          }
        }
      }
    }
    set.samples_.push_back(std::move(sample));
  }
  return set;
}

std::optional<double> MetricSet::Sum(std::string_view name,
                                     const MetricLabels& match) const {
  std::optional<double> sum;
  for (const MetricSample& s : samples_) {
    if (Matches(s, name, match)) sum = sum.value_or(0) + s.value;
  }
  return sum;
}

std::vector<std::string> MetricSet::LabelValues(
    std::string_view name, std::string_view label,
    const MetricLabels& match) const {
  std::vector<std::string> values;
  for (const MetricSample& s : samples_) {
    if (!Matches(s, name, match)) continue;
    const std::string* v = FindLabel(s.labels, label);
    if (v == nullptr) continue;
    bool seen = false;
    for (const std::string& have : values) seen = seen || have == *v;
    if (!seen) values.push_back(*v);
  }
  return values;
}

}  // namespace brake::ctl
