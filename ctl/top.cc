#include "ctl/top.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "ctl/cli.h"
#include "ctl/format.h"
#include "ctl/render.h"
#include "ctl/table.h"
#include "ctl/top_format.h"

namespace brake::ctl {

using nlohmann::json;

namespace {

// ANSI: cursor home, clear to end of line, clear to end of screen, clear
// the screen, hide and show the cursor.
constexpr const char* kHome = "\x1b[H";
constexpr const char* kClearLine = "\x1b[K";
constexpr const char* kClearBelow = "\x1b[J";
constexpr const char* kClearScreen = "\x1b[2J";
constexpr const char* kHideCursor = "\x1b[?25l";
constexpr const char* kShowCursor = "\x1b[?25h";

// `name`'s total now and its rate since `previous`. A counter that went down
// was reset (the daemon restarted): all of its current value is new.
Rated RateOf(const TopSnapshot* previous, const TopSnapshot& current,
             const std::string& name, const MetricLabels& match = {}) {
  Rated r;
  r.total = current.metrics.Sum(name, match);
  if (previous == nullptr || !r.total) return r;
  std::optional<double> before = previous->metrics.Sum(name, match);
  const int64_t dt_ms = current.at_ms - previous->at_ms;
  if (!before) return r;
  r.per_s = PerSecond(*before, *r.total, dt_ms);
  return r;
}

// "label value" pairs joined by two spaces, skipping absent values.
std::string Pairs(
    const std::vector<std::pair<std::string, std::string>>& pairs) {
  std::string s;
  for (const auto& [label, value] : pairs) {
    if (value == "-") continue;
    if (!s.empty()) s += "  ";
    s += label.empty() ? value : label + " " + value;
  }
  return s;
}

// "brake top  /run/brake/braked.sock  12:34:56 UTC  every 1s  (q quits)"
std::string TitleLine(const FrameHeader& header) {
  std::string title = "brake top  " + header.socket_path + "  " +
                      FormatClock(header.wall_ms) + "  every " +
                      FormatDurationMs(header.interval_ms);
  if (header.keys) title += "  (q quits)";
  return title;
}

json RatedJson(const Rated& r) {
  return {{"total", NumberJson(r.total)}, {"per_s", NumberJson(r.per_s)}};
}

// The reply to `op` on `transport`, or why there is none. `*broken` says
// whether the connection itself failed (it must then be reopened).
Result<json> Ask(Transport& transport, const char* op, int64_t* next_id,
                 int64_t timeout_ms, bool* broken,
                 const json& fields = json::object()) {
  const json id = (*next_id)++;
  json request = {{"id", id}, {"op", op}};
  request.update(fields);
  Result<std::string> line =
      transport.Exchange(DumpJson(request), id, timeout_ms);
  if (!line.ok()) {
    *broken = true;
    return line.status();
  }
  json reply = json::parse(*line, nullptr, /*allow_exceptions=*/false);
  if (!reply.is_object() || !reply.contains("ok") ||
      !reply["ok"].is_boolean()) {
    *broken = true;  // not braked, or out of step: start afresh
    return Status::Unavailable(std::string(op) +
                               ": malformed reply from braked");
  }
  if (!reply["ok"].get<bool>()) {
    const json& error = reply.contains("error") ? reply["error"] : json();
    return Status(ErrorCode::kUnavailable, FormatField(error, "code") + ": " +
                                               FormatField(error, "message"));
  }
  return reply;
}

struct Loop {
  RunContext& ctx;
  Terminal& term;
  std::unique_ptr<Transport> transport;
  int64_t next_id = 1;
  // False once the daemon said it has no `top` op: asking an older braked
  // every frame would only add to its error count. Asked again after a
  // reconnect (it may have been upgraded).
  bool top_op = true;

  // The busiest users and tasks into `snap`; false when the connection
  // broke.
  bool FetchSubjects(TopSnapshot* snap) {
    for (auto [by, rows] : {std::pair{"user", &snap->busiest_users},
                            std::pair{"task", &snap->busiest_tasks}}) {
      if (!top_op) return true;
      bool broken = false;
      Result<json> reply =
          Ask(*transport, "top", &next_id, ctx.timeout_ms, &broken,
              {{"by", by}, {"limit", kTopSubjectRows}});
      if (broken) return false;
      if (!reply.ok()) {
        if (reply.status().message().rfind("unknown_op", 0) == 0) {
          top_op = false;
        } else {
          snap->subjects_error = reply.status().message();
        }
        return true;
      }
      Result<std::vector<SubjectRow>> parsed = ParseSubjects(*reply);
      if (!parsed.ok()) {
        snap->subjects_error = parsed.status().message();
        return true;
      }
      *rows = std::move(*parsed);
    }
    return true;
  }

  Result<TopSnapshot> Fetch() {
    if (!transport) {
      if (!ctx.connect) return Status::Unavailable("no transport");
      Result<std::unique_ptr<Transport>> t = ctx.connect();
      if (!t.ok()) return t.status();
      transport = std::move(*t);
      top_op = true;
    }
    bool broken = false;
    Result<json> metrics =
        Ask(*transport, "metrics", &next_id, ctx.timeout_ms, &broken);
    if (broken) transport.reset();
    if (!metrics.ok()) {
      return Status::Unavailable("metrics: " + metrics.status().message());
    }
    TopSnapshot snap;
    snap.at_ms = term.NowMs();
    snap.own_requests = next_id - 1;
    const json& text = (*metrics)["text"];
    if (!text.is_string()) {
      return Status::Unavailable("metrics: reply has no \"text\"");
    }
    Result<MetricSet> set =
        MetricSet::Parse(text.get_ref<const std::string&>());
    if (!set.ok()) return Status::Unavailable(set.status().message());
    snap.metrics = std::move(*set);

    Result<json> breakers =
        Ask(*transport, "breaker.list", &next_id, ctx.timeout_ms, &broken);
    if (broken) {
      transport.reset();
      return Status::Unavailable("breaker.list: " +
                                 breakers.status().message());
    }
    if (!breakers.ok()) {
      snap.breakers_error = breakers.status().message();
    } else if ((*breakers)["breakers"].is_array()) {
      snap.breakers = (*breakers)["breakers"];
    } else {
      snap.breakers_error = "reply has no \"breakers\"";
    }
    if (!FetchSubjects(&snap)) {
      transport.reset();
      return Status::Unavailable("top: connection lost");
    }
    return snap;
  }
};

}  // namespace

TopFrame ComputeFrame(const TopSnapshot* previous, const TopSnapshot& current) {
  TopFrame f;
  const MetricSet& m = current.metrics;
  if (previous != nullptr) f.interval_ms = current.at_ms - previous->at_ms;
  const std::string acquires = "brake_acquires_total";
  f.granted = RateOf(previous, current, acquires, {{"result", "granted"}});
  f.denied = RateOf(previous, current, acquires, {{"result", "denied"}});
  for (const std::string& reason :
       m.LabelValues(acquires, "reason", {{"result", "denied"}})) {
    Rated r = RateOf(previous, current, acquires,
                     {{"result", "denied"}, {"reason", reason}});
    if (r.total.value_or(0) > 0) f.denied_by_reason.emplace_back(reason, r);
  }
  f.requests = RateOf(previous, current, "brake_requests_total");
  if (f.requests.per_s && current.at_ms > previous->at_ms) {
    const int64_t own = current.own_requests - previous->own_requests;
    f.requests.per_s = std::max(
        0.0, *f.requests.per_s -
                 static_cast<double>(own) * 1000.0 /
                     static_cast<double>(current.at_ms - previous->at_ms));
  }
  f.commits = RateOf(previous, current, "brake_commits_total");
  f.cancels = RateOf(previous, current, "brake_cancels_total");
  f.errors = RateOf(previous, current, "brake_errors_total");
  f.leases_open = m.Sum("brake_leases_open");
  f.connections = m.Sum("brake_connections");
  f.tasks = m.Sum("brake_tasks");
  f.waiters = m.Sum("brake_waiters");
  f.breakers_open = m.Sum("brake_breakers", {{"state", "open"}});
  f.breakers_half_open = m.Sum("brake_breakers", {{"state", "half_open"}});
  f.storage_ok = m.Sum("brake_storage_ok");
  f.storage_batches = RateOf(previous, current, "brake_storage_batches_total");
  f.storage_failures = m.Sum("brake_storage_failures_total");
  Rated seconds =
      RateOf(previous, current, "brake_storage_commit_seconds_total");
  if (seconds.per_s && f.storage_batches.per_s) {
    // Both rates share the interval, so their ratio is delta s / delta n.
    if (*f.storage_batches.per_s > 0) {
      f.commit_ms = *seconds.per_s / *f.storage_batches.per_s * 1000.0;
    }
  } else if (seconds.total && f.storage_batches.total &&
             *f.storage_batches.total > 0) {
    f.commit_ms = *seconds.total / *f.storage_batches.total * 1000.0;
    f.commit_since_start = true;
  }
  f.spend_tokens = RateOf(previous, current, "brake_spend_tokens_total");
  f.spend_usd = RateOf(previous, current, "brake_spend_usd_total");
  f.breakers = current.breakers;
  f.breakers_error = current.breakers_error;
  const bool had = previous != nullptr;
  if (current.busiest_users) {
    f.busiest_users = RateSubjects(
        had && previous->busiest_users ? &*previous->busiest_users : nullptr,
        *current.busiest_users, f.interval_ms);
  }
  if (current.busiest_tasks) {
    f.busiest_tasks = RateSubjects(
        had && previous->busiest_tasks ? &*previous->busiest_tasks : nullptr,
        *current.busiest_tasks, f.interval_ms);
  }
  f.subjects_error = current.subjects_error;
  return f;
}

std::vector<std::string> RenderFrame(const TopFrame& f,
                                     const FrameHeader& header, int max_lines,
                                     int max_columns) {
  std::vector<std::string> lines;
  lines.push_back(TitleLine(header));
  lines.emplace_back();

  Table acquires({"ACQUIRES", "PER_S", "TOTAL"});
  acquires.AddRow(
      {"granted", FormatRate(f.granted.per_s), FormatCount(f.granted.total)});
  acquires.AddRow(
      {"denied", FormatRate(f.denied.per_s), FormatCount(f.denied.total)});
  for (const auto& [reason, r] : f.denied_by_reason) {
    acquires.AddRow({"  " + reason, FormatRate(r.per_s), FormatCount(r.total)});
  }
  std::ostringstream table;
  acquires.Render(table);
  AppendLines(table.str(), &lines);
  lines.emplace_back();

  auto per_s = [](const Rated& r) {
    return r.per_s ? FormatRate(r.per_s) + "/s" : std::string("-");
  };
  lines.push_back(Pairs({{"requests", per_s(f.requests)},
                         {"commits", per_s(f.commits)},
                         {"cancels", per_s(f.cancels)},
                         {"errors", per_s(f.errors)}}));
  if (lines.back().empty()) lines.back() = "rates: from the next frame on";
  lines.push_back(Pairs({{"leases open", FormatCount(f.leases_open)},
                         {"waiters", FormatCount(f.waiters)},
                         {"connections", FormatCount(f.connections)},
                         {"tasks", FormatCount(f.tasks)}}));
  if (f.spend_tokens.per_s || f.spend_usd.per_s) {
    lines.push_back(Pairs(
        {{"settled", f.spend_tokens.per_s
                         ? FormatRate(f.spend_tokens.per_s) + " tokens/s"
                         : "-"},
         {"", f.spend_usd.per_s ? FormatDecimal(*f.spend_usd.per_s) + " usd/s"
                                : "-"}}));
  } else if (f.spend_tokens.total || f.spend_usd.total) {
    lines.push_back(Pairs(
        {{"settled", f.spend_tokens.total
                         ? FormatCount(f.spend_tokens.total) + " tokens"
                         : "-"},
         {"", f.spend_usd.total ? FormatDecimal(*f.spend_usd.total) + " usd"
                                : "-"}}));
  }
  std::string storage = "storage ";
  storage += !f.storage_ok ? "-" : (*f.storage_ok > 0 ? "ok" : "FAILING");
  if (f.storage_batches.per_s) {
    storage += "  " + FormatRate(f.storage_batches.per_s) + " commits/s";
  }
  if (f.commit_ms) {
    storage += "  " + FormatMs(*f.commit_ms) + " ms/commit";
    if (f.commit_since_start) storage += " (mean since start)";
  } else if (f.storage_batches.per_s) {
    storage += "  idle";
  }
  if (f.storage_failures) {
    storage += "  failures " + FormatCount(f.storage_failures);
  }
  lines.push_back(storage);
  lines.emplace_back();
  if (f.busiest_users) {
    RenderSubjects("BUSIEST USERS", *f.busiest_users, &lines);
  }
  if (f.busiest_tasks) {
    RenderSubjects("BUSIEST TASKS", *f.busiest_tasks, &lines);
  }
  if (!f.subjects_error.empty()) {
    lines.push_back("busiest: unavailable (" + f.subjects_error + ")");
    lines.emplace_back();
  }

  if (!f.breakers.is_array()) {
    std::string line = "breakers: unavailable";
    if (!f.breakers_error.empty()) line += " (" + f.breakers_error + ")";
    if (f.breakers_open || f.breakers_half_open) {
      line += "; " + FormatCount(f.breakers_open) + " open, " +
              FormatCount(f.breakers_half_open) + " half_open";
    }
    lines.push_back(line);
  } else {
    if (!f.breakers.empty()) {
      lines.push_back("OPEN BREAKERS (" + std::to_string(f.breakers.size()) +
                      ")");
    }
    std::ostringstream breakers;
    RenderBreakers(json(), {{"breakers", f.breakers}}, breakers);
    AppendLines(breakers.str(), &lines);
  }

  if (max_lines > 0 && lines.size() > static_cast<size_t>(max_lines)) {
    const size_t keep = max_lines > 1 ? static_cast<size_t>(max_lines) - 1 : 0;
    const size_t cut = lines.size() - keep;
    lines.resize(keep);
    lines.push_back("... " + std::to_string(cut) + " more");
  }
  for (std::string& line : lines) line = Truncate(line, max_columns);
  return lines;
}

json FrameJson(const TopFrame& f, int64_t wall_ms) {
  json by_reason = json::object();
  for (const auto& [reason, r] : f.denied_by_reason) {
    by_reason[reason] = RatedJson(r);
  }
  json denied = RatedJson(f.denied);
  denied["by_reason"] = std::move(by_reason);
  return {
      {"time_ms", wall_ms},
      {"interval_ms", f.interval_ms},
      {"acquires", {{"granted", RatedJson(f.granted)}, {"denied", denied}}},
      {"requests", RatedJson(f.requests)},
      {"commits", RatedJson(f.commits)},
      {"cancels", RatedJson(f.cancels)},
      {"errors", RatedJson(f.errors)},
      {"leases_open", NumberJson(f.leases_open)},
      {"connections", NumberJson(f.connections)},
      {"tasks", NumberJson(f.tasks)},
      {"waiters", NumberJson(f.waiters)},
      {"storage",
       {{"ok", f.storage_ok ? json(*f.storage_ok > 0) : json()},
        {"batches", RatedJson(f.storage_batches)},
        {"failures", NumberJson(f.storage_failures)},
        {"commit_ms", NumberJson(f.commit_ms)}}},
      {"spend",
       {{"tokens", RatedJson(f.spend_tokens)},
        {"usd", RatedJson(f.spend_usd)}}},
      {"breakers", f.breakers},
      {"busiest_users",
       f.busiest_users ? SubjectsJson(*f.busiest_users) : json()},
      {"busiest_tasks",
       f.busiest_tasks ? SubjectsJson(*f.busiest_tasks) : json()},
  };
}

Status BuildTop(const ParsedArgs&, const BuildContext&, json* request) {
  if (request->contains("interval_ms")) {
    const int64_t ms = (*request)["interval_ms"].get<int64_t>();
    if (ms < kTopMinIntervalMs || ms > kTopMaxIntervalMs) {
      return UsageError("--interval-ms: must be between " +
                        std::to_string(kTopMinIntervalMs) + " and " +
                        std::to_string(kTopMaxIntervalMs));
    }
  }
  if (request->contains("iterations") &&
      (*request)["iterations"].get<int64_t>() < 1) {
    return UsageError("--iterations: must be at least 1");
  }
  return Status::Ok();
}

int RunTop(const json& request, RunContext& ctx) {
  if (ctx.terminal == nullptr || ctx.out == nullptr || ctx.err == nullptr) {
    return kExitError;
  }
  Terminal& term = *ctx.terminal;
  std::ostream& out = *ctx.out;
  const int64_t interval_ms =
      request.value("interval_ms", kTopDefaultIntervalMs);
  const int64_t iterations = request.value("iterations", int64_t{0});
  const bool interactive = term.interactive() && !ctx.json;
  Loop loop{ctx, term, nullptr};

  std::optional<TopSnapshot> previous;
  std::optional<TopFrame> shown;  // the last frame drawn, for redraws
  std::string error;              // why the last fetch failed
  bool failed = false;
  int64_t printed = 0;

  auto draw = [&]() {
    FrameHeader header{ctx.socket_path, term.WallMs(), interval_ms,
                       term.reads_keys()};
    if (ctx.json) {
      if (shown) out << DumpJson(FrameJson(*shown, header.wall_ms)) << '\n';
      out.flush();
      return;
    }
    std::vector<std::string> lines;
    if (error.empty() && shown) {
      // One line stays free: a newline on the last row would scroll.
      lines = RenderFrame(*shown, header, interactive ? term.rows() - 1 : 0,
                          interactive ? term.columns() : 0);
    } else if (interactive) {
      lines = {TitleLine(header), "", "brakectl: " + error + " (retrying)"};
      for (std::string& line : lines) line = Truncate(line, term.columns());
    }
    if (interactive) {
      out << kHome;
      for (const std::string& line : lines) out << line << kClearLine << '\n';
      out << kClearBelow;
    } else if (!lines.empty()) {
      if (printed > 0) out << '\n';
      for (const std::string& line : lines) out << line << '\n';
    }
    ++printed;
    out.flush();
  };

  if (interactive) out << kHideCursor << kClearScreen;
  for (int64_t frame = 1;; ++frame) {
    const int64_t started = term.NowMs();
    Result<TopSnapshot> snap = loop.Fetch();
    if (term.stop_requested()) break;
    if (snap.ok()) {
      error.clear();
      shown = ComputeFrame(previous ? &*previous : nullptr, *snap);
      previous = std::move(*snap);
    } else {
      failed = true;
      error = snap.status().message();
      if (!interactive) *ctx.err << "brakectl: top: " << error << '\n';
    }
    if (snap.ok() || interactive) draw();
    if (iterations > 0 && frame >= iterations) break;

    TerminalEvent event = TerminalEvent::kTimeout;
    for (;;) {
      event =
          term.Wait(std::max<int64_t>(0, started + interval_ms - term.NowMs()));
      if (event != TerminalEvent::kResize) break;
      if (interactive) draw();
    }
    if (event == TerminalEvent::kQuit || event == TerminalEvent::kStop) break;
  }
  if (interactive) out << kShowCursor;
  out.flush();
  return failed ? kExitError : kExitOk;
}

}  // namespace brake::ctl
