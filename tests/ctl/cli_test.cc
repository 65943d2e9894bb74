// The whole CLI against a fake daemon: requests sent, output, exit codes.
#include "ctl/cli.h"

#include <catch2/catch.hpp>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

namespace brake::ctl {
namespace {

using nlohmann::json;

// Records what brakectl sent and answers with a canned line.
struct OneReplyDaemon {
  std::string reply;                     // the line to return
  std::optional<Status> connect_error;   // fail Connect with this
  std::optional<Status> exchange_error;  // fail Exchange with this
  // Observed:
  int connects = 0;
  std::string socket_path;
  std::string request_line;
  json id;
  int64_t timeout_ms = 0;
};

class OneReplyTransport : public Transport {
 public:
  explicit OneReplyTransport(OneReplyDaemon* daemon) : daemon_(daemon) {}
  Result<std::string> Exchange(std::string_view request_line, const json& id,
                               int64_t timeout_ms) override {
    daemon_->request_line = std::string(request_line);
    daemon_->id = id;
    daemon_->timeout_ms = timeout_ms;
    if (daemon_->exchange_error) return *daemon_->exchange_error;
    return daemon_->reply;
  }

 private:
  OneReplyDaemon* daemon_;
};

struct CtlOutcome {
  int code;
  std::string out;
  std::string err;
};

CtlOutcome RunCtl(OneReplyDaemon* daemon, std::vector<const char*> args,
               std::map<std::string, std::string> environment = {},
               const std::string& stdin_text = "") {
  CtlEnv env;
  env.connect = [daemon](const std::string& path,
                         int64_t) -> Result<std::unique_ptr<Transport>> {
    ++daemon->connects;
    daemon->socket_path = path;
    if (daemon->connect_error) return *daemon->connect_error;
    return std::unique_ptr<Transport>(new OneReplyTransport(daemon));
  };
  env.get_env =
      [environment](const std::string& name) -> std::optional<std::string> {
    auto it = environment.find(name);
    if (it == environment.end()) return std::nullopt;
    return it->second;
  };
  env.read_file = [](const std::string& path) -> Result<std::string> {
    return Status(ErrorCode::kUnavailable, "cannot read " + path);
  };
  env.uid = 1000;
  args.insert(args.begin(), "brakectl");
  std::istringstream in(stdin_text);
  std::ostringstream out, err;
  int code = Run(static_cast<int>(args.size()), args.data(), in, out, err, env);
  return {code, out.str(), err.str()};
}

json Sent(const OneReplyDaemon& daemon) { return json::parse(daemon.request_line); }

TEST_CASE("a granted acquire sends the request and prints the lease", "[ctl]") {
  OneReplyDaemon daemon;
  daemon.reply =
      R"({"id":1,"ok":true,"granted":true,"lease":"L9","waited_ms":0})";
  CtlOutcome o = RunCtl(&daemon, {"acquire", "--user", "alice", "--task", "t-42",
                               "--tokens", "1200"});
  CHECK(o.code == kExitOk);
  CHECK(o.out.rfind("lease L9\n", 0) == 0);
  CHECK(o.err.empty());
  CHECK(Sent(daemon) == json::parse(R"({"id":1,"op":"acquire","user":"alice",
                                        "task":"t-42","tokens":1200})"));
  CHECK(daemon.id == json(1));
  CHECK(daemon.timeout_ms == kDefaultTimeoutMs);
  CHECK(daemon.socket_path == "/tmp/brake-1000/braked.sock");
}

TEST_CASE("a denied acquire exits 3, with and without --json", "[ctl]") {
  OneReplyDaemon daemon;
  daemon.reply =
      R"({"id":1,"ok":true,"granted":false,"reason":"cost_cap",)"
      R"("scope":"user:alice","limit":"daily","retry_after_ms":null})";
  CtlOutcome human = RunCtl(&daemon, {"acquire", "--user", "a", "--task", "t"});
  CHECK(human.code == kExitDenied);
  CHECK(human.out.rfind("denied       cost_cap\n", 0) == 0);
  CtlOutcome raw =
      RunCtl(&daemon, {"--json", "acquire", "--user", "a", "--task", "t"});
  CHECK(raw.code == kExitDenied);
  CHECK(raw.out == daemon.reply + "\n");
}

TEST_CASE("brakectl --json prints the reply byte for byte", "[ctl]") {
  OneReplyDaemon daemon;
  // Odd spacing, key order and escapes must all survive.
  daemon.reply =
      "{ \"ok\" : true,\"version\":\"0.1.0\" ,\"id\":1, "
      "\"x\":\"\\u00e9\\n\",\"f\":1.50}";
  CtlOutcome o = RunCtl(&daemon, {"ping", "--json"});
  CHECK(o.code == kExitOk);
  CHECK(o.out == daemon.reply + "\n");
  CHECK(o.err.empty());
}

TEST_CASE("an ok:false reply exits 1 with the code and message", "[ctl]") {
  OneReplyDaemon daemon;
  daemon.reply = R"({"id":1,"ok":false,"error":{"code":"forbidden",)"
                 R"("message":"policy.set: admin peers only"}})";
  CtlOutcome o = RunCtl(&daemon, {"policy", "set", "user:a", "--limits", "[]"});
  CHECK(o.code == kExitError);
  CHECK(o.out.empty());
  CHECK(o.err == "brakectl: forbidden: policy.set: admin peers only\n");
  CtlOutcome raw = RunCtl(&daemon, {"--json", "policy", "delete", "user:a"});
  CHECK(raw.code == kExitError);
  CHECK(raw.out == daemon.reply + "\n");
}

TEST_CASE("a malformed reply is an error", "[ctl]") {
  OneReplyDaemon daemon;
  for (const char* reply :
       {"not json", "[1]", R"({"id":1})", R"({"ok":"yes"})"}) {
    daemon.reply = reply;
    CtlOutcome o = RunCtl(&daemon, {"ping"});
    CHECK(o.code == kExitError);
    CHECK_THAT(o.err, Catch::Contains("malformed reply"));
  }
}

TEST_CASE("an unreachable daemon exits 1 with the transport's message",
          "[ctl]") {
  OneReplyDaemon daemon;
  daemon.connect_error = Status(
      ErrorCode::kUnavailable,
      "cannot connect to /x: No such file or directory (is braked running?)");
  CtlOutcome o = RunCtl(&daemon, {"--socket", "/x", "ping"});
  CHECK(o.code == kExitError);
  CHECK(o.err ==
        "brakectl: cannot connect to /x: No such file or directory (is braked "
        "running?)\n");
  daemon.connect_error.reset();
  daemon.exchange_error =
      Status(ErrorCode::kUnavailable, "timed out after 5 ms");
  o = RunCtl(&daemon, {"--timeout-ms", "5", "ping"});
  CHECK(o.code == kExitError);
  CHECK(o.err == "brakectl: timed out after 5 ms\n");
}

TEST_CASE("usage errors exit 2 before connecting", "[ctl]") {
  OneReplyDaemon daemon;
  struct Case {
    std::vector<const char*> args;
    const char* err;
  };
  const std::vector<Case> cases = {
      {{"acquire", "--user", "a", "--task", "t", "--tokens", "-3"},
       "brakectl: acquire: --tokens: must be an integer >= 0\n"
       "usage: brakectl acquire --user U --task T"},
      {{"frobnicate"}, "brakectl: unknown command 'frobnicate'"},
      {{"policy"}, "brakectl: policy: missing subcommand"},
      {{"breaker", "smash", "task:t"},
       "brakectl: breaker: unknown subcommand 'smash'"},
      {{"--timeout-ms", "0", "ping"}, "--timeout-ms: must be an integer >= 1"},
      {{"--timeout-ms", "ping"}, "--timeout-ms: must be an integer >= 1"},
      {{"ping", "--socket"}, "--socket: missing value"},
      {{"--json=1", "ping"}, "--json: takes no value"},
      {{"--socket", "/a", "--socket", "/b", "ping"},
       "--socket: given more than once"},
      {{}, "usage: brakectl [--socket PATH]"},
      {{"help", "nothing"}, "brakectl: help: unknown command 'nothing'"},
  };
  for (const Case& c : cases) {
    std::string line;
    for (const char* a : c.args) line += std::string(a) + " ";
    INFO(line);
    CtlOutcome o = RunCtl(&daemon, c.args);
    CHECK(o.code == kExitUsage);
    CHECK(o.out.empty());
    CHECK_THAT(o.err, Catch::Contains(c.err));
  }
  CHECK(daemon.connects == 0);
}

TEST_CASE("an unreadable policy file exits 1", "[ctl]") {
  OneReplyDaemon daemon;
  CtlOutcome o =
      RunCtl(&daemon, {"policy", "set", "user:a", "--file", "/no/such"});
  CHECK(o.code == kExitError);
  CHECK(o.err == "brakectl: policy set: cannot read /no/such\n");
  CHECK(daemon.connects == 0);
}

TEST_CASE("brakectl policy set --file - reads standard input", "[ctl]") {
  OneReplyDaemon daemon;
  daemon.reply = R"({"id":1,"ok":true})";
  CtlOutcome o = RunCtl(&daemon, {"policy", "set", "task:*", "--file", "-"}, {},
                     R"({"limits":[{"name":"inflight"}]})");
  CHECK(o.code == kExitOk);
  CHECK(o.out == "OK\n");
  CHECK(Sent(daemon) ==
        json::parse(R"({"id":1,"op":"policy.set","scope":"task:*",
                                        "limits":[{"name":"inflight"}]})"));
}

TEST_CASE("the socket comes from --socket, BRAKE_SOCKET, then the default",
          "[ctl]") {
  OneReplyDaemon daemon;
  daemon.reply = R"({"id":1,"ok":true,"version":"1"})";
  std::map<std::string, std::string> env = {{"BRAKE_SOCKET", "/env.sock"},
                                            {"XDG_RUNTIME_DIR", "/run/user/7"}};
  REQUIRE(RunCtl(&daemon, {"--socket", "/flag.sock", "ping"}, env).code == 0);
  CHECK(daemon.socket_path == "/flag.sock");
  REQUIRE(RunCtl(&daemon, {"ping", "--socket=/eq.sock"}, env).code == 0);
  CHECK(daemon.socket_path == "/eq.sock");
  REQUIRE(RunCtl(&daemon, {"ping"}, env).code == 0);
  CHECK(daemon.socket_path == "/env.sock");
  env["BRAKE_SOCKET"] = "";
  REQUIRE(RunCtl(&daemon, {"ping"}, env).code == 0);
  CHECK(daemon.socket_path == "/run/user/7/brake/braked.sock");
  REQUIRE(RunCtl(&daemon, {"ping"}).code == 0);
  CHECK(daemon.socket_path == "/tmp/brake-1000/braked.sock");
}

TEST_CASE("the reply timeout covers a waiting acquire", "[ctl]") {
  OneReplyDaemon daemon;
  daemon.reply =
      R"({"id":1,"ok":true,"granted":true,"lease":"L","waited_ms":9})";
  REQUIRE(RunCtl(&daemon, {"--timeout-ms", "500", "acquire", "--user", "a",
                           "--task", "t", "--wait-ms", "2000"})
              .code == kExitOk);
  CHECK(daemon.timeout_ms == 2500);
  REQUIRE(RunCtl(&daemon, {"acquire", "--user", "a", "--task", "t", "--wait-ms",
                           "9223372036854775807"})
              .code == kExitOk);
  CHECK(daemon.timeout_ms == INT64_MAX);
}

TEST_CASE("global options work after the command and flag values are kept",
          "[ctl]") {
  OneReplyDaemon daemon;
  daemon.reply = R"({"id":1,"ok":true,"scope":"user:--json","limits":[]})";
  CtlOutcome o = RunCtl(&daemon, {"status", "--user", "--json"});
  CHECK(o.code == kExitOk);
  CHECK(Sent(daemon)["user"] == "--json");
  CHECK(o.out.rfind("scope user:--json\n", 0) == 0);
  o = RunCtl(&daemon, {"status", "--json", "--user", "x"});
  CHECK(o.out == daemon.reply + "\n");
}

TEST_CASE("every command renders its success reply", "[ctl]") {
  struct Case {
    std::vector<const char*> args;
    const char* reply;
    const char* out;
  };
  const std::vector<Case> cases = {
      {{"ping"},
       R"({"id":1,"ok":true,"version":"0.1.0"})",
       "PONG (braked 0.1.0)\n"},
      {{"cancel", "L1"}, R"({"id":1,"ok":true})", "OK\n"},
      {{"reset", "global"}, R"({"id":1,"ok":true})", "OK\n"},
      {{"breaker", "reset", "task:t"}, R"({"id":1,"ok":true})", "OK\n"},
      {{"prices", "set", "m", "--input", "1", "--output", "2"},
       R"({"id":1,"ok":true})",
       "OK\n"},
      {{"commit", "L1", "--tokens", "5"},
       R"({"id":1,"ok":true,"charged_tokens":5,"charged_usd":0.5})",
       "charged_tokens  5\ncharged_usd     0.5\n"},
      {{"metrics"}, R"({"id":1,"ok":true,"text":"up 1\n"})", "up 1\n"},
      {{"breaker", "list"},
       R"({"id":1,"ok":true,"breakers":[]})",
       "no breakers open\n"},
      {{"policy", "list"},
       R"({"id":1,"ok":true,"policies":{}})",
       "no policies\n"},
      {{"usage", "--user", "a"},
       R"({"id":1,"ok":true,"rows":[]})",
       "no usage\n"},
  };
  for (const Case& c : cases) {
    INFO(c.args[0]);
    OneReplyDaemon daemon;
    daemon.reply = c.reply;
    CtlOutcome o = RunCtl(&daemon, c.args);
    CHECK(o.code == kExitOk);
    CHECK(o.out == c.out);
    CHECK(o.err.empty());
  }
}

TEST_CASE("help comes from the command table", "[ctl]") {
  OneReplyDaemon daemon;
  CtlOutcome o = RunCtl(&daemon, {"help"});
  CHECK(o.code == kExitOk);
  for (const char* name :
       {"ping", "status", "acquire", "commit", "cancel", "policy set",
        "policy get", "policy list", "policy delete", "reset", "breaker list",
        "breaker trip", "breaker reset", "prices set", "usage", "metrics",
        "busiest"}) {
    CHECK_THAT(o.out, Catch::Contains(std::string("  ") + name + " "));
  }
  CHECK_THAT(o.out, Catch::Contains("/tmp/brake-1000/braked.sock"));
  o = RunCtl(&daemon, {"help", "prices", "set"});
  CHECK(o.code == kExitOk);
  CHECK_THAT(
      o.out,
      Catch::StartsWith(
          "usage: brakectl prices set MODEL --input USD --output USD\n"));
  CHECK_THAT(o.out,
             Catch::Contains("Sends op \"prices.set\"; allowed to admin"));
  o = RunCtl(&daemon, {"commit", "--help"});
  CHECK(o.code == kExitOk);
  CHECK_THAT(o.out, Catch::Contains("--outcome ok|error|timeout|throttled"));
  o = RunCtl(&daemon, {"help", "breaker"});
  CHECK(o.code == kExitOk);
  CHECK_THAT(o.out,
             Catch::Contains("brakectl breaker trip SCOPE [--open-ms N]"));
  o = RunCtl(&daemon, {"policy", "-h"});
  CHECK(o.code == kExitOk);
  CHECK_THAT(o.out, Catch::Contains("brakectl policy list"));
  o = RunCtl(&daemon, {"--version"});
  CHECK(o.code == kExitOk);
  CHECK_THAT(o.out, Catch::StartsWith("brakectl "));
  CHECK(daemon.connects == 0);
}

}  // namespace
}  // namespace brake::ctl
