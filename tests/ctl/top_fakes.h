// Fakes for `brakectl top` tests: a daemon with canned replies behind a
// Transport, a terminal with an explicit clock and scripted events, and a
// run of the real CLI against both. Test thread only.
#pragma once

#include <catch2/catch.hpp>
#include <deque>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "ctl/cli.h"
#include "ctl/top.h"

namespace brake::ctl {

struct FakeDaemon {
  std::deque<std::string> metrics;  // one per frame; the last one repeats
  std::string breakers_reply = R"({"ok":true,"breakers":[]})";
  // `top` replies by "by", one per frame (the last one repeats); none: an
  // older braked without the op.
  std::map<std::string, std::deque<std::string>> top_replies;
  bool refuse_connect = false;
  int fail_exchange_at = 0;  // the n-th exchange (1-based) breaks
  // Observed:
  int connects = 0;
  int exchanges = 0;
  std::vector<std::string> ops;        // every op but top
  std::vector<std::string> top_asked;  // "by" of each top asked
};

class FakeTransport : public Transport {
 public:
  explicit FakeTransport(FakeDaemon* d) : d_(d) {}
  Result<std::string> Exchange(std::string_view line, const nlohmann::json& id,
                               int64_t) override {
    ++d_->exchanges;
    if (d_->exchanges == d_->fail_exchange_at) {
      return Status::Unavailable("connection reset by peer");
    }
    nlohmann::json request = nlohmann::json::parse(line);
    CHECK(request["id"] == id);
    const std::string op = request["op"];
    nlohmann::json reply;
    if (op == "top") {
      const std::string by = request["by"];
      d_->top_asked.push_back(by);
      CHECK(request["limit"] == kTopSubjectRows);
      auto it = d_->top_replies.find(by);
      if (it == d_->top_replies.end()) {
        reply = {{"ok", false},
                 {"error",
                  {{"code", "unknown_op"}, {"message", "op: unknown op top"}}}};
      } else {
        reply = nlohmann::json::parse(it->second.front());
        if (it->second.size() > 1) it->second.pop_front();
      }
      reply["id"] = id;
      return reply.dump();
    }
    d_->ops.push_back(op);
    if (op == "metrics") {
      reply = {{"ok", true}, {"text", d_->metrics.front()}};
      if (d_->metrics.size() > 1) d_->metrics.pop_front();
    } else if (op == "breaker.list") {
      reply = nlohmann::json::parse(d_->breakers_reply);
    } else {
      FAIL("unexpected op " << op);
    }
    reply["id"] = id;
    return reply.dump();
  }

 private:
  FakeDaemon* d_;
};

// A clock that moves only while top waits, and scripted events.
class FakeTerminal : public Terminal {
 public:
  bool is_interactive = false;
  bool has_keys = false;
  int screen_rows = 0;
  int screen_columns = 0;
  std::deque<TerminalEvent> events;  // answered in turn; then timeouts
  int64_t now_ms = 0;
  std::vector<int64_t> waits;

  bool interactive() const override { return is_interactive; }
  bool reads_keys() const override { return has_keys; }
  int rows() override { return screen_rows; }
  int columns() override { return screen_columns; }
  int64_t NowMs() override { return now_ms; }
  int64_t WallMs() override { return 45296000 + now_ms; }
  TerminalEvent Wait(int64_t timeout_ms) override {
    waits.push_back(timeout_ms);
    if (!events.empty()) {
      TerminalEvent e = events.front();
      events.pop_front();
      return e;
    }
    now_ms += timeout_ms;
    return TerminalEvent::kTimeout;
  }
  bool stop_requested() override { return false; }
};

struct Outcome {
  int code;
  std::string out;
  std::string err;
};

inline Outcome RunTopCtl(FakeDaemon* daemon, FakeTerminal* terminal,
                         std::vector<const char*> args) {
  CtlEnv env;
  env.connect = [daemon](const std::string& path,
                         int64_t) -> Result<std::unique_ptr<Transport>> {
    CHECK(path == "/tmp/b.sock");
    ++daemon->connects;
    if (daemon->refuse_connect) {
      return Status::Unavailable("cannot connect to /tmp/b.sock");
    }
    return std::unique_ptr<Transport>(new FakeTransport(daemon));
  };
  env.get_env = [](const std::string&) { return std::nullopt; };
  env.open_terminal = [terminal]() -> std::unique_ptr<Terminal> {
    // The fake outlives the run; hand out a forwarding wrapper.
    struct Borrowed : Terminal {
      FakeTerminal* t;
      explicit Borrowed(FakeTerminal* t) : t(t) {}
      bool interactive() const override { return t->interactive(); }
      bool reads_keys() const override { return t->reads_keys(); }
      int rows() override { return t->rows(); }
      int columns() override { return t->columns(); }
      int64_t NowMs() override { return t->NowMs(); }
      int64_t WallMs() override { return t->WallMs(); }
      TerminalEvent Wait(int64_t ms) override { return t->Wait(ms); }
      bool stop_requested() override { return t->stop_requested(); }
    };
    return std::make_unique<Borrowed>(terminal);
  };
  args.insert(args.begin(), {"brakectl", "--socket", "/tmp/b.sock"});
  std::istringstream in;
  std::ostringstream out, err;
  int code = Run(static_cast<int>(args.size()), args.data(), in, out, err, env);
  return {code, out.str(), err.str()};
}

}  // namespace brake::ctl
