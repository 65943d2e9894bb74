// `brakectl top`: rates from two frames, what a frame shows, and the loop
// against a fake daemon and a fake terminal (explicit clock, scripted keys).
#include "ctl/top.h"

#include <catch2/catch.hpp>
#include <deque>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "ctl/cli.h"
#include "tests/ctl/top_fakes.h"

namespace brake::ctl {
namespace {

using nlohmann::json;

// The figures a canned metrics reply carries.
struct Figures {
  int64_t granted = 0;
  int64_t rate_limited = 0;
  int64_t cost_cap = 0;
  int64_t requests = 0;
  int64_t commits = 0;
  int64_t leases_open = 0;
  int64_t connections = 1;
  int64_t waiters = 0;
  int64_t batches = 0;
  double commit_seconds = 0;
  int64_t spend_tokens = 0;
  double spend_usd = 0;
  int64_t breakers_open = 0;
};

// Exposition text shaped like braked's.
std::string MetricsText(const Figures& f) {
  std::ostringstream t;
  t << "# HELP brake_requests_total Request lines handled.\n"
       "# TYPE brake_requests_total counter\n"
    << "brake_requests_total " << f.requests << "\n"
    << "brake_errors_total 0\n"
       "# TYPE brake_acquires_total counter\n"
    << "brake_acquires_total{result=\"granted\"} " << f.granted << "\n"
    << "brake_acquires_total{result=\"denied\",reason=\"rate_limited\"} "
    << f.rate_limited << "\n"
    << "brake_acquires_total{result=\"denied\",reason=\"quota_exhausted\"} 0\n"
    << "brake_acquires_total{result=\"denied\",reason=\"cost_cap\"} "
    << f.cost_cap << "\n"
    << "brake_commits_total " << f.commits << "\n"
    << "brake_cancels_total 0\n"
    << "brake_leases_open " << f.leases_open << "\n"
    << "brake_tasks 3\n"
    << "brake_connections " << f.connections << "\n"
    << "brake_storage_batches_total " << f.batches << "\n"
    << "brake_storage_failures_total 0\n"
    << "brake_storage_commit_seconds_total " << f.commit_seconds << "\n"
    << "brake_waiters " << f.waiters << "\n"
    << "brake_spend_tokens_total " << f.spend_tokens << "\n"
    << "brake_spend_usd_total " << f.spend_usd << "\n"
    << "brake_breakers{state=\"open\"} " << f.breakers_open << "\n"
    << "brake_breakers{state=\"half_open\"} 0\n"
    << "brake_storage_ok 1\n";
  return t.str();
}

TopSnapshot Snapshot(int64_t at_ms, const Figures& f,
                     json breakers = json::array()) {
  TopSnapshot s;
  s.at_ms = at_ms;
  Result<MetricSet> set = MetricSet::Parse(MetricsText(f));
  REQUIRE(set.ok());
  s.metrics = std::move(*set);
  s.breakers = std::move(breakers);
  return s;
}

// Two readings 2 s apart.
Figures First() {
  Figures f;
  f.granted = 100;
  f.rate_limited = 10;
  f.requests = 200;
  f.commits = 90;
  f.leases_open = 10;
  f.connections = 4;
  f.waiters = 2;
  f.batches = 10;
  f.commit_seconds = 0.005;
  f.spend_tokens = 1000;
  f.spend_usd = 0.5;
  return f;
}
Figures Second() {
  Figures f = First();
  f.granted = 300;      // +200 in 2 s: 100/s
  f.rate_limited = 50;  // +40: 20/s
  f.requests = 504;     // +304, 4 of them top's own: 150/s
  f.commits = 290;      // +200: 100/s
  f.leases_open = 12;
  f.batches = 20;  // +10 commits taking +0.02 s: 2 ms each
  f.commit_seconds = 0.025;
  f.spend_tokens = 5000;  // +4000: 2000/s
  f.spend_usd = 1.5;      // +1: 0.5/s
  return f;
}

TEST_CASE("top: rates come from the difference of two frames", "[ctl][top]") {
  TopSnapshot a = Snapshot(10000, First());
  TopSnapshot b = Snapshot(12000, Second());
  a.own_requests = 2;
  b.own_requests = 6;
  TopFrame f = ComputeFrame(&a, b);
  CHECK(f.interval_ms == 2000);
  CHECK(f.granted.total == 300);
  CHECK(f.granted.per_s == Approx(100));
  CHECK(f.denied.total == 50);
  CHECK(f.denied.per_s == Approx(20));
  REQUIRE(f.denied_by_reason.size() == 1);  // reasons never seen are left out
  CHECK(f.denied_by_reason[0].first == "rate_limited");
  CHECK(f.denied_by_reason[0].second.per_s == Approx(20));
  CHECK(f.requests.per_s == Approx(150));
  CHECK(f.commits.per_s == Approx(100));
  CHECK(f.errors.per_s == Approx(0));
  CHECK(f.leases_open == 12);
  CHECK(f.connections == 4);
  CHECK(f.waiters == 2);
  CHECK(f.tasks == 3);
  CHECK(f.storage_ok == 1);
  CHECK(f.storage_batches.per_s == Approx(5));
  CHECK(f.commit_ms == Approx(2.0));
  CHECK_FALSE(f.commit_since_start);
  CHECK(f.spend_tokens.per_s == Approx(2000));
  CHECK(f.spend_usd.per_s == Approx(0.5));
  CHECK(f.breakers_open == 0);
}

TEST_CASE("top: the first frame has totals but no rates", "[ctl][top]") {
  TopFrame f = ComputeFrame(nullptr, Snapshot(5000, First()));
  CHECK(f.interval_ms == 0);
  CHECK(f.granted.total == 100);
  CHECK_FALSE(f.granted.per_s);
  CHECK_FALSE(f.requests.per_s);
  // 0.005 s over 10 commits since the daemon started.
  CHECK(f.commit_ms == Approx(0.5));
  CHECK(f.commit_since_start);
}

TEST_CASE("top: a counter that went down was reset by a restart",
          "[ctl][top]") {
  Figures after = First();
  after.granted = 30;  // the daemon restarted and granted 30 since
  TopSnapshot before = Snapshot(0, Second());
  TopFrame f = ComputeFrame(&before, Snapshot(1000, after));
  CHECK(f.granted.per_s == Approx(30));
  // No storage commit in the interval: no latency to show.
  Figures idle = Second();
  TopSnapshot again = Snapshot(1000, idle);
  f = ComputeFrame(&before, again);
  CHECK(f.storage_batches.per_s == Approx(0));
  CHECK_FALSE(f.commit_ms);
  // Metrics an older daemon does not export stay unknown, not zero.
  TopSnapshot bare;
  bare.at_ms = 2000;
  REQUIRE(MetricSet::Parse("brake_leases_open 1\n").ok());
  bare.metrics = *MetricSet::Parse("brake_leases_open 1\n");
  f = ComputeFrame(&again, bare);
  CHECK_FALSE(f.waiters);
  CHECK_FALSE(f.spend_usd.total);
  CHECK_FALSE(f.granted.per_s);
}

std::string Join(const std::vector<std::string>& lines) {
  std::string s;
  for (const std::string& l : lines) s += l + "\n";
  return s;
}

TEST_CASE("top: a frame shows the rates, gauges and open breakers",
          "[ctl][top]") {
  TopSnapshot a = Snapshot(10000, First());
  TopSnapshot b = Snapshot(
      12000, Second(),
      json::parse(R"([{"scope":"task:t-42","state":"open","cause":"loop",
                       "retry_in_ms":1200}])"));
  a.own_requests = 2;
  b.own_requests = 6;
  FrameHeader header{"/run/brake/braked.sock", 45296000, 1000, true};
  std::string text = Join(RenderFrame(ComputeFrame(&a, b), header, 0, 0));
  CHECK(text ==
        "brake top  /run/brake/braked.sock  12:34:56 UTC  every 1s  (q quits)\n"
        "\n"
        "ACQUIRES        PER_S  TOTAL\n"
        "granted           100    300\n"
        "denied           20.0     50\n"
        "  rate_limited   20.0     50\n"
        "\n"
        "requests 150/s  commits 100/s  cancels 0/s  errors 0/s\n"
        "leases open 12  waiters 2  connections 4  tasks 3\n"
        "settled 2000 tokens/s  0.5 usd/s\n"
        "storage ok  5.0 commits/s  2.000 ms/commit  failures 0\n"
        "\n"
        "OPEN BREAKERS (1)\n"
        "SCOPE      STATE  CAUSE  RETRY_IN\n"
        "task:t-42  open   loop   1.2s\n");

  SECTION("the first frame says rates come later") {
    header.keys = false;
    text = Join(RenderFrame(ComputeFrame(nullptr, a), header, 0, 0));
    CHECK_THAT(text, Catch::StartsWith("brake top  /run/brake/braked.sock  "
                                       "12:34:56 UTC  every 1s\n"));
    CHECK_THAT(text, Catch::Contains("granted             -    100\n"));
    CHECK_THAT(text, Catch::Contains("rates: from the next frame on\n"));
    CHECK_THAT(text, Catch::Contains("settled 1000 tokens  0.5 usd\n"));
    CHECK_THAT(text, Catch::Contains("0.500 ms/commit (mean since start)"));
    CHECK_THAT(text, Catch::EndsWith("\nno breakers open\n"));
  }
  SECTION("a small screen cuts the frame and no line is wider than it") {
    std::vector<std::string> lines =
        RenderFrame(ComputeFrame(&a, b), header, 8, 20);
    REQUIRE(lines.size() == 8);
    CHECK(lines[7] == "... 8 more");
    for (const std::string& l : lines) CHECK(l.size() <= 20);
    CHECK(lines[0] == "brake top  /run/brak");
  }
  SECTION("breakers the daemon would not list") {
    b.breakers = nullptr;
    b.breakers_error = "forbidden: not an admin";
    text = Join(RenderFrame(ComputeFrame(&a, b), header, 0, 0));
    CHECK_THAT(text,
               Catch::EndsWith("\nbreakers: unavailable (forbidden: not an "
                               "admin); 0 open, 0 half_open\n"));
  }
}

TEST_CASE("top --json: one object per frame", "[ctl][top]") {
  TopSnapshot a = Snapshot(10000, First());
  TopSnapshot b = Snapshot(12000, Second());
  json j = FrameJson(ComputeFrame(&a, b), 1700000000000);
  CHECK(j["time_ms"] == 1700000000000);
  CHECK(j["interval_ms"] == 2000);
  CHECK(j["acquires"]["granted"] == json({{"total", 300}, {"per_s", 100}}));
  CHECK(j["acquires"]["denied"]["by_reason"]["rate_limited"]["per_s"] == 20);
  CHECK(j["leases_open"] == 12);
  CHECK(j["storage"]["ok"] == true);
  CHECK(j["storage"]["commit_ms"].get<double>() == Approx(2.0));
  CHECK(j["spend"]["usd"]["per_s"].get<double>() == Approx(0.5));
  CHECK(j["breakers"] == json::array());
  json first = FrameJson(ComputeFrame(nullptr, a), 0);
  CHECK(first["acquires"]["granted"]["per_s"].is_null());
}

// ---- The loop, through the CLI ---------------------------------------------

TEST_CASE("top --iterations 1 draws one frame and exits 0", "[ctl][top]") {
  FakeDaemon daemon;
  daemon.metrics = {MetricsText(First())};
  FakeTerminal terminal;
  Outcome o = RunTopCtl(&daemon, &terminal, {"top", "--iterations", "1"});
  CHECK(o.code == kExitOk);
  CHECK(o.err.empty());
  CHECK(daemon.ops == std::vector<std::string>{"metrics", "breaker.list"});
  CHECK(daemon.connects == 1);
  CHECK(terminal.waits.empty());  // nothing to wait for after the last frame
  CHECK_THAT(o.out, Catch::StartsWith("brake top  /tmp/b.sock  12:34:56 UTC  "
                                      "every 1s\n\nACQUIRES"));
  CHECK_THAT(o.out, Catch::Contains("granted             -    100\n"));
  CHECK(o.out.find('\x1b') == std::string::npos);  // not a terminal
}

TEST_CASE("top draws rates from the second frame on, frames apart",
          "[ctl][top]") {
  FakeDaemon daemon;
  Figures second = Second();
  // 50 requests from others, 3 of top's own (breaker.list, top, which this
  // older daemon does not know and is not asked again, then metrics).
  second.requests = 200 + 50 + 3;
  daemon.metrics = {MetricsText(First()), MetricsText(second)};
  FakeTerminal terminal;
  Outcome o = RunTopCtl(&daemon, &terminal,
                        {"top", "--interval-ms", "500", "--iterations", "2"});
  CHECK(o.code == kExitOk);
  CHECK(terminal.waits == std::vector<int64_t>{500});
  CHECK(daemon.connects == 1);  // one connection for every frame
  CHECK(daemon.ops.size() == 4);
  CHECK(daemon.top_asked == std::vector<std::string>{"user"});
  CHECK(o.out.find("BUSIEST") == std::string::npos);
  const size_t split = o.out.find("\n\nbrake top ");
  REQUIRE(split != std::string::npos);
  const std::string frame2 = o.out.substr(split + 2);
  // +200 grants in 0.5 s; +40 rate_limited denials.
  CHECK_THAT(frame2, Catch::Contains("granted           400    300\n"));
  CHECK_THAT(frame2, Catch::Contains("  rate_limited   80.0     50\n"));
  CHECK_THAT(frame2, Catch::Contains("requests 100/s  commits 400/s"));
  CHECK_THAT(frame2, Catch::Contains("settled 8000 tokens/s  2 usd/s\n"));
  CHECK_THAT(frame2, Catch::Contains("20.0 commits/s  2.000 ms/commit"));
}

TEST_CASE("top on a terminal redraws in place until q", "[ctl][top]") {
  FakeDaemon daemon;
  daemon.metrics = {MetricsText(First()), MetricsText(Second())};
  FakeTerminal terminal;
  terminal.is_interactive = true;
  terminal.has_keys = true;
  terminal.screen_rows = 40;
  terminal.screen_columns = 100;

  SECTION("q quits") {
    terminal.events = {TerminalEvent::kTimeout, TerminalEvent::kQuit};
    Outcome o = RunTopCtl(&daemon, &terminal, {"top"});
    CHECK(o.code == kExitOk);
    CHECK(daemon.ops.size() == 4);  // two frames
    CHECK_THAT(o.out, Catch::StartsWith("\x1b[?25l\x1b[2J\x1b[H"
                                        "brake top  /tmp/b.sock  12:34:56 UTC"
                                        "  every 1s  (q quits)\x1b[K\n"));
    CHECK_THAT(o.out, Catch::EndsWith("\x1b[J\x1b[?25h"));
    CHECK_THAT(o.out, Catch::Contains("\x1b[Hbrake top "));
  }
  SECTION("a stop signal ends it like q") {
    terminal.events = {TerminalEvent::kStop};
    Outcome o = RunTopCtl(&daemon, &terminal, {"top"});
    CHECK(o.code == kExitOk);
    CHECK(daemon.ops.size() == 2);
    CHECK_THAT(o.out, Catch::EndsWith("\x1b[?25h"));
  }
  SECTION("another key refreshes at once; a resize only redraws") {
    terminal.events = {TerminalEvent::kResize, TerminalEvent::kRefresh,
                       TerminalEvent::kQuit};
    Outcome o = RunTopCtl(&daemon, &terminal, {"top"});
    CHECK(o.code == kExitOk);
    CHECK(daemon.ops.size() == 4);  // the resize fetched nothing
    size_t frames = 0;
    for (size_t at = 0;
         (at = o.out.find("\x1b[Hbrake top", at)) != std::string::npos; ++at) {
      ++frames;
    }
    CHECK(frames == 3);
  }
  SECTION("--iterations ends it on a terminal too") {
    Outcome o = RunTopCtl(&daemon, &terminal, {"top", "--iterations", "3"});
    CHECK(o.code == kExitOk);
    CHECK(daemon.ops.size() == 6);
    CHECK(terminal.waits == std::vector<int64_t>{1000, 1000});
  }
}

TEST_CASE("top keeps going when the daemon goes away, and says so",
          "[ctl][top]") {
  FakeDaemon daemon;
  daemon.metrics = {MetricsText(First())};
  FakeTerminal terminal;

  SECTION("unreachable from the start") {
    daemon.refuse_connect = true;
    Outcome o = RunTopCtl(&daemon, &terminal, {"top", "--iterations", "2"});
    CHECK(o.code == kExitError);
    CHECK(o.out.empty());
    CHECK(o.err ==
          "brakectl: top: cannot connect to /tmp/b.sock\n"
          "brakectl: top: cannot connect to /tmp/b.sock\n");
  }
  SECTION("a broken connection is reopened for the next frame") {
    // The second frame's metrics, after the first's metrics, breaker.list
    // and top (unknown to this daemon).
    daemon.fail_exchange_at = 4;
    Outcome o = RunTopCtl(&daemon, &terminal, {"top", "--iterations", "3"});
    CHECK(o.code == kExitError);
    CHECK(daemon.connects == 2);
    CHECK(o.err == "brakectl: top: metrics: connection reset by peer\n");
    CHECK(o.out.find("\n\nbrake top ") != std::string::npos);  // 2 frames
  }
  SECTION("on a terminal the error shows in the frame") {
    daemon.refuse_connect = true;
    terminal.is_interactive = true;
    terminal.events = {TerminalEvent::kQuit};
    Outcome o = RunTopCtl(&daemon, &terminal, {"top"});
    CHECK(o.code == kExitError);
    CHECK(o.err.empty());
    CHECK_THAT(o.out, Catch::Contains("brakectl: cannot connect to /tmp/b.sock "
                                      "(retrying)\x1b[K\n"));
  }
  SECTION("a metrics reply that is not exposition text") {
    daemon.metrics = {"brake_requests_total{ 1\n"};
    Outcome o = RunTopCtl(&daemon, &terminal, {"top", "--iterations", "1"});
    CHECK(o.code == kExitError);
    CHECK(o.err == "brakectl: top: metrics: line 1: malformed labels\n");
  }
  SECTION("breakers the daemon refuses to list do not stop top") {
    daemon.breakers_reply =
        R"({"ok":false,"error":{"code":"forbidden","message":"admin only"}})";
    Outcome o = RunTopCtl(&daemon, &terminal, {"top", "--iterations", "1"});
    CHECK(o.code == kExitOk);
    CHECK_THAT(o.out,
               Catch::EndsWith("breakers: unavailable (forbidden: admin only);"
                               " 0 open, 0 half_open\n"));
  }
}

TEST_CASE("top --json prints one JSON object per frame", "[ctl][top]") {
  FakeDaemon daemon;
  daemon.metrics = {MetricsText(First()), MetricsText(Second())};
  FakeTerminal terminal;
  terminal.is_interactive = true;  // --json never draws escapes
  Outcome o =
      RunTopCtl(&daemon, &terminal, {"--json", "top", "--iterations", "2"});
  CHECK(o.code == kExitOk);
  std::istringstream lines(o.out);
  std::string line;
  std::vector<json> frames;
  while (std::getline(lines, line)) frames.push_back(json::parse(line));
  REQUIRE(frames.size() == 2);
  CHECK(frames[0]["acquires"]["granted"]["per_s"].is_null());
  CHECK(frames[1]["acquires"]["granted"]["per_s"] == 200);
  CHECK(frames[1]["interval_ms"] == 1000);
}

TEST_CASE("top: bad arguments are usage errors", "[ctl][top]") {
  const std::vector<std::vector<const char*>> bad = {
      {"top", "--interval-ms", "99"},   {"top", "--interval-ms", "3600001"},
      {"top", "--interval-ms", "fast"}, {"top", "--iterations", "0"},
      {"top", "--iterations", "-1"},    {"top", "extra"},
      {"top", "--frames", "2"},
  };
  for (const auto& args : bad) {
    FakeDaemon daemon;
    FakeTerminal terminal;
    Outcome o = RunTopCtl(&daemon, &terminal, args);
    INFO(o.err);
    CHECK(o.code == kExitUsage);
    CHECK_THAT(o.err, Catch::Contains("usage: brakectl top [--interval-ms N] "
                                      "[--iterations N]"));
    CHECK(daemon.connects == 0);
  }
}

TEST_CASE("top is listed by brakectl help", "[ctl][top]") {
  FakeDaemon daemon;
  FakeTerminal terminal;
  Outcome o = RunTopCtl(&daemon, &terminal, {"help"});
  CHECK(o.code == kExitOk);
  CHECK_THAT(o.out, Catch::Contains("  top  "));
  o = RunTopCtl(&daemon, &terminal, {"help", "top"});
  CHECK(o.code == kExitOk);
  CHECK_THAT(o.out, Catch::StartsWith("usage: brakectl top [--interval-ms N] "
                                      "[--iterations N]\n"));
  CHECK_THAT(o.out, Catch::Contains("--iterations N"));
  CHECK(daemon.connects == 0);
}

}  // namespace
}  // namespace brake::ctl
