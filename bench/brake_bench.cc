// brake-bench: a closed-loop, pipelined load generator for braked, and the
// echo server that gives its transport floor. This file parses flags and
// calls into bench/ (load.h, echo_server.h, report.h).
//
// Exit codes: 0 ok, 1 error (cannot connect, connection lost mid-run),
// 2 usage.
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include <charconv>
#include <cstdio>
#include <cstring>
#include <exception>
#include <optional>
#include <string>
#include <string_view>
#include <thread>

#include "bench/echo_server.h"
#include "bench/load.h"
#include "bench/report.h"
#include "bench/unix_socket.h"

namespace brake::bench {
namespace {

constexpr const char* kUsage = R"(usage: brake-bench [flags]
       brake-bench --echo-server PATH [--echo-threads N]

Keeps N connections x D pipelined requests in flight against braked for T
seconds (after W seconds of warm-up that are not counted) and reports
throughput, latency, grants, denials and the grant rate over time.

  --socket PATH          braked's socket (default: $BRAKE_SOCKET, else
                         $XDG_RUNTIME_DIR/brake/braked.sock, else
                         /tmp/brake-$UID/braked.sock); PATH,PATH,...: the
                         daemons of a cluster, connection i on the
                         (i mod N)-th
  --connections N        connections (default 16)
  --depth D              requests in flight per connection (default 16);
                         with --commit, commits count towards D
  --seconds T            measured seconds (default 10)
  --warmup-seconds W     warm-up seconds, not counted (default 1)
  --op acquire|ping      request kind (default acquire)
  --user U               acquire user (default bench)
  --users J              with J > 1, connection i acquires for user U-<i % J>
                         (default 1: every connection for U)
  --task-prefix P        connection i acquires for task P<i % K>
                         (default "bench-")
  --tasks K              distinct tasks (default: one per connection)
  --spread               each acquire names its connection's next task
                         instead: connection i cycles through tasks i, i+N,
                         i+2N, ... below K, so that K tasks (a million,
                         say) are all in use
  --tokens N             tokens per acquire, and per commit (default 0)
  --commit               commit each granted lease with --tokens
  --hold N               with --commit: each connection keeps up to N
                         granted leases open and, holding more, commits
                         one drawn at random, so leases live for varying
                         times and settle out of order (default 0: each
                         is committed when granted)
  --wait-ms N            send "wait_ms":N on every acquire (default 0: not
                         sent); replies may then come out of order and the
                         drain after the run waits N ms longer
  --once                 each connection sends its D acquires once, at the
                         start of the measured window, and no more; the
                         run ends when all are answered (or after T
                         seconds). The warm-up (default 0 here) is then an
                         idle pause after connecting, so the server has
                         accepted every connection before the burst
  --threads N            load threads (default: cores - 1, at least 1)
  --window-ms W          width of the wall-clock-aligned windows grants are
                         also counted in (default 1000)
  --echo                 run against an in-process echo server instead
  --compare-echo         run against braked, then the echo server; print
                         both and the braked/echo ratios
  --echo-server PATH     only serve echo on PATH until SIGINT/SIGTERM
  --echo-threads N       echo server threads (default 1, like braked)
  --json                 print one JSON object instead of text
  -h, --help             this text

Replies are matched by "id"; latency runs from the send() carrying the
request to the recv() carrying its reply, in microseconds (log-linear
histogram, < 0.8 % error). Only replies received in the measured window
count. Grant times are receive times on the bench's monotonic clock, at
millisecond resolution: "max_grants_rolling_1s" is the most grants received
in any 1000 consecutive milliseconds, so jitter in reply latency can shift a
grant across a window edge and show a few more than a limit allows.
"max_grants_certain_1s" counts only grants whose whole send-to-reply interval
lies inside one 1000 ms window: a lower bound on what the server granted in
some second of its own time, so a figure above a limit proves a violation.
"max_grants_aligned_window_certain" counts grants in windows of --window-ms
aligned to the wall clock as braked's fixed windows are (window start =
floor(now_us / W_us) * W_us, CLOCK_REALTIME), counting a grant only when its
send time and its reply time fall in the same window: again a lower bound,
so a figure above a fixed_window limit of the same width proves a violation.
"max_grants_aligned_window_received" is the fullest aligned window by reply
time, for reference. Aligned windows cover the whole run, so the first and
last are partial.

Waiting: "timeouts" and "queue_full" count denials with those reasons in
the measured window.
"answers" is every acquire reply, whenever received (warm-up, measured window
or drain); "max_answer_ms" is the longest send-to-reply time among them (and
"max_grant_answer_ms", "max_denial_answer_ms" by outcome), and "late_answers"
those slower than wait_ms + 50 ms. Requests never answered count in
"undrained", not here. Per task: connection i acquires for task i % K;
"grants_per_task" is the least and most granted task and "task_share_ratio"
most / least (null when some task got nothing). "grant_spacing_ms": the gaps
between consecutive grants received in the measured window (receive times,
sorted, all connections), and the first and last grant's time from its start.

JSON fields: target, socket, op, connections, depth, threads, seconds,
warmup_seconds, user, users, task_prefix, tasks, tokens, commit, hold, decisions,
decisions_per_sec, latency_us {min, mean, p50, p90, p99, p999, max}, grants,
denials, denials_by_reason {reason: n}, errors, errors_by_code {code: n},
ok_other, echoed, grants_per_connection {min, max}, grants_per_second [n...],
max_grants_rolling_1s, max_grants_rolling_1s_start_ms,
max_grants_certain_1s, max_grants_certain_1s_start_ms, window_ms,
max_grants_aligned_window_certain,
max_grants_aligned_window_certain_start_unix_ms,
max_grants_aligned_window_received,
max_grants_aligned_window_received_start_unix_ms, total_grants, undrained,
grants_per_task {min, max}, task_share_ratio, wait_ms, once, timeouts,
queue_full, answers, max_answer_ms, max_grant_answer_ms,
max_denial_answer_ms, late_answers, grant_spacing_ms {grants, first, last,
min, p50, mean, max} (null without --wait-ms or --once, or with under 2
grants), and with --commit: commits {ok, errors, errors_by_code, per_sec,
latency_us}. --compare-echo: {braked: {...}, echo: {...}, ratio:
{decisions_per_sec, p50, p99}}.
)";

struct Flags {
  LoadConfig load;
  bool echo = false;
  bool compare_echo = false;
  bool json = false;
  int echo_threads = 1;
  std::optional<std::string> echo_server_path;
};

int Usage(const std::string& problem) {
  std::fprintf(stderr, "brake-bench: %s\n(see brake-bench --help)\n",
               problem.c_str());
  return 2;
}

bool ParseInt(std::string_view s, int64_t lo, int64_t hi, int64_t* out) {
  int64_t v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size() || v < lo || v > hi) {
    return false;
  }
  *out = v;
  return true;
}

bool ParseSeconds(const std::string& s, double lo, double* out) {
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  if (s.empty() || end != s.c_str() + s.size() || !(v >= lo) || v > 1e6) {
    return false;
  }
  *out = v;
  return true;
}

// Parses argv into `flags`; returns an exit code when the program should
// stop (0 after --help, 2 on a usage error).
std::optional<int> ParseFlags(int argc, char** argv, Flags* flags) {
  LoadConfig& load = flags->load;
  const unsigned cores = std::thread::hardware_concurrency();
  load.threads = cores > 1 ? static_cast<int>(cores) - 1 : 1;
  bool socket_set = false;
  bool warmup_set = false;

  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    std::optional<std::string> inline_value;
    if (arg.rfind("--", 0) == 0) {
      const size_t eq = arg.find('=');
      if (eq != std::string::npos) {
        inline_value = arg.substr(eq + 1);
        arg.resize(eq);
      }
    }
    auto value = [&](std::string* out) {
      if (inline_value) {
        *out = *inline_value;
        return true;
      }
      if (i + 1 >= argc) return false;
      *out = argv[++i];
      return true;
    };
    auto int_flag = [&](int64_t lo, int64_t hi, int64_t* out) -> bool {
      std::string v;
      return value(&v) && ParseInt(v, lo, hi, out);
    };
    auto bad = [&](const char* expect) {
      return Usage(arg + " needs " + expect);
    };
    int64_t n = 0;
    std::string v;

    if (arg == "-h" || arg == "--help") {
      std::fputs(kUsage, stdout);
      return 0;
    } else if (arg == "--socket") {
      if (!value(&load.socket_path) || load.socket_path.empty()) {
        return bad("a path");
      }
      socket_set = true;
    } else if (arg == "--connections") {
      if (!int_flag(1, 100000, &n)) return bad("an integer in [1, 100000]");
      load.connections = static_cast<int>(n);
    } else if (arg == "--depth") {
      if (!int_flag(1, 65536, &n)) return bad("an integer in [1, 65536]");
      load.depth = static_cast<int>(n);
    } else if (arg == "--seconds") {
      if (!value(&v) || !ParseSeconds(v, 0.001, &load.seconds)) {
        return bad("a number of seconds > 0");
      }
    } else if (arg == "--warmup-seconds") {
      if (!value(&v) || !ParseSeconds(v, 0, &load.warmup_seconds)) {
        return bad("a number of seconds >= 0");
      }
      warmup_set = true;
    } else if (arg == "--op") {
      if (!value(&v) || (v != "acquire" && v != "ping")) {
        return bad("acquire or ping");
      }
      load.op = v == "ping" ? BenchOp::kPing : BenchOp::kAcquire;
    } else if (arg == "--user") {
      if (!value(&load.user) || load.user.empty()) return bad("a name");
    } else if (arg == "--users") {
      if (!int_flag(1, 100000000, &n)) return bad("an integer >= 1");
      load.users = static_cast<int>(n);
    } else if (arg == "--task-prefix") {
      if (!value(&load.task_prefix)) return bad("a prefix");
    } else if (arg == "--tasks") {
      if (!int_flag(1, 100000000, &n)) return bad("an integer >= 1");
      load.tasks = static_cast<int>(n);
    } else if (arg == "--tokens") {
      if (!int_flag(0, INT64_MAX, &n)) return bad("an integer >= 0");
      load.tokens = n;
    } else if (arg == "--threads") {
      if (!int_flag(1, 1024, &n)) return bad("an integer in [1, 1024]");
      load.threads = static_cast<int>(n);
    } else if (arg == "--window-ms") {
      if (!int_flag(1, 86400000, &n)) {
        return bad("an integer in [1, 86400000]");
      }
      load.window_ms = n;
    } else if (arg == "--hold") {
      if (!int_flag(0, 1000000, &n)) return bad("an integer in [0, 1000000]");
      load.hold = static_cast<int>(n);
    } else if (arg == "--wait-ms") {
      if (!int_flag(0, 86400000, &n)) {
        return bad("an integer in [0, 86400000]");
      }
      load.wait_ms = n;
    } else if (arg == "--echo-threads") {
      if (!int_flag(1, 1024, &n)) return bad("an integer in [1, 1024]");
      flags->echo_threads = static_cast<int>(n);
    } else if (arg == "--echo-server") {
      if (!value(&v) || v.empty()) return bad("a path");
      flags->echo_server_path = v;
    } else if (arg == "--commit" || arg == "--once" || arg == "--echo" ||
               arg == "--compare-echo" || arg == "--json" ||
               arg == "--spread") {
      if (inline_value) return Usage(arg + " takes no value");
      if (arg == "--commit") load.commit = true;
      if (arg == "--spread") load.spread = true;
      if (arg == "--once") load.once = true;
      if (arg == "--echo") flags->echo = true;
      if (arg == "--compare-echo") flags->compare_echo = true;
      if (arg == "--json") flags->json = true;
    } else {
      return Usage("unknown argument " + arg);
    }
  }
  if (flags->echo && flags->compare_echo) {
    return Usage("--echo and --compare-echo exclude each other");
  }
  if (flags->echo && socket_set) {
    return Usage("--echo runs against its own server; drop --socket");
  }
  if (load.hold > 0 && !load.commit) return Usage("--hold needs --commit");
  if (load.once) {
    if (load.op != BenchOp::kAcquire) return Usage("--once needs --op acquire");
    if (!warmup_set) load.warmup_seconds = 0;
  }
  if (!socket_set) load.socket_path = BenchSocketPath();
  return std::nullopt;
}

// Serves echo on `path` in the foreground until SIGINT or SIGTERM.
int RunEchoServer(const std::string& path, int threads) {
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  // Blocked before the server's threads start, so they inherit the mask and
  // only sigwait below sees the signals.
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  EchoServer server;
  const Status started = server.Start(path, threads);
  if (!started.ok()) {
    std::fprintf(stderr, "brake-bench: echo server: %s\n",
                 started.message().c_str());
    return 1;
  }
  std::fprintf(stderr, "brake-bench: echo server on %s (%d thread%s)\n",
               path.c_str(), threads, threads == 1 ? "" : "s");
  int sig = 0;
  sigwait(&stop_signals, &sig);
  server.Stop();
  std::fprintf(stderr, "brake-bench: echo server stopped (%s)\n",
               sig == SIGINT ? "SIGINT" : "SIGTERM");
  return 0;
}

// Runs the load against braked; prints why and returns nullopt on failure.
std::optional<RunReport> RunAgainstBraked(const LoadConfig& config) {
  Result<LoadResult> result = RunLoad(config);
  if (!result.ok()) {
    const bool connect_failed =
        result.status().message().rfind("connect ", 0) == 0;
    std::fprintf(stderr, "brake-bench: %s%s\n",
                 result.status().message().c_str(),
                 connect_failed ? "\nbrake-bench: is braked running? Set "
                                  "--socket or BRAKE_SOCKET."
                                : "");
    return std::nullopt;
  }
  return RunReport{"braked", config, std::move(result.value())};
}

// Starts an echo server on a fresh temporary socket, runs the same load
// against it and removes the socket again.
std::optional<RunReport> RunAgainstEcho(LoadConfig config, int echo_threads) {
  char dir_template[] = "/tmp/brake-bench-XXXXXX";
  const char* dir = mkdtemp(dir_template);
  if (dir == nullptr) {
    std::fprintf(stderr, "brake-bench: mkdtemp: %s\n", std::strerror(errno));
    return std::nullopt;
  }
  const std::string path = std::string(dir) + "/echo.sock";
  std::optional<RunReport> report;
  {
    EchoServer server;
    const Status started = server.Start(path, echo_threads);
    if (!started.ok()) {
      std::fprintf(stderr, "brake-bench: echo server: %s\n",
                   started.message().c_str());
    } else {
      config.socket_path = path;
      Result<LoadResult> result = RunLoad(config);
      if (result.ok()) {
        report = RunReport{"echo", config, std::move(result.value())};
      } else {
        std::fprintf(stderr, "brake-bench: echo run: %s\n",
                     result.status().message().c_str());
      }
    }
  }  // Stops the server and unlinks the socket.
  rmdir(dir);
  return report;
}

int Main(int argc, char** argv) {
  Flags flags;
  if (std::optional<int> stop = ParseFlags(argc, argv, &flags)) return *stop;
  signal(SIGPIPE, SIG_IGN);  // Writes use MSG_NOSIGNAL too; belt and braces.

  if (flags.echo_server_path) {
    return RunEchoServer(*flags.echo_server_path, flags.echo_threads);
  }
  if (flags.echo) {
    std::optional<RunReport> echo =
        RunAgainstEcho(flags.load, flags.echo_threads);
    if (!echo) return 1;
    std::fputs(flags.json ? (ReportJson(*echo).dump() + "\n").c_str()
                          : ReportText(*echo).c_str(),
               stdout);
    return 0;
  }
  std::optional<RunReport> brake = RunAgainstBraked(flags.load);
  if (!brake) return 1;
  if (!flags.compare_echo) {
    std::fputs(flags.json ? (ReportJson(*brake).dump() + "\n").c_str()
                          : ReportText(*brake).c_str(),
               stdout);
    return 0;
  }
  std::optional<RunReport> echo =
      RunAgainstEcho(flags.load, flags.echo_threads);
  if (!echo) return 1;
  std::fputs(flags.json ? (CompareJson(*brake, *echo).dump() + "\n").c_str()
                        : CompareText(*brake, *echo).c_str(),
             stdout);
  return 0;
}

}  // namespace
}  // namespace brake::bench

int main(int argc, char** argv) {
  try {
    return brake::bench::Main(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "brake-bench: internal error: %s\n", e.what());
  } catch (...) {
    std::fprintf(stderr, "brake-bench: internal error\n");
  }
  return 1;
}
