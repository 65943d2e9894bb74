#include "bench/report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string_view>

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

nlohmann::json LatencyJson(const LatencyHistogram& h) {
  return {{"min", h.min_us()},
          {"mean", std::round(h.mean_us() * 10) / 10},
          {"p50", h.ValueAtQuantile(0.50)},
          {"p90", h.ValueAtQuantile(0.90)},
          {"p99", h.ValueAtQuantile(0.99)},
          {"p999", h.ValueAtQuantile(0.999)},
          {"max", h.max_us()}};
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

nlohmann::json Ratio(double brake, double echo) {
  if (echo == 0) return nullptr;
  return std::round(brake / echo * 1000) / 1000;
}

}  // namespace

nlohmann::json ReportJson(const RunReport& run) {
  const LoadConfig& c = run.config;
  const LoadResult& r = run.result;
  const double secs = r.measured_seconds;
  const Spread per_conn = MinMax(r.grants_per_connection);
  const RollingMax rolling = MaxRollingGrants(r.grants_per_ms, 1000);
  const RollingMax certain = MaxCertainGrants(
      r.grants_per_ms, r.grant_sends_per_ms, r.grants_sent_before, 1000);
  const AlignedMax aligned_certain = MaxAlignedGrants(
      r.aligned_certain, r.aligned_first_window, c.window_ms);
  const AlignedMax aligned_received = MaxAlignedGrants(
      r.aligned_received, r.aligned_first_window, c.window_ms);
  const std::vector<uint64_t> per_second = GrantsPerSecond(r.grants_per_ms);
  uint64_t timeline_total = 0;
  for (uint64_t n : per_second) timeline_total += n;

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
      {"task_prefix", c.task_prefix},
      {"tasks", c.tasks > 0 ? c.tasks : c.connections},
      {"tokens", c.tokens},
      {"commit", c.commit},
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
  const Spread per_conn = MinMax(r.grants_per_connection);
  const RollingMax rolling = MaxRollingGrants(r.grants_per_ms, 1000);
  const RollingMax certain = MaxCertainGrants(
      r.grants_per_ms, r.grant_sends_per_ms, r.grants_sent_before, 1000);
  const AlignedMax aligned_certain = MaxAlignedGrants(
      r.aligned_certain, r.aligned_first_window, c.window_ms);
  const AlignedMax aligned_received = MaxAlignedGrants(
      r.aligned_received, r.aligned_first_window, c.window_ms);
  const std::vector<uint64_t> per_second = GrantsPerSecond(r.grants_per_ms);
  uint64_t timeline_total = 0;
  for (uint64_t n : per_second) timeline_total += n;

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
                   (c.commit ? ", commit" : ""));
  line("decisions", std::to_string(r.decisions) + "  (" +
                        Format("%.1f", PerSecond(r.decisions, secs)) + "/s)");
  line("latency us", "p50 " + std::to_string(h.ValueAtQuantile(0.5)) +
                         "  p99 " + std::to_string(h.ValueAtQuantile(0.99)) +
                         "  p999 " + std::to_string(h.ValueAtQuantile(0.999)) +
                         "  (min " + std::to_string(h.min_us()) + ", mean " +
                         Format("%.1f", h.mean_us()) + ", max " +
                         std::to_string(h.max_us()) + ")");
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
             std::to_string(ch.ValueAtQuantile(0.5)) + " us, p99 " +
             std::to_string(ch.ValueAtQuantile(0.99)) + " us");
  }
  line("per conn", "grants min " + std::to_string(per_conn.min) + ", max " +
                       std::to_string(per_conn.max));
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
        {"p50", Ratio(static_cast<double>(bh.ValueAtQuantile(0.5)),
                      static_cast<double>(eh.ValueAtQuantile(0.5)))},
        {"p99", Ratio(static_cast<double>(bh.ValueAtQuantile(0.99)),
                      static_cast<double>(eh.ValueAtQuantile(0.99)))}}}};
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
                "  %-12s %14llu %14llu %10s\n"
                "  %-12s %14llu %14llu %10s\n",
                "", "braked", "echo", "ratio", "decisions/s", bd, ed,
                ratio_text("decisions_per_sec").c_str(), "p50 us",
                static_cast<unsigned long long>(bh.ValueAtQuantile(0.5)),
                static_cast<unsigned long long>(eh.ValueAtQuantile(0.5)),
                ratio_text("p50").c_str(), "p99 us",
                static_cast<unsigned long long>(bh.ValueAtQuantile(0.99)),
                static_cast<unsigned long long>(eh.ValueAtQuantile(0.99)),
                ratio_text("p99").c_str());
  return ReportText(brake) + "\n" + ReportText(echo) + "\n" + table;
}

}  // namespace brake::bench
