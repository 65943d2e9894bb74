// Starting and stopping: clean shutdown on SIGTERM/SIGINT, one daemon per
// socket, stale socket files replaced.
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstring>
#include <string>

#include "tests/integration/expect.h"
#include "tests/integration/harness.h"

namespace brake::integration {
namespace {

using Catch::Matchers::Contains;

// Leaves a socket file at `path` that nothing listens on, as a crashed
// daemon would.
void MakeStaleSocket(const std::string& path) {
  int fd = socket(AF_UNIX, SOCK_STREAM, 0);
  REQUIRE(fd >= 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, path.c_str(), sizeof(addr.sun_path) - 1);
  REQUIRE(bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0);
  close(fd);
  REQUIRE(FileExists(path));
}

TEST_CASE("SIGTERM stops cleanly: exit 0, socket removed, log says so",
          "[integration]") {
  RunningDaemon d;
  {
    Client c = d.daemon.Connect();
    CallOk(c, {{"op", "ping"}});
  }
  REQUIRE(FileExists(d.daemon.socket_path()));
  CHECK(d.daemon.Stop(SIGTERM) == 0);
  CHECK_FALSE(FileExists(d.daemon.socket_path()));
  const std::string log = d.daemon.log();
  CHECK_THAT(log, Contains("SIGTERM"));
  CHECK_THAT(log, Contains("stopped cleanly"));
}

TEST_CASE("SIGINT stops cleanly too", "[integration]") {
  RunningDaemon d;
  CHECK(d.daemon.Stop(SIGINT) == 0);
  CHECK_FALSE(FileExists(d.daemon.socket_path()));
  CHECK_THAT(d.daemon.log(), Contains("stopped cleanly"));
}

TEST_CASE("SIGTERM with idle and busy clients connected still exits 0",
          "[integration]") {
  RunningDaemon d;
  Client idle = d.daemon.Connect();
  CallOk(idle, {{"op", "ping"}});
  Client busy = d.daemon.Connect();
  std::string batch;
  for (int i = 0; i < 200; ++i) {
    batch += json({{"op", "acquire"}, {"id", i}, {"user", "u"}, {"task", "t"}})
                 .dump() +
             "\n";
  }
  busy.SendRaw(batch);
  const int64_t start = MonoMs();
  CHECK(d.daemon.Stop(SIGTERM) == 0);
  CHECK(MonoMs() - start < 5000);
  CHECK_FALSE(FileExists(d.daemon.socket_path()));
  CHECK_THAT(d.daemon.log(), Contains("stopped cleanly"));
  // Clients see the connection end; every reply they got is complete JSON.
  CHECK(idle.WaitForEof());
  while (true) {
    std::optional<std::string> line = busy.ReadLine();
    if (!line.has_value()) break;
    json reply = json::parse(*line, nullptr, false);
    REQUIRE_FALSE(reply.is_discarded());
    CHECK(reply.contains("id"));
  }
}

TEST_CASE("a second daemon on a live socket refuses to start",
          "[integration]") {
  RunningDaemon first;
  Daemon second(first.dir.path(), nullptr, "second");
  second.Spawn();
  std::optional<int> code = second.WaitExit(5000);
  REQUIRE(code.has_value());
  CHECK(*code != 0);
  const std::string log = second.log();
  INFO("second daemon's log: " << log);
  CHECK_THAT(log, Contains("another braked is listening"));
  CHECK_THAT(log, Contains(first.daemon.socket_path()));

  // The first one is untouched and still owns its socket.
  REQUIRE(first.daemon.running());
  Client c = first.daemon.Connect();
  CallOk(c, {{"op", "ping"}});
  CHECK(first.daemon.Stop() == 0);
}

TEST_CASE("a second daemon on a live database refuses to start",
          "[integration]") {
  RunningDaemon first;
  {
    Client c = first.daemon.Connect();
    SetPolicy(c, "user:*",
              R"([{"name":"day","resource":"tokens","algorithm":"quota",)"
              R"("limit":1000,"period":"day"}])");
    AcquireLease(c, "alice", "t1", {{"tokens", 300}});
  }
  // Its own socket, the first one's database: two daemons would each
  // grant the whole quota. It gives up after SQLite's busy timeout (5 s).
  TempDir other;
  ProgramResult second =
      RunProgram({BRAKED_PATH, "--socket", other.File("braked.sock"), "--db",
                  first.daemon.db_path()},
                 20000);
  INFO("second daemon's stderr: " << second.err);
  CHECK(second.exit_code != 0);
  CHECK(second.exit_code != -1);  // it exited by itself
  CHECK_THAT(second.err, Contains("is locked by another process"));
  CHECK_THAT(second.err, Contains(first.daemon.db_path()));

  // The first one is untouched: its reservation holds.
  REQUIRE(first.daemon.running());
  Client c = first.daemon.Connect();
  json alice = CallOk(c, {{"op", "status"}, {"user", "alice"}});
  CHECK(alice["reserved"]["tokens"] == 300);
  CHECK(c.Call({{"op", "acquire"}, {"user", "alice"}, {"task", "t1"},
                {"tokens", 701}})["granted"] == false);
  CHECK(first.daemon.Stop() == 0);
}

TEST_CASE("a stale socket file is replaced", "[integration]") {
  TempDir dir;
  Daemon daemon(dir.path());
  MakeStaleSocket(daemon.socket_path());
  REQUIRE(daemon.Start());
  Client c = daemon.Connect();
  CallOk(c, {{"op", "ping"}});
  CHECK(daemon.Stop() == 0);
}

TEST_CASE("the socket file left by kill -9 is replaced on restart",
          "[integration]") {
  RunningDaemon d;
  d.daemon.Kill9();
  CHECK(FileExists(d.daemon.socket_path()));
  REQUIRE(d.daemon.Start());
  Client c = d.daemon.Connect();
  CallOk(c, {{"op", "ping"}});
}

TEST_CASE("a file that is not a socket is never replaced", "[integration]") {
  TempDir dir;
  Daemon daemon(dir.path());
  WriteFile(daemon.socket_path(), "precious");
  daemon.Spawn();
  std::optional<int> code = daemon.WaitExit(5000);
  REQUIRE(code.has_value());
  CHECK(*code != 0);
  CHECK_THAT(daemon.log(), Contains("not a socket"));
  CHECK(ReadFile(daemon.socket_path()) == "precious");
}

TEST_CASE(
    "an invalid config file stops the start with a message naming the "
    "setting",
    "[integration]") {
  TempDir dir;
  Daemon daemon(dir.path(), json{{"max_line_bytes", 5}});
  daemon.Spawn();
  std::optional<int> code = daemon.WaitExit(5000);
  REQUIRE(code.has_value());
  CHECK(*code != 0);
  CHECK_THAT(daemon.log(), Contains("max_line_bytes"));
  CHECK_FALSE(FileExists(daemon.socket_path()));
}

}  // namespace
}  // namespace brake::integration

namespace brake::integration {
namespace {

// Start() returns once the socket takes connections; braked serves (and
// has made its marker) once it answers.
void WaitServing(Daemon& daemon) {
  Client c = daemon.Connect();
  CallOk(c, {{"op", "ping"}});
}

TEST_CASE("quick_check runs at startup after kill -9, not after a clean stop",
          "[integration]") {
  RunningDaemon d;
  const std::string marker = d.daemon.db_path() + ".running";
  WaitServing(d.daemon);
  CHECK(FileExists(marker));
  CHECK(d.daemon.Stop() == 0);
  CHECK_FALSE(FileExists(marker));
  REQUIRE(d.daemon.Restart());
  CHECK_THAT(d.daemon.log(), Catch::Contains("quick_check skipped"));
  WaitServing(d.daemon);
  d.daemon.Kill9();
  CHECK(FileExists(marker));
  REQUIRE(d.daemon.Restart());
  CHECK_THAT(d.daemon.log(), Catch::Contains("quick_check ok"));
}

}  // namespace
}  // namespace brake::integration
