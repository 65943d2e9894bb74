#include "tests/integration/harness.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include <catch2/catch.hpp>

extern char** environ;

namespace brake::integration {
namespace {

constexpr int64_t kStartTimeoutMs = 5000;
constexpr int64_t kPollIntervalMs = 10;
constexpr int64_t kStopTimeoutMs = 10000;
// How much longer starting and stopping may take under a wrapper (valgrind
// runs braked some 20-50 times slower and checks for leaks at exit).
constexpr int64_t kWrapperSlowdown = 12;

std::string Errno(const std::string& what) {
  return what + ": " + std::strerror(errno);
}

int64_t ClockMs(clockid_t clock) {
  timespec ts;
  clock_gettime(clock, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000 + ts.tv_nsec / 1'000'000;
}

// A connected Unix stream socket, or -1.
int ConnectUnix(const std::string& path) {
  sockaddr_un addr{};
  if (path.size() >= sizeof(addr.sun_path)) return -1;
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

int DecodeWaitStatus(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return -1;
}

// Owns posix_spawn file actions.
class FileActions {
 public:
  FileActions() { posix_spawn_file_actions_init(&actions_); }
  ~FileActions() { posix_spawn_file_actions_destroy(&actions_); }
  posix_spawn_file_actions_t* get() { return &actions_; }

 private:
  posix_spawn_file_actions_t actions_;
};

pid_t SpawnOrThrow(const std::vector<std::string>& argv, FileActions& actions) {
  std::vector<char*> args;
  for (const std::string& a : argv)
    args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = -1;
  // spawnp: a wrapper (BRAKE_DAEMON_WRAPPER) may be named without a path.
  int rc = posix_spawnp(&pid, argv[0].c_str(), actions.get(), nullptr,
                        args.data(), environ);
  if (rc != 0) {
    throw std::runtime_error("posix_spawn " + argv[0] + ": " +
                             std::strerror(rc));
  }
  return pid;
}

// BRAKE_DAEMON_WRAPPER split on blanks; empty when unset.
const std::vector<std::string>& Wrapper() {
  static const std::vector<std::string> words = [] {
    std::vector<std::string> out;
    const char* env = std::getenv("BRAKE_DAEMON_WRAPPER");
    std::istringstream in(env != nullptr ? env : "");
    for (std::string word; in >> word;) out.push_back(word);
    return out;
  }();
  return words;
}

// The exit code the wrapper reports its findings with (valgrind's
// --error-exitcode=N), or -1.
int WrapperErrorCode() {
  const std::string flag = "--error-exitcode=";
  for (const std::string& word : Wrapper()) {
    if (word.rfind(flag, 0) == 0) return std::atoi(word.c_str() + flag.size());
  }
  return -1;
}

int64_t Scaled(int64_t timeout_ms) {
  return Wrapper().empty() ? timeout_ms : timeout_ms * kWrapperSlowdown;
}

}  // namespace

bool DaemonWrapped() { return !Wrapper().empty(); }

int64_t WallMs() { return ClockMs(CLOCK_REALTIME); }
int64_t MonoMs() { return ClockMs(CLOCK_MONOTONIC); }

void SleepMs(int64_t ms) {
  timespec ts{static_cast<time_t>(ms / 1000),
              static_cast<long>((ms % 1000) * 1'000'000)};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}

void PollPause() { SleepMs(kPollIntervalMs); }

// ---------------------------------------------------------------- TempDir

TempDir::TempDir() {
  const char* base = std::getenv("TMPDIR");
  // Short paths: sun_path holds only 107 bytes.
  std::string pattern = std::string(base != nullptr && *base ? base : "/tmp") +
                        "/brake-it-XXXXXX";
  std::vector<char> buf(pattern.begin(), pattern.end());
  buf.push_back('\0');
  if (mkdtemp(buf.data()) == nullptr)
    throw std::runtime_error(Errno("mkdtemp"));
  path_ = buf.data();
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

std::string TempDir::File(std::string_view name) const {
  return path_ + "/" + std::string(name);
}

void WriteFile(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  if (!out.good()) throw std::runtime_error("cannot write " + path);
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

bool FileExists(const std::string& path) {
  return access(path.c_str(), F_OK) == 0;
}

// ----------------------------------------------------------------- Daemon

Daemon::Daemon(const std::string& dir, const json& config,
               const std::string& name)
    : socket_path_(dir + "/braked.sock"),
      db_path_(dir + "/" + name + ".db"),
      log_path_(dir + "/" + name + ".log") {
  if (!config.is_null()) {
    config_path_ = dir + "/" + name + ".json";
    WriteFile(config_path_, config.dump(2));
  }
}

Daemon::~Daemon() {
  // Under a wrapper the daemon must exit by itself, so that valgrind checks
  // for leaks; WaitExit() reports what it found.
  if (running() && DaemonWrapped()) Stop();
  if (running()) Kill9();
}

void Daemon::Spawn() {
  if (running()) throw std::runtime_error("Daemon::Spawn: already running");
  std::vector<std::string> argv = Wrapper();
  for (const char* arg : {BRAKED_PATH, "--socket", socket_path_.c_str(),
                          "--db", db_path_.c_str()}) {
    argv.emplace_back(arg);
  }
  if (!config_path_.empty()) {
    argv.push_back("--config");
    argv.push_back(config_path_);
  }
  FileActions actions;
  posix_spawn_file_actions_addopen(actions.get(), 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(actions.get(), 1, log_path_.c_str(),
                                   O_WRONLY | O_CREAT | O_APPEND, 0644);
  posix_spawn_file_actions_adddup2(actions.get(), 1, 2);
  pid_ = SpawnOrThrow(argv, actions);
}

bool Daemon::Start() {
  Spawn();
  const int64_t deadline = MonoMs() + Scaled(kStartTimeoutMs);
  while (true) {
    if (WaitExit(0).has_value()) return false;
    int fd = ConnectUnix(socket_path_);
    if (fd >= 0) {
      close(fd);
      return true;
    }
    if (MonoMs() >= deadline) {
      Kill9();
      return false;
    }
    SleepMs(kPollIntervalMs);
  }
}

std::optional<int> Daemon::WaitExit(int64_t timeout_ms) {
  if (!running()) return std::nullopt;
  const int64_t deadline = MonoMs() + timeout_ms;
  while (true) {
    int status = 0;
    pid_t r = waitpid(pid_, &status, WNOHANG);
    if (r == pid_) {
      pid_ = -1;
      const int code = DecodeWaitStatus(status);
      if (WrapperErrorCode() >= 0 && code == WrapperErrorCode()) {
        ReportWrapperErrors(code);
      }
      return code;
    }
    if (r < 0 && errno != EINTR) {
      pid_ = -1;
      return -1;
    }
    if (MonoMs() >= deadline) return std::nullopt;
    SleepMs(2);
  }
}

int Daemon::Stop(int signal) {
  if (!running()) return -1;
  kill(pid_, signal);
  std::optional<int> code = WaitExit(Scaled(kStopTimeoutMs));
  if (code.has_value()) return *code;
  Kill9();
  return -1;
}

void Daemon::Kill9() {
  if (!running()) return;
  kill(pid_, SIGKILL);
  int status = 0;
  while (waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
  }
  pid_ = -1;
}

void Daemon::ReportWrapperErrors(int code) const {
  const std::string message =
      "braked exited " + std::to_string(code) + ", the error exit code of " +
      "its wrapper (BRAKE_DAEMON_WRAPPER); its log " + log_path_ + ":\n" +
      log();
  // A destructor may run while a failed REQUIRE unwinds; Catch must not
  // be asked then, and the test fails anyway.
  if (std::uncaught_exceptions() > 0) {
    std::fprintf(stderr, "%s\n", message.c_str());
  } else {
    FAIL_CHECK(message);
  }
}

bool Daemon::Restart() {
  if (running() && Stop() != 0) return false;
  return Start();
}

Client Daemon::Connect() const { return Client(socket_path_); }

RunningDaemon::RunningDaemon(const json& config) : daemon(dir.path(), config) {
  if (!daemon.Start()) {
    throw std::runtime_error("braked did not start; its log:\n" + daemon.log());
  }
}

// ----------------------------------------------------------------- Client

Client::Client(const std::string& socket_path) {
  fd_ = ConnectUnix(socket_path);
  if (fd_ < 0) throw std::runtime_error(Errno("connect " + socket_path));
}

Client::~Client() {
  if (fd_ >= 0) close(fd_);
}

Client::Client(Client&& other) noexcept
    : fd_(other.fd_), buffer_(std::move(other.buffer_)), eof_(other.eof_) {
  other.fd_ = -1;
}

void Client::SendRaw(std::string_view bytes) {
  while (!bytes.empty()) {
    ssize_t n = send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw std::runtime_error(Errno("send"));
    }
    bytes.remove_prefix(static_cast<size_t>(n));
  }
}

void Client::SendLine(std::string_view line) {
  std::string data(line);
  data.push_back('\n');
  SendRaw(data);
}

std::optional<std::string> Client::ReadLine(int64_t timeout_ms) {
  const int64_t deadline = MonoMs() + timeout_ms;
  while (true) {
    size_t nl = buffer_.find('\n');
    if (nl != std::string::npos) {
      std::string line = buffer_.substr(0, nl);
      buffer_.erase(0, nl + 1);
      return line;
    }
    if (eof_) return std::nullopt;
    int64_t left = deadline - MonoMs();
    if (left <= 0) {
      throw std::runtime_error("no reply line within " +
                               std::to_string(timeout_ms) + " ms");
    }
    pollfd p{fd_, POLLIN, 0};
    int r = poll(&p, 1, static_cast<int>(left));
    if (r < 0 && errno != EINTR) throw std::runtime_error(Errno("poll"));
    if (r <= 0) continue;
    char chunk[65536];
    ssize_t n = recv(fd_, chunk, sizeof(chunk), 0);
    if (n < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      if (errno == ECONNRESET) {
        eof_ = true;
        continue;
      }
      throw std::runtime_error(Errno("recv"));
    }
    if (n == 0) {
      eof_ = true;
      continue;
    }
    buffer_.append(chunk, static_cast<size_t>(n));
  }
}

json Client::Call(const json& request) {
  SendLine(request.dump());
  std::optional<std::string> line = ReadLine();
  if (!line.has_value()) {
    throw std::runtime_error("connection closed instead of answering " +
                             request.dump());
  }
  json reply = json::parse(*line, nullptr, /*allow_exceptions=*/false);
  if (reply.is_discarded()) {
    throw std::runtime_error("reply is not JSON: " + *line);
  }
  return reply;
}

bool Client::WaitForEof(int64_t timeout_ms) {
  const int64_t deadline = MonoMs() + timeout_ms;
  try {
    while (ReadLine(deadline - MonoMs()).has_value()) {
    }
  } catch (const std::runtime_error&) {
    return false;
  }
  return true;
}

// --------------------------------------------------------------- Programs

ProgramResult RunProgram(const std::vector<std::string>& argv,
                         int64_t timeout_ms) {
  int out_pipe[2];
  int err_pipe[2];
  if (pipe2(out_pipe, O_CLOEXEC) != 0) throw std::runtime_error(Errno("pipe"));
  if (pipe2(err_pipe, O_CLOEXEC) != 0) {
    close(out_pipe[0]);
    close(out_pipe[1]);
    throw std::runtime_error(Errno("pipe"));
  }
  pid_t pid = -1;
  {
    FileActions actions;
    posix_spawn_file_actions_addopen(actions.get(), 0, "/dev/null", O_RDONLY,
                                     0);
    posix_spawn_file_actions_adddup2(actions.get(), out_pipe[1], 1);
    posix_spawn_file_actions_adddup2(actions.get(), err_pipe[1], 2);
    try {
      pid = SpawnOrThrow(argv, actions);
    } catch (...) {
      for (int fd : {out_pipe[0], out_pipe[1], err_pipe[0], err_pipe[1]}) {
        close(fd);
      }
      throw;
    }
  }
  close(out_pipe[1]);
  close(err_pipe[1]);

  ProgramResult result;
  pollfd fds[2] = {{out_pipe[0], POLLIN, 0}, {err_pipe[0], POLLIN, 0}};
  std::string* sinks[2] = {&result.out, &result.err};
  int open_fds = 2;
  bool timed_out = false;
  const int64_t deadline = MonoMs() + timeout_ms;
  while (open_fds > 0) {
    int64_t left = deadline - MonoMs();
    if (left <= 0) {
      timed_out = true;
      kill(pid, SIGKILL);
      break;
    }
    int r = poll(fds, 2, static_cast<int>(left));
    if (r < 0 && errno != EINTR) break;
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || fds[i].revents == 0) continue;
      char chunk[65536];
      ssize_t n = read(fds[i].fd, chunk, sizeof(chunk));
      if (n > 0) {
        sinks[i]->append(chunk, static_cast<size_t>(n));
      } else if (n == 0 || errno != EINTR) {
        close(fds[i].fd);
        fds[i].fd = -1;
        --open_fds;
      }
    }
  }
  for (pollfd& p : fds) {
    if (p.fd >= 0) close(p.fd);
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  result.exit_code = timed_out ? -1 : DecodeWaitStatus(status);
  return result;
}

ProgramResult RunBrakectl(const std::string& socket_path,
                          const std::vector<std::string>& args) {
  std::vector<std::string> argv = {BRAKECTL_PATH, "--socket", socket_path};
  argv.insert(argv.end(), args.begin(), args.end());
  return RunProgram(argv);
}

std::optional<double> MetricValue(const std::string& text,
                                  const std::string& name) {
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.size() > name.size() && line.compare(0, name.size(), name) == 0 &&
        line[name.size()] == ' ') {
      return std::strtod(line.c_str() + name.size() + 1, nullptr);
    }
  }
  return std::nullopt;
}

}  // namespace brake::integration
