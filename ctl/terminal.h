// The terminal under `brakectl top`: whether frames redraw in place, how big
// the screen is, the clocks, and waiting for a key or a stop signal between
// frames. An interface, so tests drive top with a fake clock and canned keys.
//
// PosixTerminal is the real one. While it lives, and when its input is a
// terminal, that terminal is in non-canonical, no-echo mode so a single `q`
// arrives without Enter; SIGINT, SIGTERM and SIGHUP ask top to stop instead
// of killing it, and SIGINT/SIGTERM/SIGHUP restore the terminal mode at once
// from the handler too, so even a second signal or a crash after it leaves a
// usable shell. Its destructor restores the terminal mode and the previous
// signal dispositions. It writes nothing: the escapes are top's. At most one
// PosixTerminal may exist at a time (signal handlers are process-wide); it is
// used by one thread.
#pragma once

#include <termios.h>

#include <cstdint>
#include <memory>

namespace brake::ctl {

enum class TerminalEvent {
  kTimeout,  // the wait ran its course
  kRefresh,  // a key other than q: fetch and draw now
  kResize,   // the window changed size: draw again
  kQuit,     // `q` or `Q`
  kStop,     // SIGINT, SIGTERM or SIGHUP
};

class Terminal {
 public:
  virtual ~Terminal() = default;

  // True when output goes to a terminal: frames are drawn in place with ANSI
  // escapes. False: frames are appended, separated by a blank line.
  virtual bool interactive() const = 0;
  // True when keys can be read (input is a terminal).
  virtual bool reads_keys() const = 0;
  // The screen size; 0 when unknown.
  virtual int rows() = 0;
  virtual int columns() = 0;
  // Monotonic milliseconds (rates) and Unix-epoch milliseconds (the clock in
  // the header).
  virtual int64_t NowMs() = 0;
  virtual int64_t WallMs() = 0;
  // Waits at most `timeout_ms` (>= 0) for a key, a resize or a stop signal.
  virtual TerminalEvent Wait(int64_t timeout_ms) = 0;
  // True once a stop signal has arrived (checked after blocking exchanges).
  virtual bool stop_requested() = 0;
};

class PosixTerminal final : public Terminal {
 public:
  // Keys are read from `in_fd` when it is a terminal; `out_fd` decides
  // interactive() and the size. Neither fd is closed.
  PosixTerminal(int in_fd, int out_fd);
  ~PosixTerminal() override;
  PosixTerminal(const PosixTerminal&) = delete;
  PosixTerminal& operator=(const PosixTerminal&) = delete;

  bool interactive() const override { return interactive_; }
  bool reads_keys() const override { return reads_keys_; }
  int rows() override;
  int columns() override;
  int64_t NowMs() override;
  int64_t WallMs() override;
  TerminalEvent Wait(int64_t timeout_ms) override;
  bool stop_requested() override;

 private:
  int in_fd_;
  int out_fd_;
  bool interactive_ = false;
  bool reads_keys_ = false;
};

// PosixTerminal on standard input and output.
std::unique_ptr<Terminal> OpenStdioTerminal();

}  // namespace brake::ctl
