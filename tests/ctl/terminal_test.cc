// The real terminal of `brakectl top` on a pseudo-terminal: raw mode while
// it lives, keys, signals, and the shell's mode restored afterwards.
#include "ctl/terminal.h"

#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <termios.h>
#include <unistd.h>

#include <catch2/catch.hpp>

namespace brake::ctl {
namespace {

// A pseudo-terminal pair: writing to `master` types on `slave`.
struct Pty {
  int master = -1;
  int slave = -1;
  Pty() {
    master = ::posix_openpt(O_RDWR | O_NOCTTY);
    REQUIRE(master >= 0);
    REQUIRE(::grantpt(master) == 0);
    REQUIRE(::unlockpt(master) == 0);
    slave = ::open(::ptsname(master), O_RDWR | O_NOCTTY);
    REQUIRE(slave >= 0);
  }
  ~Pty() {
    ::close(slave);
    ::close(master);
  }
  tcflag_t lflag() const {
    termios mode{};
    REQUIRE(::tcgetattr(slave, &mode) == 0);
    return mode.c_lflag;
  }
  void Type(const char* keys) const {
    const ssize_t n =
        static_cast<ssize_t>(std::char_traits<char>::length(keys));
    REQUIRE(::write(master, keys, static_cast<size_t>(n)) == n);
  }
};

TEST_CASE("on a terminal, top reads single keys and restores the mode",
          "[ctl][top]") {
  Pty pty;
  REQUIRE((pty.lflag() & ICANON) != 0);
  {
    PosixTerminal term(pty.slave, pty.slave);
    CHECK(term.interactive());
    CHECK(term.reads_keys());
    CHECK((pty.lflag() & (ICANON | ECHO)) == 0);
    CHECK((pty.lflag() & ISIG) != 0);  // Ctrl-C still signals

    SECTION("no key: the wait times out") {
      CHECK(term.Wait(20) == TerminalEvent::kTimeout);
      CHECK(term.Wait(0) == TerminalEvent::kTimeout);
    }
    SECTION("q quits without Enter, in either case") {
      pty.Type("q");
      CHECK(term.Wait(5000) == TerminalEvent::kQuit);
      pty.Type("Q");
      CHECK(term.Wait(5000) == TerminalEvent::kQuit);
    }
    SECTION("another key asks for a refresh") {
      pty.Type(" ");
      CHECK(term.Wait(5000) == TerminalEvent::kRefresh);
      CHECK(term.Wait(10) == TerminalEvent::kTimeout);
    }
    SECTION("SIGINT stops, and the handler restores the mode at once") {
      CHECK_FALSE(term.stop_requested());
      ::raise(SIGINT);
      CHECK(term.stop_requested());
      CHECK((pty.lflag() & ICANON) != 0);
      CHECK(term.Wait(5000) == TerminalEvent::kStop);
    }
    SECTION("SIGTERM stops too") {
      ::raise(SIGTERM);
      CHECK(term.Wait(5000) == TerminalEvent::kStop);
    }
    SECTION("a window change asks for a redraw") {
      ::raise(SIGWINCH);
      CHECK(term.Wait(5000) == TerminalEvent::kResize);
      CHECK(term.Wait(0) == TerminalEvent::kTimeout);
    }
  }
  CHECK((pty.lflag() & (ICANON | ECHO)) == (ICANON | ECHO));
  // The previous dispositions are back (Catch's or the default ones).
  struct sigaction now {};
  REQUIRE(::sigaction(SIGWINCH, nullptr, &now) == 0);
  CHECK(now.sa_handler == SIG_DFL);
}

TEST_CASE("without a terminal, top neither redraws nor reads keys",
          "[ctl][top]") {
  int fds[2];
  REQUIRE(::pipe(fds) == 0);
  {
    PosixTerminal term(fds[0], fds[1]);
    CHECK_FALSE(term.interactive());
    CHECK_FALSE(term.reads_keys());
    CHECK(term.rows() == 0);
    CHECK(term.columns() == 0);
    REQUIRE(::write(fds[1], "q", 1) == 1);  // not a terminal: not a key
    const int64_t before = term.NowMs();
    CHECK(term.Wait(30) == TerminalEvent::kTimeout);
    CHECK(term.NowMs() - before >= 30);
    CHECK(term.WallMs() > 1600000000000);
  }
  ::close(fds[0]);
  ::close(fds[1]);
}

}  // namespace
}  // namespace brake::ctl
