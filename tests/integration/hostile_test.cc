// Hostile clients against a real braked:
// a 100 MiB line, 10,000-deep nesting, a thousand connections over
// max_connections, running out of descriptors, clients that pipeline without
// ever reading, a thousand slow-loris connections, clients that hang up on
// their replies. Each shows the limit holds, what it costs the daemon (RSS
// from /proc) and that a well-behaved client is served meanwhile.
//
// Bounds, not exact timings: the machine running them may be loaded. The
// [load] tests open a thousand connections or flood the daemon; they are
// left out of the valgrind run (tests/valgrind/run).
#include <algorithm>
#include <atomic>
#include <catch2/catch.hpp>
#include <exception>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "tests/integration/crowd.h"
#include "tests/integration/expect.h"
#include "tests/integration/harness.h"
#include "tests/integration/proc_stats.h"

namespace brake::integration {
namespace {

constexpr int64_t kMiB = 1 << 20;

int64_t RssKb(const Daemon& d) { return ProcStatusKb(d.pid(), "VmRSS"); }
int64_t PeakRssKb(const Daemon& d) { return ProcStatusKb(d.pid(), "VmHWM"); }

// Waits until the daemon counts exactly `n` open connections (a closed
// client, e.g. Start()'s readiness probe, counts until the daemon reads its
// end of stream).
bool ConnectionsSettleAt(Client& c, double n) {
  return PollUntil([&] { return Metric(c, "brake_connections") == n; }, 5000);
}

// The lines of `text`, each parsed (a line that is not JSON is null).
std::vector<json> JsonLines(const std::string& text) {
  std::vector<json> out;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    if (nl == std::string::npos) nl = text.size();
    json line = json::parse(text.substr(pos, nl - pos), nullptr, false);
    out.push_back(line.is_discarded() ? json() : line);
    pos = nl + 1;
  }
  return out;
}

std::string Lines(const json& request, int n) {
  std::string line = request.dump() + "\n";
  std::string out;
  out.reserve(line.size() * static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) out += line;
  return out;
}

TEST_CASE("a 100 MiB line is cut off at max_line_bytes without buffering it",
          "[integration][hostile][load]") {
  RunningDaemon d;  // max_line_bytes: the default 64 KiB
  Client other = d.daemon.Connect();
  CallOk(other, {{"op", "ping"}});
  const int64_t baseline_kb = RssKb(d.daemon);

  // One 1 MiB chunk, sent again and again: a single line that never ends.
  Crowd streamer(d.daemon.socket_path(), 1);
  std::string chunk = R"({"op":"ping","pad":")";
  chunk.resize(static_cast<size_t>(kMiB), 'x');
  uint64_t sent = 0;
  std::thread t([&] { sent = streamer.Flood(chunk, 20000); });
  // Another client is served while the long line streams in.
  for (int i = 0; i < 20; ++i) CallOk(other, {{"op", "ping"}, {"id", i}});
  t.join();

  INFO("bytes the daemon took before closing: " << sent);
  REQUIRE(streamer.closed_count() == 1);
  // Only what fits in socket buffers got through: the daemon stopped reading
  // at 64 KiB and closed the connection long before 100 MiB.
  CHECK(sent < static_cast<uint64_t>(8 * kMiB));
  std::vector<json> replies = JsonLines(streamer.received(0));
  REQUIRE(replies.size() == 1);
  RequireError(replies[0], "line_too_long", "max_line_bytes");

  const int64_t growth_kb = PeakRssKb(d.daemon) - baseline_kb;
  INFO("daemon RSS: baseline " << baseline_kb << " KiB, peak growth "
                               << growth_kb << " KiB");
  CHECK(growth_kb < 16 * 1024);
  WARN("100 MiB line: the daemon took " << sent << " bytes, peak RSS growth "
                                        << growth_kb << " KiB");
  CallOk(other, {{"op", "ping"}});
  Client fresh = d.daemon.Connect();
  CallOk(fresh, {{"op", "ping"}});
}

TEST_CASE("10,000-deep nesting is bad_json naming the depth, and the connection "
          "stays usable",
          "[integration][hostile]") {
  RunningDaemon d;
  Client c = d.daemon.Connect();
  const int deep = 10000;
  const std::string arrays = R"({"op":"status","user":"alice","x":)" +
                             std::string(deep, '[') + std::string(deep, ']') +
                             "}";
  std::string objects;
  for (int i = 0; i < deep; ++i) objects += R"({"a":)";
  objects += "1" + std::string(deep, '}');
  const std::vector<std::pair<const char*, std::string>> cases = {
      {"arrays in a status request", arrays},
      {"objects in objects", objects},
      {"bare braces", std::string(deep, '{')},
      {"unclosed brackets", std::string(deep, '[')},
  };
  for (const auto& [what, line] : cases) {
    INFO(what << " (" << line.size() << " bytes)");
    REQUIRE(line.size() < 65536);  // under max_line_bytes: the depth decides
    c.SendLine(line);
    json reply = json::parse(c.ReadLine().value());
    RequireError(reply, "bad_json", "nested deeper than 32 levels");
    CHECK(CallOk(c, {{"op", "ping"}, {"id", what}})["id"] == what);
  }
  // 32 levels are still a request.
  json ok = CallOk(c, json::parse(R"({"op":"status","user":"alice","x":)" +
                                  std::string(31, '[') + std::string(31, ']') +
                                  "}"));
  CHECK(ok["scope"] == "user:alice");
  CHECK_FALSE(d.daemon.WaitExit(0).has_value());
}

TEST_CASE("1,000 connections over max_connections are refused one line each",
          "[integration][hostile][load]") {
  REQUIRE(RaiseOwnFileLimit(1200));
  RunningDaemon d(json{{"max_connections", 50}});
  std::vector<Client> admitted;
  admitted.push_back(d.daemon.Connect());
  REQUIRE(ConnectionsSettleAt(admitted[0], 1));
  for (int i = 1; i < 50; ++i) admitted.push_back(d.daemon.Connect());
  for (Client& c : admitted) CallOk(c, {{"op", "ping"}});

  const int64_t started_ms = MonoMs();
  Crowd extra(d.daemon.socket_path(), 1000);
  REQUIRE(extra.WaitAllClosed(20000));
  const int64_t refused_ms = MonoMs() - started_ms;
  INFO("1,000 refused in " << refused_ms << " ms");
  for (size_t i = 0; i < extra.size(); ++i) {
    std::vector<json> lines = JsonLines(extra.received(i));
    INFO("connection " << i << " read: " << extra.received(i));
    REQUIRE(lines.size() == 1);
    CHECK(ErrorCodeOf(lines[0]) == "too_many_connections");
  }
  // The first 50 were never disturbed.
  for (Client& c : admitted) CallOk(c, {{"op", "ping"}});
  CHECK(Metric(admitted[0], "brake_connections") == 50);
  WARN("1,000 over max_connections: connected and refused in " << refused_ms
                                                                << " ms");

  // Room again: ten leave, ten new ones are served.
  while (admitted.size() > 40) admitted.pop_back();
  REQUIRE(ConnectionsSettleAt(admitted[0], 40));
  for (int i = 0; i < 10; ++i) admitted.push_back(d.daemon.Connect());
  for (Client& c : admitted) CallOk(c, {{"op", "ping"}});
}

TEST_CASE("out of descriptors, braked drops new connections without spinning",
          "[integration][hostile]") {
  RunningDaemon d;
  const pid_t pid = d.daemon.pid();
  Client keeper = d.daemon.Connect();
  REQUIRE(ConnectionsSettleAt(keeper, 1));
  const int open_fds = ProcOpenFds(pid);
  REQUIRE(open_fds > 0);
  REQUIRE(SetFileLimitOf(pid, static_cast<uint64_t>(open_fds) + 10));

  // The kernel queues all 100 (listen backlog); braked accepts up to its
  // limit and libuv closes the rest at once (it keeps a spare descriptor
  // for that), so none of them waits forever.
  Crowd crowd(d.daemon.socket_path(), 100);
  crowd.SendToOpen(R"({"op":"ping"})"
                   "\n");
  const int64_t cpu_before_ms = ProcCpuMs(pid);
  const int64_t wall_before_ms = MonoMs();
  while (MonoMs() < wall_before_ms + 1000) crowd.Pump(100);
  const int64_t cpu_ms = ProcCpuMs(pid) - cpu_before_ms;
  const int64_t wall_ms = MonoMs() - wall_before_ms;
  INFO("daemon CPU " << cpu_ms << " ms in " << wall_ms << " ms at its limit");
  CHECK(cpu_ms < wall_ms / 3);  // a spinning accept loop would burn it all

  size_t served = 0;
  for (size_t i = 0; i < crowd.size(); ++i) {
    std::vector<json> lines = JsonLines(crowd.received(i));
    INFO("connection " << i << " read: " << crowd.received(i));
    if (crowd.closed_at_ms(i) < 0) {
      REQUIRE(lines.size() == 1);
      CHECK(lines[0]["ok"] == true);
      ++served;
    } else {
      CHECK(lines.empty());
    }
  }
  // About 10 served (more under valgrind, which keeps descriptors of its
  // own); the rest closed at once rather than left waiting.
  CHECK(served >= 1);
  CHECK(crowd.closed_count() >= crowd.size() / 2);
  CHECK(crowd.closed_count() + served == crowd.size());
  CallOk(keeper, {{"op", "ping"}});

  REQUIRE(SetFileLimitOf(pid, 4096));
  Client fresh = d.daemon.Connect();
  CallOk(fresh, {{"op", "ping"}});
  CHECK(d.daemon.Stop() == 0);
}

TEST_CASE("braked raises its soft descriptor limit to the hard limit",
          "[integration][hostile]") {
  const FileLimit own = FileLimitOf(0);
  REQUIRE(own.hard > 256);
  // Started with a soft limit of 256, as from a shell with a low ulimit -n.
  REQUIRE(SetFileLimitOf(0, 256));
  std::optional<RunningDaemon> d;
  try {
    d.emplace();
  } catch (...) {
    SetFileLimitOf(0, own.soft);
    throw;
  }
  REQUIRE(SetFileLimitOf(0, own.soft));
  // (valgrind keeps the limit to itself and emulates it for braked.)
  if (!DaemonWrapped()) {
    const FileLimit daemon = FileLimitOf(d->daemon.pid());
    CHECK(daemon.soft == own.hard);
    CHECK(daemon.hard == own.hard);
  }
}

TEST_CASE("50 clients pipelining without reading are cut off at their output "
          "cap, and a polite client keeps its latency",
          "[integration][hostile][load]") {
  // Acquires of `flood` are mostly denied (concurrency 10): a granted
  // acquire holds a lease until it is settled or expires, which costs
  // memory by design; what is measured here is the output buffering.
  RunningDaemon d(json::parse(R"({"max_output_bytes": 262144,
      "policies": {"user:flood": {"limits": [{"name": "inflight",
        "resource": "requests", "algorithm": "concurrency", "limit": 10}]}}})"));
  Client polite = d.daemon.Connect();
  CallOk(polite, {{"op", "ping"}});
  const int64_t baseline_kb = RssKb(d.daemon);

  // 50 at a time until the polite client is done: each one dropped comes
  // back at once.
  const std::string chunk =
      Lines({{"op", "acquire"}, {"user", "flood"}, {"task", "f"}}, 1000);
  std::atomic<bool> polite_done{false};
  std::atomic<int> rounds{0};
  uint64_t sent = 0;
  size_t flooders = 0;
  size_t dropped = 0;
  std::thread t([&] {
    const int64_t give_up_ms = MonoMs() + 30000;
    while (!polite_done && MonoMs() < give_up_ms) {
      Crowd flood(d.daemon.socket_path(), 50);
      ++rounds;
      sent += flood.Flood(chunk, 10000);
      flooders += flood.size();
      dropped += flood.closed_count();
    }
  });

  std::vector<int64_t> latencies_ms;
  std::exception_ptr failure;
  try {
    REQUIRE(PollUntil([&] { return rounds > 0; }, 5000));
    for (int i = 0; i < 200; ++i) {
      const int64_t start_ms = MonoMs();
      json reply = polite.Call({{"op", "acquire"}, {"id", i}, {"user", "polite"},
                                {"task", "p"}});
      latencies_ms.push_back(MonoMs() - start_ms);
      INFO("reply: " << reply.dump());
      REQUIRE(reply["ok"] == true);
      REQUIRE(reply["granted"] == true);
    }
  } catch (...) {
    failure = std::current_exception();
  }
  polite_done = true;
  t.join();
  if (failure) std::rethrow_exception(failure);

  std::sort(latencies_ms.begin(), latencies_ms.end());
  const int64_t p99_ms = latencies_ms[latencies_ms.size() * 99 / 100];
  const int64_t growth_kb = PeakRssKb(d.daemon) - baseline_kb;
  INFO("flood: " << flooders << " connections, " << sent / kMiB
                 << " MiB sent; polite acquires during it: "
                 << latencies_ms.size() << ", p50 "
                 << latencies_ms[latencies_ms.size() / 2] << " ms, p99 "
                 << p99_ms << " ms, max " << latencies_ms.back()
                 << " ms; daemon RSS baseline " << baseline_kb
                 << " KiB, peak growth " << growth_kb << " KiB");
  CHECK(dropped == flooders);
  // Alone on the machine p50 is ~5-40 ms and p99 ~40-50 ms; beside another
  // test (ctest -j2) p99 reached 200 ms. Without the per-turn read share
  // each reply took 300 ms to 1 s (libuv read 2 MiB per flooder per turn).
  const int64_t p50_ms = latencies_ms[latencies_ms.size() / 2];
  CHECK(p50_ms < 100);
  CHECK(p99_ms < 500);
#if defined(__SANITIZE_ADDRESS__)
  // This build's braked runs under ASan, which keeps freed memory in a
  // quarantine (256 MiB by default) and pads every block: its RSS measures
  // ASan, not braked's bound. Still bounded, just not by 64 MiB.
  constexpr int64_t kGrowthBoundKb = 1024 * 1024;
#else
  constexpr int64_t kGrowthBoundKb = 64 * 1024;
#endif
  CHECK(growth_kb < kGrowthBoundKb);
  CHECK(d.daemon.log().find("bytes of unread replies; closing it") !=
        std::string::npos);
  CHECK(Metric(polite, "brake_connections") == 1);
  WARN("flood: " << flooders << " connections, " << sent / kMiB
                 << " MiB; polite p99 " << p99_ms
                 << " ms over " << latencies_ms.size() << "; RSS growth "
                 << growth_kb << " KiB");
}

TEST_CASE("one client pipelining without reading is cut off at "
          "max_output_bytes",
          "[integration][hostile]") {
  // Small enough for the valgrind run: the path that discards a cut-off
  // client's replies and cancels its pending writes.
  RunningDaemon d(json{{"max_output_bytes", 65536}});
  Client polite = d.daemon.Connect();
  Crowd flood(d.daemon.socket_path(), 1);
  const uint64_t sent = flood.Flood(
      Lines({{"op", "status"}, {"user", "alice"}}, 100), 20000);
  INFO("sent " << sent << " bytes");
  CHECK(flood.closed_count() == 1);
  CHECK(d.daemon.log().find("bytes of unread replies; closing it") !=
        std::string::npos);
  REQUIRE(ConnectionsSettleAt(polite, 1));
  CallOk(polite, {{"op", "ping"}});
  CHECK(d.daemon.Stop() == 0);
}

TEST_CASE("1,000 slow-loris connections are closed after "
          "partial_line_timeout_ms, and a polite client is served throughout",
          "[integration][hostile][load]") {
  REQUIRE(RaiseOwnFileLimit(1200));
  RunningDaemon d(json{{"partial_line_timeout_ms", 1500}});
  Client polite = d.daemon.Connect();
  Crowd slow(d.daemon.socket_path(), 1000);
  const int64_t start_ms = MonoMs();
  slow.SendToOpen("{");
  int64_t next_byte_ms = start_ms + 1000;
  int64_t worst_ms = 0;
  int calls = 0;
  // A byte a second from each, as long as it is open: trickling bytes must
  // not reset its clock.
  while (slow.closed_count() < slow.size() && MonoMs() < start_ms + 15000) {
    slow.Pump(50);
    if (MonoMs() >= next_byte_ms) {
      slow.SendToOpen(" ");
      next_byte_ms += 1000;
    }
    const int64_t call_ms = MonoMs();
    CallOk(polite, {{"op", "status"}, {"user", "polite"}});
    worst_ms = std::max(worst_ms, MonoMs() - call_ms);
    ++calls;
  }
  REQUIRE(slow.closed_count() == slow.size());
  int64_t first_ms = INT64_MAX;
  int64_t last_ms = 0;
  for (size_t i = 0; i < slow.size(); ++i) {
    const int64_t after_ms = slow.closed_at_ms(i) - start_ms;
    first_ms = std::min(first_ms, after_ms);
    last_ms = std::max(last_ms, after_ms);
    std::vector<json> lines = JsonLines(slow.received(i));
    INFO("connection " << i << " read: " << slow.received(i));
    REQUIRE(lines.size() == 1);
    RequireError(lines[0], "bad_request", "partial_line_timeout_ms");
  }
  INFO("closed between " << first_ms << " and " << last_ms << " ms; polite: "
                         << calls << " calls, worst " << worst_ms << " ms");
  CHECK(first_ms >= 1400);  // not before the timeout (clock steps aside)
  CHECK(last_ms < 6000);
  CHECK(worst_ms < 1000);
  WARN("slow-loris: closed between " << first_ms << " and " << last_ms
                                     << " ms; polite worst " << worst_ms
                                     << " ms over " << calls << " calls");
}

TEST_CASE("a client streaming requests longer than partial_line_timeout_ms "
          "is not taken for a slow-loris",
          "[integration][hostile]") {
  RunningDaemon d(json{{"partial_line_timeout_ms", 300}});
  Crowd stream(d.daemon.socket_path(), 1);
  // Each send is one line long but starts half a line in, so every read of
  // the daemon ends in the middle of a line, for over three timeouts.
  const std::string line = R"({"op":"ping"})" "\n";
  const std::string lines = Lines(json::parse(line), 200);
  stream.SendToOpen(std::string_view(lines).substr(0, line.size() / 2));
  size_t at = line.size() / 2;
  const int64_t end_ms = MonoMs() + 1000;
  int64_t next_ms = MonoMs();
  while (MonoMs() < end_ms && at + line.size() <= lines.size()) {
    if (MonoMs() >= next_ms) {  // a line every 10 ms
      stream.SendToOpen(std::string_view(lines).substr(at, line.size()));
      at += line.size();
      next_ms += 10;
    }
    stream.Pump(std::max<int64_t>(1, next_ms - MonoMs()));
  }
  INFO("read: " << stream.received(0));
  CHECK(stream.closed_count() == 0);
  const size_t whole = at / line.size();
  REQUIRE(PollUntil(
      [&] {
        stream.Pump(10);
        return JsonLines(stream.received(0)).size() >= whole;
      },
      5000));
  for (const json& reply : JsonLines(stream.received(0))) {
    INFO("reply: " << reply.dump());
    CHECK(reply["ok"] == true);
  }
}

TEST_CASE("a client that hangs up on its replies does not take braked down",
          "[integration][hostile]") {
  RunningDaemon d;
  Client checker = d.daemon.Connect();
  {
    Client rude = d.daemon.Connect();
    rude.SendRaw(Lines({{"op", "status"}, {"user", "alice"}}, 20000));
  }  // closed before reading a byte: braked writes into a closed socket
  REQUIRE(ConnectionsSettleAt(checker, 1));
  CHECK_FALSE(d.daemon.WaitExit(0).has_value());
  CallOk(checker, {{"op", "ping"}});
  CHECK(d.daemon.Stop() == 0);
}

TEST_CASE("a client that never takes its last replies cannot hold a "
          "connection or the shutdown",
          "[integration][hostile]") {
  RunningDaemon d(json{{"partial_line_timeout_ms", 1000},
                       {"max_line_bytes", 1024}});
  const pid_t pid = d.daemon.pid();
  Client checker = d.daemon.Connect();
  REQUIRE(ConnectionsSettleAt(checker, 1));
  const int baseline_fds = ProcOpenFds(pid);
  // Replies pile up unread (well under max_output_bytes), then a line too
  // long closes the connection: the close waits for the replies to go out.
  Client stuck = d.daemon.Connect();
  stuck.SendRaw(Lines({{"op", "status"}, {"user", "alice"}}, 10000));

  SECTION("while running, it is dropped after partial_line_timeout_ms") {
    stuck.SendRaw(std::string(2048, 'x'));
    REQUIRE(ConnectionsSettleAt(checker, 1));  // closing, no longer counted
    const int64_t closing_ms = MonoMs();
    CHECK(PollUntil([&] { return ProcOpenFds(pid) <= baseline_fds; }, 5000));
    const int64_t dropped_after_ms = MonoMs() - closing_ms;
    INFO("dropped after " << dropped_after_ms << " ms");
    CHECK(dropped_after_ms < 4000);
    CHECK(d.daemon.log().find("did not take its last") != std::string::npos);
    CallOk(checker, {{"op", "ping"}});
  }
  SECTION("SIGTERM completes anyway") {
    REQUIRE(PollUntil(
        [&] { return Metric(checker, "brake_requests_total") >= 10000; },
        5000));
    const int64_t stop_ms = MonoMs();
    CHECK(d.daemon.Stop() == 0);
    INFO("stopped after " << MonoMs() - stop_ms << " ms");
    CHECK(MonoMs() - stop_ms < 5000);
  }
}

}  // namespace
}  // namespace brake::integration
