#include "ctl/terminal.h"

#include <poll.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <csignal>

namespace brake::ctl {

namespace {

// Process-wide, because signal handlers are: the one live PosixTerminal's
// saved mode, and what the handlers saw.
volatile sig_atomic_t g_stop = 0;
volatile sig_atomic_t g_resized = 0;
int g_tty_fd = -1;  // the fd whose mode is changed, or -1
struct termios g_saved_mode;

constexpr int kStopSignals[] = {SIGINT, SIGTERM, SIGHUP};
struct sigaction g_old_stop_actions[3];
struct sigaction g_old_winch_action;

void OnStopSignal(int) {
  g_stop = 1;
  // tcsetattr is async-signal-safe: put the shell's mode back now, so the
  // terminal is usable even if something goes wrong before the destructor.
  if (g_tty_fd >= 0) ::tcsetattr(g_tty_fd, TCSANOW, &g_saved_mode);
}

void OnWinch(int) { g_resized = 1; }

bool GetSize(int fd, winsize* size) {
  return ::ioctl(fd, TIOCGWINSZ, size) == 0;
}

}  // namespace

PosixTerminal::PosixTerminal(int in_fd, int out_fd)
    : in_fd_(in_fd), out_fd_(out_fd) {
  g_stop = 0;
  g_resized = 0;
  interactive_ = ::isatty(out_fd_) == 1;
  if (::isatty(in_fd_) == 1 && ::tcgetattr(in_fd_, &g_saved_mode) == 0) {
    struct termios raw = g_saved_mode;
    // Bytes as typed, no echo; ISIG stays on so Ctrl-C is still SIGINT.
    raw.c_lflag &= ~static_cast<tcflag_t>(ICANON | ECHO);
    raw.c_cc[VMIN] = 0;
    raw.c_cc[VTIME] = 0;
    if (::tcsetattr(in_fd_, TCSANOW, &raw) == 0) {
      g_tty_fd = in_fd_;
      reads_keys_ = true;
    }
  }
  // No SA_RESTART: poll() returns EINTR and the loop sees the flag at once.
  struct sigaction stop = {};
  stop.sa_handler = OnStopSignal;
  sigemptyset(&stop.sa_mask);
  for (size_t i = 0; i < std::size(kStopSignals); ++i) {
    ::sigaction(kStopSignals[i], &stop, &g_old_stop_actions[i]);
  }
  struct sigaction winch = {};
  winch.sa_handler = OnWinch;
  sigemptyset(&winch.sa_mask);
  ::sigaction(SIGWINCH, &winch, &g_old_winch_action);
}

PosixTerminal::~PosixTerminal() {
  if (g_tty_fd >= 0) {
    ::tcsetattr(g_tty_fd, TCSANOW, &g_saved_mode);
    g_tty_fd = -1;
  }
  ::sigaction(SIGWINCH, &g_old_winch_action, nullptr);
  for (size_t i = 0; i < std::size(kStopSignals); ++i) {
    ::sigaction(kStopSignals[i], &g_old_stop_actions[i], nullptr);
  }
}

int PosixTerminal::rows() {
  winsize size{};
  return interactive_ && GetSize(out_fd_, &size) ? size.ws_row : 0;
}

int PosixTerminal::columns() {
  winsize size{};
  return interactive_ && GetSize(out_fd_, &size) ? size.ws_col : 0;
}

int64_t PosixTerminal::NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

int64_t PosixTerminal::WallMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

bool PosixTerminal::stop_requested() { return g_stop != 0; }

TerminalEvent PosixTerminal::Wait(int64_t timeout_ms) {
  const int64_t deadline = NowMs() + (timeout_ms < 0 ? 0 : timeout_ms);
  for (;;) {
    if (g_stop != 0) return TerminalEvent::kStop;
    if (g_resized != 0) {
      g_resized = 0;
      return TerminalEvent::kResize;
    }
    const int64_t left = deadline - NowMs();
    if (left <= 0) return TerminalEvent::kTimeout;
    pollfd p{in_fd_, POLLIN, 0};
    const int wait = static_cast<int>(left > (1 << 30) ? (1 << 30) : left);
    int rc = reads_keys_ ? ::poll(&p, 1, wait) : ::poll(nullptr, 0, wait);
    if (rc < 0) {
      if (errno == EINTR) continue;
      return TerminalEvent::kTimeout;
    }
    if (rc == 0) continue;
    if ((p.revents & (POLLHUP | POLLERR | POLLNVAL)) != 0 &&
        (p.revents & POLLIN) == 0) {
      reads_keys_ = false;  // the terminal went away: keep drawing, no keys
      continue;
    }
    char keys[64];
    ssize_t n = ::read(in_fd_, keys, sizeof keys);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      // A terminal in VMIN=0 mode reads 0 bytes when it hangs up; without
      // this the poll above would report it ready forever.
      reads_keys_ = false;
      continue;
    }
    for (ssize_t i = 0; i < n; ++i) {
      if (keys[i] == 'q' || keys[i] == 'Q') return TerminalEvent::kQuit;
    }
    return TerminalEvent::kRefresh;
  }
}

std::unique_ptr<Terminal> OpenStdioTerminal() {
  return std::make_unique<PosixTerminal>(STDIN_FILENO, STDOUT_FILENO);
}

}  // namespace brake::ctl
