// RunLoad: brake-bench's closed-loop, pipelined load against one Unix socket.
//
// N connections each keep D requests in flight: every reply is matched to its
// request by "id", timed from the send() that carried the request to the
// recv() that carried the reply, and answered with the next request at once.
// A fixed number of threads share the connections, each with its own epoll
// set, so nothing is shared on the hot path; per-thread results are merged
// after the threads are joined. All threads use one start time, so the
// warm-up and measured windows are the same for every connection.
//
// Only replies received inside the measured window count. After it, no new
// acquires go out; replies still in flight (and the commits of late grants)
// are drained for up to DrainSeconds(config) (kDrainSeconds plus wait_ms, so
// a parked acquire can still be answered) so the server is not left with
// broken pipes, then the connections close.
//
// With `once`, each connection sends its D acquires at the start and nothing
// more (bar commits); the run ends as soon as every request is answered.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "bench/histogram.h"
#include "common/status.h"

namespace brake::bench {

enum class BenchOp { kAcquire, kPing };

struct LoadConfig {
  std::string socket_path;  // or "A,B,...": connection i uses the (i mod N)-th
  int connections = 16;
  int depth = 16;
  int threads = 1;  // Load threads; clamped to [1, connections].
  double seconds = 10;
  double warmup_seconds = 1;
  BenchOp op = BenchOp::kAcquire;
  std::string user = "bench";
  int users = 1;  // J > 1: connection i acquires for user + "-" + (i % J).
  std::string task_prefix = "bench-";
  int tasks = 0;  // K: connection i uses task prefix + (i % K); 0 means N.
  // Each acquire names its connection's next task instead: connection i
  // cycles through i, i + N, i + 2N, ... below K.
  bool spread = false;
  int64_t tokens = 0;
  bool commit = false;  // Commit every granted lease with `tokens`.
  // With `commit`: each connection keeps up to `hold` granted leases open
  // and, holding more, commits one drawn at random (the new one included),
  // so that leases live for varying times and settle in no order they were
  // granted in, as agents' calls do. 0: each is committed when granted.
  int hold = 0;
  // Width of the wall-clock-aligned windows grants are also counted in.
  int64_t window_ms = 1000;
  // Sent as "wait_ms" on every acquire when > 0: the daemon may park it.
  int64_t wait_ms = 0;
  // Each connection sends `depth` acquires once, at the start; no refills.
  bool once = false;
};

struct LoadResult {
  double measured_seconds = 0;
  int threads = 0;

  // Replies to acquires (or pings), received in the measured window.
  uint64_t decisions = 0;
  LatencyHistogram latency;  // Of those replies, in nanoseconds.
  uint64_t grants = 0;
  uint64_t denials = 0;
  std::map<std::string, uint64_t> denials_by_reason;
  uint64_t errors = 0;  // "ok":false, plus replies matching no request.
  std::map<std::string, uint64_t> errors_by_code;
  uint64_t ok_other = 0;   // "ok":true without "granted" (ping replies).
  uint64_t echoed = 0;     // No "ok" at all: lines from the echo server.
  uint64_t unmatched = 0;  // Replies whose id matched no request (in errors).

  // Commits (with --commit), replies received in the measured window.
  uint64_t commits_ok = 0;
  uint64_t commit_errors = 0;
  std::map<std::string, uint64_t> commit_errors_by_code;
  LatencyHistogram commit_latency;  // In nanoseconds.

  // Grants per connection, index = connection number.
  std::vector<uint64_t> grants_per_connection;
  // Grants per millisecond of the measured window (by receive time on the
  // bench's monotonic clock).
  std::vector<uint32_t> grants_per_ms;
  // The same grants by the millisecond their acquire was sent; those sent
  // during the warm-up are only counted in grants_sent_before.
  std::vector<uint32_t> grant_sends_per_ms;
  uint64_t grants_sent_before = 0;
  // Grants in wall-clock-aligned windows of config.window_ms, as braked's
  // fixed windows are aligned: window k covers CLOCK_REALTIME microseconds
  // [k * w, (k + 1) * w). Entry i is window aligned_first_window + i; the
  // windows span the whole run, so the first and last are partly outside
  // the measured window. aligned_received counts grants by reply time;
  // aligned_certain only those whose send time (taken just before the
  // send()) and reply time (just after the recv()) fall in the same window,
  // so the server decided them inside it.
  int64_t aligned_first_window = 0;
  std::vector<uint32_t> aligned_received;
  std::vector<uint32_t> aligned_certain;
  // Requests still unanswered when the drain gave up.
  uint64_t undrained = 0;

  // Every acquire reply, whenever received (warm-up, measured window or
  // drain), timed from send to reply: the slowest answers, overall and by
  // outcome, and how many came later than wait_ms + kLateSlackMs.
  uint64_t answers = 0;
  uint64_t max_answer_us = 0;
  uint64_t max_grant_answer_us = 0;
  uint64_t max_denial_answer_us = 0;
  uint64_t late_answers = 0;

  // Receive times of the grants counted above, in microseconds from the
  // start of the measured window, ascending; recorded only with wait_ms > 0
  // or once (at most kMaxGrantTimes per load thread).
  bool grant_times_recorded = false;
  std::vector<int64_t> grant_times_us;
};

inline constexpr double kDrainSeconds = 2.0;
inline constexpr int64_t kLateSlackMs = 50;
inline constexpr size_t kMaxGrantTimes = 1000000;

// How long replies still in flight after the measured window are awaited.
inline double DrainSeconds(const LoadConfig& config) {
  return kDrainSeconds + static_cast<double>(config.wait_ms) / 1000.0;
}

// Connects all connections (failing fast, with the reason, if one cannot),
// runs the warm-up and the measured window and returns the merged result.
// Errors: the connect failure; a connection closed or reset by the server
// mid-run ("connection 3 closed by the server 4.2 s into the run"); an
// unparseable stream (a reply line over 16 MiB).
Result<LoadResult> RunLoad(const LoadConfig& config);

}  // namespace brake::bench
