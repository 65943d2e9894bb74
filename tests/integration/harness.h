// Integration harness: a real braked in a temporary directory, talked to over
// its Unix socket with real JSON lines.
//
// TempDir owns a fresh directory (mkdtemp) and removes it recursively when
// destroyed. Daemon spawns BRAKED_PATH with --socket/--db/--config inside a
// directory, sends its stderr to a log file there, and waits until the
// socket accepts; its destructor SIGKILLs and reaps a daemon still running,
// so a failing REQUIRE never leaks a process. Declare the TempDir before the
// Daemon so the daemon dies before its directory goes. Client is a blocking
// line-oriented connection with a read timeout, so a silent daemon fails a
// test instead of hanging it. RunProgram runs brakectl or brake-bench and
// captures its output.
//
// BRAKE_DAEMON_WRAPPER (e.g. "valgrind --error-exitcode=99 --leak-check=full")
// runs every daemon under that command (tests/valgrind/run): start and stop
// may then take longer, the destructor stops a running daemon with SIGTERM
// instead of SIGKILL so that the wrapper sees a normal exit, and any exit
// with the wrapper's --error-exitcode fails the test, with the daemon's log
// (where the wrapper writes its report).
//
// Test thread only; nothing here is thread-safe.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace brake::integration {

using json = nlohmann::json;

// True when BRAKE_DAEMON_WRAPPER is set: daemons run (much) slower.
bool DaemonWrapped();

// Milliseconds of CLOCK_REALTIME and of CLOCK_MONOTONIC.
int64_t WallMs();
int64_t MonoMs();

// Sleeps `ms` milliseconds (through EINTR).
void SleepMs(int64_t ms);

// Sleeps the 10 ms between two polls of PollUntil.
void PollPause();

// Polls `done` every 10 ms for up to `timeout_ms`; true once it holds.
template <typename Fn>
bool PollUntil(Fn done, int64_t timeout_ms) {
  const int64_t deadline = MonoMs() + timeout_ms;
  while (!done()) {
    if (MonoMs() >= deadline) return false;
    PollPause();
  }
  return true;
}

class TempDir {
 public:
  TempDir();  // throws std::runtime_error when mkdtemp fails
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::string& path() const { return path_; }
  // path()/name.
  std::string File(std::string_view name) const;

 private:
  std::string path_;
};

// Writes `text` to `path` (truncating); throws on failure.
void WriteFile(const std::string& path, const std::string& text);
// The whole file, or "" when it cannot be read.
std::string ReadFile(const std::string& path);
bool FileExists(const std::string& path);

class Client;

class Daemon {
 public:
  // A daemon listening on dir/braked.sock with its database at dir/NAME.db,
  // its log at dir/NAME.log and, when `config` is not null, its config file
  // at dir/NAME.json. Daemons sharing `dir` share the socket path.
  explicit Daemon(const std::string& dir, const json& config = nullptr,
                  const std::string& name = "braked");
  ~Daemon();  // SIGKILLs and reaps a daemon that still runs
  Daemon(const Daemon&) = delete;
  Daemon& operator=(const Daemon&) = delete;

  // Spawns the daemon and waits (polling connect every 10 ms, up to 5 s)
  // until its socket accepts. False when it exited or never accepted; the
  // log tells why (see log()).
  bool Start();
  // Spawns the daemon without waiting for anything.
  void Spawn();
  // Waits up to `timeout_ms` for the daemon to exit; its exit status as
  // Stop() reports it, or nullopt when it still runs.
  // An exit with the wrapper's error code fails the running test.
  std::optional<int> WaitExit(int64_t timeout_ms);
  // Sends `signal` and waits up to 10 s for the exit. Returns the exit code,
  // 128 + N when killed by signal N, or -1 when it did not exit in time (it
  // is then SIGKILLed).
  int Stop(int signal = 15 /* SIGTERM */);
  // SIGKILL, then reap. Under a wrapper nothing is checked then.
  void Kill9();
  // Stop(SIGTERM) when running, then Start(). False when either failed.
  bool Restart();

  bool running() const { return pid_ > 0; }
  pid_t pid() const { return pid_; }
  const std::string& socket_path() const { return socket_path_; }
  const std::string& db_path() const { return db_path_; }
  const std::string& log_path() const { return log_path_; }
  const std::string& config_path() const { return config_path_; }
  // Everything the daemon logged in this directory so far, over restarts.
  std::string log() const { return ReadFile(log_path_); }

  // A new blocking connection to the socket; throws when it cannot connect.
  Client Connect() const;

 private:
  void ReportWrapperErrors(int code) const;

  std::string socket_path_;
  std::string db_path_;
  std::string log_path_;
  std::string config_path_;  // "" when there is no config file
  pid_t pid_ = -1;
};

class Client {
 public:
  // Connects to `socket_path`; throws std::runtime_error on failure.
  explicit Client(const std::string& socket_path);
  ~Client();
  Client(Client&& other) noexcept;
  Client& operator=(Client&&) = delete;
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  // Writes all of `bytes`; throws on failure.
  void SendRaw(std::string_view bytes);
  // SendRaw(line + "\n").
  void SendLine(std::string_view line);
  // The next line without its '\n'; nullopt at end of stream. Throws when
  // nothing complete arrives within `timeout_ms`.
  std::optional<std::string> ReadLine(int64_t timeout_ms = 5000);
  // Sends `request` as one line and parses the reply line; throws when the
  // connection closes, times out or the reply is not JSON.
  json Call(const json& request);
  // True when the peer closed the stream (after any unread lines, which are
  // discarded) within `timeout_ms`.
  bool WaitForEof(int64_t timeout_ms = 5000);

 private:
  int fd_ = -1;
  std::string buffer_;
  bool eof_ = false;
};

// A TempDir with a started Daemon in it (default name and socket); throws
// std::runtime_error with the daemon's log when it does not start. Members
// are destroyed daemon first, then the directory.
struct RunningDaemon {
  explicit RunningDaemon(const json& config = nullptr);

  TempDir dir;
  Daemon daemon;
};

struct ProgramResult {
  int exit_code = -1;  // 128 + N when killed by signal N
  std::string out;
  std::string err;
};

// Runs `argv` (argv[0] is a path), stdin from /dev/null, capturing stdout
// and stderr. Kills it after `timeout_ms` (exit_code then -1).
ProgramResult RunProgram(const std::vector<std::string>& argv,
                         int64_t timeout_ms = 30000);

// brakectl --socket SOCKET ARGS...
ProgramResult RunBrakectl(const std::string& socket_path,
                          const std::vector<std::string>& args);

// The value of the Prometheus sample `name` (exact, labels included) in
// `text`, or nullopt.
std::optional<double> MetricValue(const std::string& text,
                                  const std::string& name);

}  // namespace brake::integration
