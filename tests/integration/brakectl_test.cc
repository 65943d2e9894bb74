// brakectl end to end against a real braked: exit codes 0 ok, 1 error,
// 2 usage, 3 denied; tables for people, the daemon's JSON with --json.
#include <catch2/catch.hpp>
#include <string>

#include "tests/integration/expect.h"
#include "tests/integration/harness.h"

namespace brake::integration {
namespace {

using Catch::Matchers::Contains;

const char* kQuotaLimits =
    R"([{"name":"daily_calls","resource":"requests","algorithm":"quota",)"
    R"("limit":1,"period":"day"}])";

// The --json output of a brakectl run: one JSON object.
json JsonOut(const ProgramResult& run) {
  INFO("stdout: " << run.out << "\nstderr: " << run.err);
  json out = json::parse(run.out, nullptr, false);
  REQUIRE(out.is_object());
  return out;
}

TEST_CASE("brakectl --json ping exits 0 with the daemon's reply",
          "[integration]") {
  RunningDaemon d;
  ProgramResult run = RunBrakectl(d.daemon.socket_path(), {"--json", "ping"});
  INFO("stderr: " << run.err);
  CHECK(run.exit_code == 0);
  json out = JsonOut(run);
  CHECK(out["ok"] == true);
  CHECK(out["version"].is_string());

  ProgramResult human = RunBrakectl(d.daemon.socket_path(), {"ping"});
  CHECK(human.exit_code == 0);
  CHECK_FALSE(human.out.empty());
}

TEST_CASE("brakectl acquire: granted exits 0, denied exits 3",
          "[integration]") {
  RunningDaemon d;
  const std::string& socket = d.daemon.socket_path();
  ProgramResult set = RunBrakectl(
      socket, {"policy", "set", "user:alice", "--limits", kQuotaLimits});
  INFO("policy set stderr: " << set.err);
  REQUIRE(set.exit_code == 0);

  ProgramResult granted = RunBrakectl(
      socket, {"--json", "acquire", "--user", "alice", "--task", "t1"});
  CHECK(granted.exit_code == 0);
  json grant = JsonOut(granted);
  CHECK(grant["granted"] == true);
  REQUIRE(grant["lease"].is_string());

  ProgramResult denied = RunBrakectl(
      socket, {"--json", "acquire", "--user", "alice", "--task", "t1"});
  CHECK(denied.exit_code == 3);
  json denial = JsonOut(denied);
  CHECK(denial["granted"] == false);
  CHECK(denial["reason"] == "reserved");  // the first lease holds it
  CHECK(denial["held"] == 1);
  CHECK(denial["limit"] == "daily_calls");

  ProgramResult human =
      RunBrakectl(socket, {"acquire", "--user", "alice", "--task", "t1"});
  CHECK(human.exit_code == 3);
  CHECK_THAT(human.out + human.err, Contains("reserved"));

  // The lease from the first acquire commits through brakectl too.
  ProgramResult commit = RunBrakectl(
      socket, {"--json", "commit", grant["lease"].get<std::string>(),
               "--tokens", "42"});
  CHECK(commit.exit_code == 0);
  CHECK(JsonOut(commit)["charged_tokens"] == 42);
  Client c = d.daemon.Connect();
  CHECK(CallOk(c, {{"op", "status"}, {"user", "alice"}})["spend"]["tokens"] ==
        42);
}

TEST_CASE("brakectl policy set then status --user shows the limit",
          "[integration]") {
  RunningDaemon d;
  const std::string& socket = d.daemon.socket_path();
  REQUIRE(RunBrakectl(socket,
                      {"policy", "set", "user:alice", "--limits", kQuotaLimits})
              .exit_code == 0);

  ProgramResult status = RunBrakectl(socket, {"status", "--user", "alice"});
  INFO("stdout: " << status.out << "\nstderr: " << status.err);
  CHECK(status.exit_code == 0);
  CHECK_THAT(status.out, Contains("daily_calls"));
  CHECK_THAT(status.out, Contains("user:alice"));

  ProgramResult list = RunBrakectl(socket, {"policy", "list"});
  CHECK(list.exit_code == 0);
  CHECK_THAT(list.out, Contains("user:alice"));

  // What brakectl set is what the socket reports.
  Client c = d.daemon.Connect();
  json policy = CallOk(c, {{"op", "policy.get"}, {"scope", "user:alice"}});
  CHECK(policy["policy"]["limits"][0]["name"] == "daily_calls");
}

TEST_CASE("brakectl --json passes the daemon's reply through unchanged",
          "[integration]") {
  RunningDaemon d;
  Client c = d.daemon.Connect();
  CallOk(c, {{"op", "policy.set"},
             {"scope", "user:alice"},
             {"limits", json::parse(kQuotaLimits)}});
  json direct = CallOk(c, {{"op", "policy.get"}, {"scope", "user:alice"}});
  json via_ctl = JsonOut(RunBrakectl(
      d.daemon.socket_path(), {"--json", "policy", "get", "user:alice"}));
  direct.erase("id");
  via_ctl.erase("id");
  CHECK(via_ctl == direct);
}

TEST_CASE("brakectl exits 1 when the socket is unreachable", "[integration]") {
  TempDir dir;
  ProgramResult run =
      RunBrakectl(dir.File("nobody-listens.sock"), {"--json", "ping"});
  CHECK(run.exit_code == 1);
  CHECK(run.out.empty());
  CHECK_FALSE(run.err.empty());
}

TEST_CASE("brakectl exits 1 on an error reply and 2 on a usage error",
          "[integration]") {
  RunningDaemon d;
  const std::string& socket = d.daemon.socket_path();
  ProgramResult unknown_lease =
      RunBrakectl(socket, {"commit", "no-such-lease", "--tokens", "1"});
  CHECK(unknown_lease.exit_code == 1);
  CHECK_THAT(unknown_lease.err, Contains("unknown_lease"));

  CHECK(RunBrakectl(socket, {"no-such-command"}).exit_code == 2);
  CHECK(RunBrakectl(socket, {"acquire", "--user", "alice"}).exit_code == 2);
}

}  // namespace
}  // namespace brake::integration
