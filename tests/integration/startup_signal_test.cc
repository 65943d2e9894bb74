// A supervisor may stop or reload braked the moment its socket appears
// (systemd does when a stop follows a start closely; the integration harness
// does when a test ends at once). The socket exists only after the signal
// handlers do, so such a signal is always a clean stop: never a kill with no
// flush, the socket file left behind and exit 143.
#include <signal.h>

#include <catch2/catch.hpp>
#include <optional>
#include <string>

#include "tests/integration/harness.h"

namespace brake::integration {
namespace {

TEST_CASE("a signal sent the moment the socket file appears is handled",
          "[integration]") {
  const int signal = GENERATE(SIGTERM, SIGINT, SIGHUP);
  for (int i = 0; i < 10; ++i) {
    TempDir dir;
    Daemon d(dir.path());
    d.Spawn();
    // Busy-polls: the window between bind() and the handlers is short
    // (not under valgrind, which then needs the CPU and takes seconds).
    const int64_t deadline = MonoMs() + (DaemonWrapped() ? 60000 : 5000);
    while (!FileExists(d.socket_path()) && MonoMs() < deadline) {
      if (DaemonWrapped()) PollPause();
    }
    REQUIRE(FileExists(d.socket_path()));
    REQUIRE(kill(d.pid(), signal) == 0);
    INFO("signal " << signal << ", try " << i << "; log:\n" << d.log());
    if (signal == SIGHUP) {
      // Reloaded (or logged that there is nothing to reload); still running.
      CHECK_FALSE(d.WaitExit(200).has_value());
      CHECK(d.Stop() == 0);
    } else {
      CHECK(d.WaitExit(10000).value_or(-1) == 0);
    }
    CHECK_FALSE(FileExists(d.socket_path()));
  }
}

}  // namespace
}  // namespace brake::integration
