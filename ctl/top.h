// `brakectl top`: a live view of braked, redrawn every interval like top(1).
//
// Everything comes from the wire: each frame sends `metrics` (Prometheus
// text, read by prometheus.h), `breaker.list` and `top` (by user and by
// task; see top_subjects.h) on one connection, kept open between frames and
// reopened after a failure. Counters become rates
// from the difference between two frames divided by the time between them
// (a counter that went down, as after a daemon restart, counts from zero, as
// Prometheus' rate() does); the first frame has totals but no rates. The
// request rate leaves out top's own requests.
//
// The parts are separate so tests can check each: ComputeFrame() (figures
// from two snapshots) and RenderFrame() / FrameJson() are pure; RunTop()
// drives the loop through RunContext (transport, Terminal for clocks, keys
// and signals, output streams). One thread.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/status.h"
#include "ctl/args.h"
#include "ctl/commands.h"
#include "ctl/prometheus.h"
#include "ctl/top_subjects.h"

namespace brake::ctl {

constexpr int64_t kTopDefaultIntervalMs = 1000;
constexpr int64_t kTopMinIntervalMs = 100;
constexpr int64_t kTopMaxIntervalMs = 3600000;

// One reading of the daemon.
struct TopSnapshot {
  int64_t at_ms = 0;  // monotonic time the metrics reply arrived
  // Requests top itself had sent by then; the requests rate leaves them out.
  int64_t own_requests = 0;
  MetricSet metrics;
  nlohmann::json breakers;     // breaker.list's "breakers"; null when missing
  std::string breakers_error;  // why they are missing ("forbidden: ...")
  // The `top` op's busiest users and tasks; nullopt when the daemon has no
  // such op (an older braked) or refused it (then `subjects_error` says why).
  std::optional<std::vector<SubjectRow>> busiest_users, busiest_tasks;
  std::string subjects_error;
};

// A counter's value now and its rate over the last interval; either is
// nullopt when unknown (no such metric; no previous frame).
struct Rated {
  std::optional<double> total;
  std::optional<double> per_s;
};

// The figures of one frame.
struct TopFrame {
  int64_t interval_ms = 0;  // since the previous snapshot; 0 on the first
  Rated granted;
  Rated denied;
  // Denial reasons whose total is above zero, in the daemon's order.
  std::vector<std::pair<std::string, Rated>> denied_by_reason;
  Rated requests, commits, cancels, errors;
  std::optional<double> leases_open, connections, tasks, waiters;
  std::optional<double> breakers_open, breakers_half_open;  // gauges
  std::optional<double> storage_ok;                         // 1 or 0
  Rated storage_batches;
  std::optional<double> storage_failures;
  // Mean seconds per storage commit over the interval (delta of
  // brake_storage_commit_seconds_total / delta of batches); on the first
  // frame the mean since the daemon started (commit_since_start).
  std::optional<double> commit_ms;
  bool commit_since_start = false;
  Rated spend_tokens, spend_usd;
  nlohmann::json breakers;  // as in TopSnapshot
  std::string breakers_error;
  std::optional<std::vector<RatedSubject>> busiest_users, busiest_tasks;
  std::string subjects_error;
};

// The figures of `current`, with rates against `previous` (nullptr on the
// first frame).
TopFrame ComputeFrame(const TopSnapshot* previous, const TopSnapshot& current);

// What the first line of a frame says.
struct FrameHeader {
  std::string socket_path;
  int64_t wall_ms = 0;      // printed as HH:MM:SS UTC
  int64_t interval_ms = 0;  // the refresh interval asked for
  bool keys = false;        // mention "q quits"
};

// The lines of `frame` (without newlines). With `max_lines` > 0 at most that
// many (the breakers table is cut, ending in "... N more"); with
// `max_columns` > 0 no line is wider.
std::vector<std::string> RenderFrame(const TopFrame& frame,
                                     const FrameHeader& header, int max_lines,
                                     int max_columns);

// `--json`: one object per frame, absent figures as null:
// {"time_ms","interval_ms","acquires":{"granted":{"total","per_s"},
//  "denied":{"total","per_s","by_reason":{REASON:{"total","per_s"}}}},
//  "requests","commits","cancels","errors" (each {"total","per_s"}),
//  "leases_open","connections","tasks","waiters",
//  "storage":{"ok","batches":{...},"failures","commit_ms"},
//  "spend":{"tokens":{...},"usd":{...}},"breakers":[...],
//  "busiest_users":[...],"busiest_tasks":[...] (SubjectsJson; null without
//  the top op)}
nlohmann::json FrameJson(const TopFrame& frame, int64_t wall_ms);

// The command table's build step: checks --interval-ms and --iterations.
Status BuildTop(const ParsedArgs& args, const BuildContext& context,
                nlohmann::json* request);

// Runs top with `request` {"interval_ms"?, "iterations"?}: draws frames
// until `q`, a stop signal or `iterations` frames. Interactive (output is a
// terminal and no --json): each frame redraws the screen in place, errors
// show in the frame. Otherwise frames are appended, separated by a blank
// line, and errors go to `err`. Returns 0, or 1 when any frame could not
// be fetched (the daemon unreachable, a malformed reply).
int RunTop(const nlohmann::json& request, RunContext& context);

}  // namespace brake::ctl
