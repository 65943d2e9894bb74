#include "ctl/render.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <string>
#include <vector>

#include "ctl/format.h"
#include "ctl/table.h"

namespace brake::ctl {

using nlohmann::json;

namespace {

// The member `key` of `object`, or a null json when absent.
const json& Member(const json& object, std::string_view key) {
  static const json kNull;
  if (!object.is_object()) return kNull;
  auto it = object.find(key);
  return it == object.end() ? kNull : *it;
}

std::string Upper(std::string_view s) {
  std::string out(s);
  for (char& c : out)
    c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

// "requests=57 tokens=12345 usd=1.23" with the fields in this fixed order.
std::string Amounts(const json& amounts) {
  return "requests=" + FormatField(amounts, "requests") +
         " tokens=" + FormatField(amounts, "tokens") +
         " usd=" + FormatField(amounts, "usd");
}

void WriteBreakers(const json& breakers, std::ostream& out) {
  if (!breakers.is_array() || breakers.empty()) {
    out << "no breakers open\n";
    return;
  }
  Table table({"SCOPE", "STATE", "CAUSE", "RETRY_IN"});
  for (const json& b : breakers) {
    table.AddRow({FormatField(b, "scope"), FormatField(b, "state"),
                  FormatField(b, "cause"),
                  FormatDurationField(b, "retry_in_ms")});
  }
  table.Render(out);
}

// A limit's settings other than its identity, e.g. "burst=100 per_ms=1000".
std::string LimitParams(const json& limit) {
  std::string s;
  if (!limit.is_object()) return "-";
  for (auto it = limit.begin(); it != limit.end(); ++it) {
    if (it.key() == "name" || it.key() == "resource" ||
        it.key() == "algorithm") {
      continue;
    }
    if (!s.empty()) s += ' ';
    s += it.key() + "=" + FormatValue(it.value());
  }
  return s.empty() ? "-" : s;
}

// The policy object of a policy.get reply: {"policy": {...}} or the reply's
// own "limits" and "breaker".
const json& PolicyOf(const json& reply) {
  const json& nested = Member(reply, "policy");
  return nested.is_null() ? reply : nested;
}

}  // namespace

void RenderPing(const json&, const json& reply, std::ostream& out) {
  out << "PONG (braked " << FormatField(reply, "version") << ")\n";
}

void RenderOk(const json&, const json& reply, std::ostream& out) {
  const json& duplicate = Member(reply, "duplicate");
  const bool again = duplicate.is_boolean() && duplicate.get<bool>();
  out << (again ? "OK (already settled)\n" : "OK\n");
}

void RenderDeleted(const json& request, const json& reply, std::ostream& out) {
  const json& deleted = Member(reply, "deleted");
  if (deleted.is_boolean() && !deleted.get<bool>()) {
    out << "no policy for " << FormatField(request, "scope") << '\n';
    return;
  }
  out << "OK\n";
}

void RenderAcquire(const json&, const json& reply, std::ostream& out) {
  Table table;
  const json& granted = Member(reply, "granted");
  if (granted.is_boolean() && granted.get<bool>()) {
    // Alone and first, so that `awk '/^lease /{print $2}'` finds it.
    out << "lease " << FormatField(reply, "lease") << '\n';
    table.AddRow({"waited_ms", FormatField(reply, "waited_ms")});
  } else {
    table.AddRow({"denied", FormatField(reply, "reason")});
    table.AddRow({"scope", FormatField(reply, "scope")});
    table.AddRow({"limit", FormatField(reply, "limit")});
    // As status prints durations (23h18m); --json keeps the milliseconds.
    const json& retry = Member(reply, "retry_after_ms");
    table.AddRow({"retry_after", retry.is_null()
                                     ? "never"
                                     : FormatDurationField(reply,
                                                           "retry_after_ms")});
    if (reply.contains("cause"))
      table.AddRow({"cause", FormatField(reply, "cause")});
    if (reply.contains("held"))  // a quota's: what calls in flight hold
      table.AddRow({"held", FormatField(reply, "held")});
  }
  if (reply.contains("remaining")) {
    table.AddRow({"remaining", FormatInline(Member(reply, "remaining"))});
  }
  if (reply.contains("shadow")) {
    table.AddRow({"shadow", FormatInline(Member(reply, "shadow"))});
  }
  table.Render(out);
}

void RenderCommit(const json&, const json& reply, std::ostream& out) {
  Table table;
  table.AddRow({"charged_tokens", FormatField(reply, "charged_tokens")});
  table.AddRow({"charged_usd", FormatField(reply, "charged_usd")});
  const json& duplicate = Member(reply, "duplicate");
  if (duplicate.is_boolean() && duplicate.get<bool>()) {
    table.AddRow({"duplicate", "true"});
  }
  table.Render(out);
}

void RenderStatus(const json&, const json& reply, std::ostream& out) {
  out << "scope " << FormatField(reply, "scope") << "\n\n";
  const json& limits = Member(reply, "limits");
  if (limits.is_array() && !limits.empty()) {
    Table table({"SCOPE", "NAME", "RESOURCE", "ALGORITHM", "LIMIT", "USED",
                 "HELD", "REMAINING", "RESETS_IN"});
    for (const json& l : limits) {
      std::string name = FormatField(l, "name");
      const json& shadow = Member(l, "shadow");
      if (shadow.is_boolean() && shadow.get<bool>()) name += "(shadow)";
      table.AddRow({FormatField(l, "scope"), name, FormatField(l, "resource"),
                    FormatField(l, "algorithm"), FormatField(l, "limit"),
                    FormatField(l, "used"), FormatField(l, "held"),
                    FormatField(l, "remaining"),
                    FormatDurationField(l, "resets_in_ms")});
    }
    table.Render(out);
  } else {
    out << "no limits apply\n";
  }
  out << '\n';
  Table amounts;
  amounts.AddRow({"spend", Amounts(Member(reply, "spend"))});
  amounts.AddRow({"reserved", Amounts(Member(reply, "reserved"))});
  amounts.Render(out);
  out << '\n';
  WriteBreakers(Member(reply, "breakers"), out);
}

void RenderPolicyGet(const json& request, const json& reply,
                     std::ostream& out) {
  std::string scope = FormatField(reply, "scope");
  if (scope == "-") scope = FormatField(request, "scope");
  const json& policy = PolicyOf(reply);
  const json& limits = Member(policy, "limits");
  const json& breaker = Member(policy, "breaker");
  if (!policy.is_object() || (limits.is_null() && breaker.is_null())) {
    out << "no policy for " << scope << '\n';
    return;
  }
  out << "scope " << scope << "\n\n";
  if (limits.is_array() && !limits.empty()) {
    Table table({"NAME", "RESOURCE", "ALGORITHM", "SETTINGS"});
    for (const json& l : limits) {
      table.AddRow({FormatField(l, "name"), FormatField(l, "resource"),
                    FormatField(l, "algorithm"), LimitParams(l)});
    }
    table.Render(out);
  } else {
    out << "no limits\n";
  }
  out << '\n';
  if (!breaker.is_object() || breaker.empty()) {
    out << "no breaker\n";
    return;
  }
  // One row per rule ("loop", "slow", ...), then the open/close settings.
  Table table({"BREAKER", "SETTINGS"});
  json general = json::object();
  for (auto it = breaker.begin(); it != breaker.end(); ++it) {
    if (it->is_object()) {
      table.AddRow({it.key(), FormatInline(it.value())});
    } else {
      general[it.key()] = it.value();
    }
  }
  if (!general.empty()) table.AddRow({"state", FormatInline(general)});
  table.Render(out);
}

void RenderPolicyList(const json&, const json& reply, std::ostream& out) {
  const json& policies = Member(reply, "policies");
  Table table({"SCOPE", "LIMITS", "BREAKER"});
  auto add = [&](const std::string& scope, const json& policy) {
    std::string names;
    const json& limits = Member(policy, "limits");
    if (limits.is_array()) {
      for (const json& l : limits) {
        if (!names.empty()) names += ',';
        names += FormatField(l, "name");
      }
    }
    const json& breaker = Member(policy, "breaker");
    bool has_breaker = breaker.is_object() && !breaker.empty();
    table.AddRow(
        {scope, names.empty() ? "-" : names, has_breaker ? "yes" : "no"});
  };
  // Either {"scope": policy, ...} as in the config file, or a list of
  // policies that name their scope.
  if (policies.is_object()) {
    for (auto it = policies.begin(); it != policies.end(); ++it) {
      add(it.key(), it.value());
    }
  } else if (policies.is_array()) {
    for (const json& p : policies) add(FormatField(p, "scope"), p);
  }
  if (table.empty()) {
    out << "no policies\n";
    return;
  }
  table.Render(out);
}

void RenderBreakers(const json&, const json& reply, std::ostream& out) {
  WriteBreakers(Member(reply, "breakers"), out);
}

void RenderUsage(const json& request, const json& reply, std::ostream& out) {
  const json& rows = Member(reply, "rows");
  if (!rows.is_array() || rows.empty()) {
    out << "no usage\n";
    return;
  }
  const json& by = Member(request, "by");
  const char* kColumns[] = {"calls",        "requests",      "tokens",
                            "input_tokens", "output_tokens", "usd",
                            "expired",      "estimated"};
  std::vector<std::string> headers = {
      by.is_string() ? Upper(by.get<std::string>()) : "TASK"};
  for (const char* c : kColumns) headers.push_back(Upper(c));
  Table table(headers);
  std::vector<double> totals(std::size(kColumns), 0);
  std::vector<bool> fractional(std::size(kColumns), false);
  for (const json& row : rows) {
    std::vector<std::string> cells = {FormatField(row, "key")};
    for (size_t i = 0; i < std::size(kColumns); ++i) {
      const json& v = Member(row, kColumns[i]);
      if (v.is_number()) {
        totals[i] += v.get<double>();
        if (v.is_number_float()) fractional[i] = true;
      }
      cells.push_back(FormatValue(v));
    }
    table.AddRow(cells);
  }
  if (rows.size() > 1) {
    std::vector<std::string> cells = {"total"};
    for (size_t i = 0; i < totals.size(); ++i) {
      // Sums of integers stay integers, clamped far from int64 overflow.
      double total = std::min(totals[i], 9e18);
      cells.push_back(fractional[i] ? FormatDecimal(total)
                                    : std::to_string(std::llround(total)));
    }
    table.AddRow(cells);
  }
  table.Render(out);
}

void RenderMetrics(const json&, const json& reply, std::ostream& out) {
  const json& text = Member(reply, "text");
  if (!text.is_string()) return;
  const std::string& s = text.get_ref<const std::string&>();
  out << s;
  if (!s.empty() && s.back() != '\n') out << '\n';
}

void RenderTopRows(const json& request, const json& reply, std::ostream& out) {
  const json& rows = Member(reply, "rows");
  if (!rows.is_array() || rows.empty()) {
    out << "no acquires yet\n";
    return;
  }
  const json& by = Member(request, "by");
  const char* kColumns[] = {"grants", "denials", "tokens",
                            "usd",    "waiters", "uncounted_max"};
  std::vector<std::string> headers = {
      by.is_string() ? Upper(by.get<std::string>()) : "USER"};
  for (const char* c : kColumns) headers.push_back(Upper(c));
  Table table(headers);
  for (const json& row : rows) {
    std::vector<std::string> cells = {FormatField(row, "subject")};
    for (const char* c : kColumns) cells.push_back(FormatField(row, c));
    table.AddRow(cells);
  }
  table.Render(out);
}

}  // namespace brake::ctl
