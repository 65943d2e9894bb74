#include "bench/report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <optional>
#include <string_view>
#include <vector>

#include "bench/grant_timeline.h"

namespace brake::bench {
namespace {

double PerSecond(uint64_t n, double seconds) {
  return seconds > 0 ? static_cast<double>(n) / seconds : 0;
}

std::string Format(const char* fmt, double v) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), fmt, v);
  return buf;
}

// Nanoseconds as microseconds to one decimal.
double Us(double ns) { return std::round(ns / 100) / 10; }

// A latency at quantile q, in microseconds to one decimal.
double UsAt(const LatencyHistogram& h, double q) {
  return Us(static_cast<double>(h.ValueAtQuantile(q)));
}

nlohmann::json LatencyJson(const LatencyHistogram& h) {
  return {{"min", Us(static_cast<double>(h.min_ns()))},
          {"mean", Us(h.mean_ns())},
          {"p50", UsAt(h, 0.50)},
          {"p90", UsAt(h, 0.90)},
          {"p99", UsAt(h, 0.99)},
          {"p999", UsAt(h, 0.999)},
          {"max", Us(static_cast<double>(h.max_ns()))}};
}

nlohmann::json CountsJson(const std::map<std::string, uint64_t>& m) {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& [k, n] : m) j[k] = n;
  return j;
}

std::string CountsText(uint64_t total,
                       const std::map<std::string, uint64_t>& m) {
  std::string s = std::to_string(total);
  if (m.empty()) return s;
  s += "  (";
  bool first = true;
  for (const auto& [k, n] : m) {
    if (!first) s += ", ";
    first = false;
    s += (k.empty() ? std::string("?") : k) + " " + std::to_string(n);
  }
  return s + ")";
}

std::string OpName(BenchOp op) {
  return op == BenchOp::kPing ? "ping" : "acquire";
}

struct Spread {
  uint64_t min = 0;
  uint64_t max = 0;
};
Spread MinMax(const std::vector<uint64_t>& v) {
  if (v.empty()) return {};
  const auto [lo, hi] = std::minmax_element(v.begin(), v.end());
  return {*lo, *hi};
}

// Grants summed per task: connection i acquires for task i % K.
std::vector<uint64_t> GrantsPerTask(const RunReport& run) {
  const LoadConfig& c = run.config;
  const size_t tasks =
      static_cast<size_t>(c.tasks > 0 ? c.tasks : c.connections);
  std::vector<uint64_t> per_task(tasks, 0);
  const std::vector<uint64_t>& per_conn = run.result.grants_per_connection;
  for (size_t i = 0; i < per_conn.size(); ++i) {
    per_task[i % tasks] += per_conn[i];
  }
  return per_task;
}

// Max over min grants per task; nullopt when some task got none.
std::optional<double> ShareRatio(const Spread& s) {
  if (s.min == 0) return std::nullopt;
  return std::round(static_cast<double>(s.max) / static_cast<double>(s.min) *
                    1000) /
         1000;
}

double Ms(uint64_t us) {
  return std::round(static_cast<double>(us) / 100.0) / 10.0;
}

// Intervals between consecutive grant receive times, in milliseconds.
struct Spacing {
  size_t grants = 0;
  double first_ms = 0;
  double last_ms = 0;
  double min_ms = 0;
  double p50_ms = 0;
  double mean_ms = 0;
  double max_ms = 0;
};
std::optional<Spacing> GrantSpacing(const std::vector<int64_t>& times_us) {
  if (times_us.size() < 2) return std::nullopt;
  std::vector<int64_t> gaps;
  gaps.reserve(times_us.size() - 1);
  for (size_t i = 1; i < times_us.size(); ++i) {
    gaps.push_back(times_us[i] - times_us[i - 1]);
  }
  const int64_t total = times_us.back() - times_us.front();
  std::sort(gaps.begin(), gaps.end());
  auto ms = [](double us) { return std::round(us / 100.0) / 10.0; };
  Spacing sp;
  sp.grants = times_us.size();
  sp.first_ms = ms(static_cast<double>(times_us.front()));
  sp.last_ms = ms(static_cast<double>(times_us.back()));
  sp.min_ms = ms(static_cast<double>(gaps.front()));
  sp.p50_ms = ms(static_cast<double>(gaps[(gaps.size() - 1) / 2]));
  sp.mean_ms =
      ms(static_cast<double>(total) / static_cast<double>(gaps.size()));
  sp.max_ms = ms(static_cast<double>(gaps.back()));
  return sp;
}

uint64_t ReasonCount(const LoadResult& r, const char* reason) {
  const auto it = r.denials_by_reason.find(reason);
  return it == r.denials_by_reason.end() ? 0 : it->second;
}

nlohmann::json Ratio(double brake, double echo) {
  if (echo == 0) return nullptr;
  return std::round(brake / echo * 1000) / 1000;
}

// The figures both reports derive from a run, computed in one place.
struct Derived {
  Spread per_conn;
  Spread per_task;
  std::optional<double> share;
  std::optional<Spacing> spacing;
  RollingMax rolling;
  RollingMax certain;
  AlignedMax aligned_certain;
  AlignedMax aligned_received;
  std::vector<uint64_t> per_second;
  uint64_t timeline_total = 0;
};

Derived Derive(const RunReport& run) {
  const LoadConfig& c = run.config;
  const LoadResult& r = run.result;
  Derived d;
  d.per_conn = MinMax(r.grants_per_connection);
  d.per_task = MinMax(GrantsPerTask(run));
  d.share = ShareRatio(d.per_task);
  if (r.grant_times_recorded) d.spacing = GrantSpacing(r.grant_times_us);
  d.rolling = MaxRollingGrants(r.grants_per_ms, 1000);
  d.certain = MaxCertainGrants(r.grants_per_ms, r.grant_sends_per_ms,
                               r.grants_sent_before, 1000);
  d.aligned_certain = MaxAlignedGrants(r.aligned_certain,
                                       r.aligned_first_window, c.window_ms);
  d.aligned_received = MaxAlignedGrants(r.aligned_received,
                                        r.aligned_first_window, c.window_ms);
  d.per_second = GrantsPerSecond(r.grants_per_ms);
  for (uint64_t n : d.per_second) d.timeline_total += n;
  return d;
}

}  // namespace

nlohmann::json ReportJson(const RunReport& run) {
  const LoadConfig& c = run.config;
  const LoadResult& r = run.result;
  const double secs = r.measured_seconds;
  const Derived d = Derive(run);
  const Spread& per_conn = d.per_conn;
  const Spread& per_task = d.per_task;
  const std::optional<double>& share = d.share;
  const std::optional<Spacing>& spacing = d.spacing;
  const RollingMax& rolling = d.rolling;
  const RollingMax& certain = d.certain;
  const AlignedMax& aligned_certain = d.aligned_certain;
  const AlignedMax& aligned_received = d.aligned_received;
  const std::vector<uint64_t>& per_second = d.per_second;
  const uint64_t timeline_total = d.timeline_total;

  nlohmann::json j = {
      {"target", run.target},
      {"socket", c.socket_path},
      {"op", OpName(c.op)},
      {"connections", c.connections},
      {"depth", c.depth},
      {"threads", r.threads},
      {"seconds", secs},
      {"warmup_seconds", c.warmup_seconds},
      {"user", c.user},
      {"users", c.users},
      {"task_prefix", c.task_prefix},
      {"tasks", c.tasks > 0 ? c.tasks : c.connections},
      {"tokens", c.tokens},
      {"commit", c.commit},
      {"hold", c.hold},
      {"decisions", r.decisions},
      {"decisions_per_sec", std::round(PerSecond(r.decisions, secs) * 10) / 10},
      {"latency_us", LatencyJson(r.latency)},
      {"grants", r.grants},
      {"denials", r.denials},
      {"denials_by_reason", CountsJson(r.denials_by_reason)},
      {"errors", r.errors},
      {"errors_by_code", CountsJson(r.errors_by_code)},
      {"ok_other", r.ok_other},
      {"echoed", r.echoed},
      {"grants_per_connection", {{"min", per_conn.min}, {"max", per_conn.max}}},
      {"grants_per_task", {{"min", per_task.min}, {"max", per_task.max}}},
      {"task_share_ratio",
       share ? nlohmann::json(*share) : nlohmann::json(nullptr)},
      {"wait_ms", c.wait_ms},
      {"once", c.once},
      {"timeouts", ReasonCount(r, "timeout")},
      {"queue_full", ReasonCount(r, "queue_full")},
      {"answers", r.answers},
      {"max_answer_ms", Ms(r.max_answer_us)},
      {"max_grant_answer_ms", Ms(r.max_grant_answer_us)},
      {"max_denial_answer_ms", Ms(r.max_denial_answer_us)},
      {"late_answers", r.late_answers},
      {"grants_per_second", per_second},
      {"max_grants_rolling_1s", rolling.grants},
      {"max_grants_rolling_1s_start_ms", rolling.start_ms},
      {"max_grants_certain_1s", certain.grants},
      {"max_grants_certain_1s_start_ms", certain.start_ms},
      {"window_ms", c.window_ms},
      {"max_grants_aligned_window_certain", aligned_certain.grants},
      {"max_grants_aligned_window_certain_start_unix_ms",
       aligned_certain.start_unix_ms},
      {"max_grants_aligned_window_received", aligned_received.grants},
      {"max_grants_aligned_window_received_start_unix_ms",
       aligned_received.start_unix_ms},
      {"total_grants", timeline_total},
      {"undrained", r.undrained},
  };
  if (spacing) {
    j["grant_spacing_ms"] = {{"grants", spacing->grants},
                             {"first", spacing->first_ms},
                             {"last", spacing->last_ms},
                             {"min", spacing->min_ms},
                             {"p50", spacing->p50_ms},
                             {"mean", spacing->mean_ms},
                             {"max", spacing->max_ms}};
  } else {
    j["grant_spacing_ms"] = nullptr;
  }
  if (c.commit) {
    j["commits"] = {
        {"ok", r.commits_ok},
        {"errors", r.commit_errors},
        {"errors_by_code", CountsJson(r.commit_errors_by_code)},
        {"per_sec", std::round(PerSecond(r.commits_ok, secs) * 10) / 10},
        {"latency_us", LatencyJson(r.commit_latency)}};
  }
  return j;
}

std::string ReportText(const RunReport& run) {
  const LoadConfig& c = run.config;
  const LoadResult& r = run.result;
  const double secs = r.measured_seconds;
  const LatencyHistogram& h = r.latency;
  const Derived d = Derive(run);
  const Spread& per_conn = d.per_conn;
  const Spread& per_task = d.per_task;
  const std::optional<double>& share = d.share;
  const std::optional<Spacing>& spacing = d.spacing;
  const RollingMax& rolling = d.rolling;
  const RollingMax& certain = d.certain;
  const AlignedMax& aligned_certain = d.aligned_certain;
  const AlignedMax& aligned_received = d.aligned_received;
  const std::vector<uint64_t>& per_second = d.per_second;
  const uint64_t timeline_total = d.timeline_total;

  std::string s;
  auto line = [&s](std::string_view label, const std::string& value) {
    std::string padded(label);
    padded.resize(std::max<size_t>(padded.size(), 12), ' ');
    s += "  " + padded + " " + value + "\n";
  };
  s += "brake-bench: " + run.target + " at " + c.socket_path + "\n";
  line("load", OpName(c.op) + ", " + std::to_string(c.connections) +
                   (c.connections == 1 ? " connection x depth "
                                       : " connections x depth ") +
                   std::to_string(c.depth) + ", " + std::to_string(r.threads) +
                   (r.threads == 1 ? " thread, " : " threads, ") +
                   Format("%.1f", secs) + " s measured after " +
                   Format("%.1f", c.warmup_seconds) + " s warm-up" +
                   (c.wait_ms > 0 ? ", wait_ms " + std::to_string(c.wait_ms)
                                  : std::string()) +
                   (c.once ? ", once" : "") + (c.commit ? ", commit" : "") +
                   (c.hold > 0 ? ", hold " + std::to_string(c.hold)
                               : std::string()));
  line("decisions", std::to_string(r.decisions) + "  (" +
                        Format("%.1f", PerSecond(r.decisions, secs)) + "/s)");
  line("latency us", "p50 " + Format("%.1f", UsAt(h, 0.5)) + "  p99 " +
                         Format("%.1f", UsAt(h, 0.99)) + "  p999 " +
                         Format("%.1f", UsAt(h, 0.999)) + "  (min " +
                         Format("%.1f", Us(static_cast<double>(h.min_ns()))) +
                         ", mean " + Format("%.1f", Us(h.mean_ns())) +
                         ", max " +
                         Format("%.1f", Us(static_cast<double>(h.max_ns()))) +
                         ")");
  line("grants", std::to_string(r.grants));
  line("denials", CountsText(r.denials, r.denials_by_reason));
  line("errors", CountsText(r.errors, r.errors_by_code));
  if (r.ok_other > 0) line("ok, other", std::to_string(r.ok_other));
  if (r.echoed > 0) line("echoed", std::to_string(r.echoed));
  if (c.commit) {
    const LatencyHistogram& ch = r.commit_latency;
    line("commits",
         std::to_string(r.commits_ok) + " ok (" +
             Format("%.1f", PerSecond(r.commits_ok, secs)) + "/s), errors " +
             CountsText(r.commit_errors, r.commit_errors_by_code) + "; p50 " +
             Format("%.1f", UsAt(ch, 0.5)) + " us, p99 " +
             Format("%.1f", UsAt(ch, 0.99)) + " us");
  }
  line("per conn", "grants min " + std::to_string(per_conn.min) + ", max " +
                       std::to_string(per_conn.max));
  line("per task",
       "grants min " + std::to_string(per_task.min) + ", max " +
           std::to_string(per_task.max) + ", ratio max/min " +
           (share ? Format("%.3f", *share) : std::string("n/a (min 0)")));
  if (c.op == BenchOp::kAcquire) {
    line("waiting", "timeouts " + std::to_string(ReasonCount(r, "timeout")) +
                        ", queue_full " +
                        std::to_string(ReasonCount(r, "queue_full")));
    line("answers",
         std::to_string(r.answers) + " in all; max " +
             Format("%.1f", Ms(r.max_answer_us)) + " ms (granted " +
             Format("%.1f", Ms(r.max_grant_answer_us)) + ", denied " +
             Format("%.1f", Ms(r.max_denial_answer_us)) + "); late (> " +
             std::to_string(c.wait_ms + kLateSlackMs) + " ms) " +
             std::to_string(r.late_answers));
  }
  if (spacing) {
    line("grant gaps",
         "ms min " + Format("%.1f", spacing->min_ms) + ", p50 " +
             Format("%.1f", spacing->p50_ms) + ", mean " +
             Format("%.1f", spacing->mean_ms) + ", max " +
             Format("%.1f", spacing->max_ms) + " (" +
             std::to_string(spacing->grants) + " grants, " +
             Format("%.1f", spacing->first_ms) + " to " +
             Format("%.1f", spacing->last_ms) + " ms)");
  }
  std::string timeline;
  for (size_t i = 0; i < per_second.size(); ++i) {
    if (i > 0) timeline += (i % 10 == 0) ? "\n" + std::string(15, ' ') : " ";
    timeline += std::to_string(per_second[i]);
  }
  line("grants/s", timeline);
  line("rolling 1s",
       "max " + std::to_string(rolling.grants) + " grants (window from " +
           Format("%.3f", static_cast<double>(rolling.start_ms) / 1000.0) +
           " s), total " + std::to_string(timeline_total));
  line("certain 1s",
       "max " + std::to_string(certain.grants) +
           " grants sent and answered within one 1000 ms window (from " +
           Format("%.3f", static_cast<double>(certain.start_ms) / 1000.0) +
           " s)");
  line("aligned",
       "max " + std::to_string(aligned_certain.grants) +
           " grants sent and answered within one wall-clock-aligned " +
           std::to_string(c.window_ms) + " ms window (at unix ms " +
           std::to_string(aligned_certain.start_unix_ms) + "); by reply "
           "time max " + std::to_string(aligned_received.grants));
  if (r.undrained > 0) {
    line("undrained", std::to_string(r.undrained) +
                          " requests unanswered when the run ended");
  }
  return s;
}

nlohmann::json CompareJson(const RunReport& brake, const RunReport& echo) {
  const LatencyHistogram& bh = brake.result.latency;
  const LatencyHistogram& eh = echo.result.latency;
  return {
      {"braked", ReportJson(brake)},
      {"echo", ReportJson(echo)},
      {"ratio",
       {{"decisions_per_sec",
         Ratio(PerSecond(brake.result.decisions, brake.result.measured_seconds),
               PerSecond(echo.result.decisions, echo.result.measured_seconds))},
        {"p50", Ratio(UsAt(bh, 0.5), UsAt(eh, 0.5))},
        {"p99", Ratio(UsAt(bh, 0.99), UsAt(eh, 0.99))}}}};
}

std::string CompareText(const RunReport& brake, const RunReport& echo) {
  const nlohmann::json ratio = CompareJson(brake, echo)["ratio"];
  auto ratio_text = [&ratio](const char* key) {
    const nlohmann::json& v = ratio[key];
    return v.is_null() ? std::string("n/a") : Format("%.3f", v.get<double>());
  };
  const LatencyHistogram& bh = brake.result.latency;
  const LatencyHistogram& eh = echo.result.latency;
  const double bd =
      PerSecond(brake.result.decisions, brake.result.measured_seconds);
  const double ed =
      PerSecond(echo.result.decisions, echo.result.measured_seconds);
  char table[512];
  std::snprintf(table, sizeof(table),
                "brake vs echo (braked / echo):\n"
                "  %-12s %14s %14s %10s\n"
                "  %-12s %14.1f %14.1f %10s\n"
                "  %-12s %14.1f %14.1f %10s\n"
                "  %-12s %14.1f %14.1f %10s\n",
                "", "braked", "echo", "ratio", "decisions/s", bd, ed,
                ratio_text("decisions_per_sec").c_str(), "p50 us",
                UsAt(bh, 0.5), UsAt(eh, 0.5), ratio_text("p50").c_str(),
                "p99 us", UsAt(bh, 0.99), UsAt(eh, 0.99),
                ratio_text("p99").c_str());
  return ReportText(brake) + "\n" + ReportText(echo) + "\n" + table;
}

}  // namespace brake::bench
