// Peer credentials, in the manner of OpenSSH's peer-credential test: the
// socket is opened to everyone on purpose, and a client running as another
// uid (setpriv) must still be refused every admin op, and with uid_users it
// may act only as the users it is mapped to.
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "tests/integration/expect.h"
#include "tests/integration/harness.h"

namespace brake::integration {
namespace {

constexpr const char* kNobody = "65534";

bool CanSwitchUid() {
  if (getuid() != 0 || access("/usr/bin/setpriv", X_OK) != 0) return false;
  ProgramResult r = RunProgram({"/usr/bin/setpriv", "--reuid", kNobody,
                                "--regid", kNobody, "--clear-groups",
                                "/bin/true"});
  return r.exit_code == 0;
}

// brakectl --json ARGS as uid 65534.
ProgramResult AsNobody(const std::string& socket,
                       const std::vector<std::string>& args) {
  std::vector<std::string> argv = {"/usr/bin/setpriv", "--reuid", kNobody,
                                   "--regid", kNobody, "--clear-groups",
                                   BRAKECTL_PATH, "--socket", socket, "--json"};
  argv.insert(argv.end(), args.begin(), args.end());
  return RunProgram(argv);
}

std::string CtlErrorCodeOf(const ProgramResult& r) {
  json reply = json::parse(r.out, nullptr, false);
  if (!reply.is_object() || !reply.contains("error")) return "";
  return reply["error"].value("code", "");
}

TEST_CASE("a peer of another uid is refused every admin op",
          "[integration][peer]") {
  if (!CanSwitchUid()) {
    WARN("needs root and setpriv to run a client as another uid; skipped");
    return;
  }
  TempDir dir;
  chmod(dir.path().c_str(), 0755);  // reachable by everyone, on purpose
  Daemon d(dir.path(), json{{"socket_mode", "0666"},
                            {"uid_users", {{kNobody, {"mallory"}}}}});
  REQUIRE(d.Start());
  Client admin = d.Connect();
  CallOk(admin, {{"op", "policy.set"},
                 {"scope", "user:*"},
                 {"limits",
                  {{{"name", "daily"},
                    {"resource", "requests"},
                    {"algorithm", "quota"},
                    {"limit", 2},
                    {"period", "day"}}}}});
  const json before = CallOk(admin, {{"op", "policy.list"}});
  const std::string sock = d.socket_path();

  // Reads that anyone may do still work for the other uid.
  ProgramResult ping = AsNobody(sock, {"ping"});
  REQUIRE(ping.exit_code == 0);

  const std::vector<std::vector<std::string>> admin_ops = {
      {"policy", "set", "user:mallory", R"({"limits":[]})"},
      {"policy", "get", "user:*"},
      {"policy", "list"},
      {"policy", "delete", "user:*"},
      {"reset", "user:alice"},
      {"breaker", "trip", "user:alice"},
      {"breaker", "reset", "user:alice"},
      {"prices", "set", "gpt-4o", "--input", "0", "--output", "0"},
  };
  for (const auto& args : admin_ops) {
    INFO(args[0] << " " << args[1]);
    ProgramResult r = AsNobody(sock, args);
    CHECK(r.exit_code == 1);
    CHECK(CtlErrorCodeOf(r) == "forbidden");
  }
  CHECK(CallOk(admin, {{"op", "policy.list"}}) == before);  // nothing changed

  SECTION("uid_users: only the mapped users") {
    ProgramResult own =
        AsNobody(sock, {"acquire", "--user", "mallory", "--task", "m1"});
    CHECK(own.exit_code == 0);
    ProgramResult other =
        AsNobody(sock, {"acquire", "--user", "alice", "--task", "a1"});
    CHECK(other.exit_code == 1);
    CHECK(CtlErrorCodeOf(other) == "forbidden");
    CHECK(CtlErrorCodeOf(AsNobody(sock, {"status", "--user", "alice"})) ==
          "forbidden");
    CHECK(CtlErrorCodeOf(AsNobody(sock, {"usage", "--user", "alice"})) ==
          "forbidden");
    // A lease of alice's may not be settled by mallory's uid.
    json lease = CallOk(admin, {{"op", "acquire"},
                                {"user", "alice"},
                                {"task", "a2"}});
    REQUIRE(lease["granted"] == true);
    ProgramResult commit =
        AsNobody(sock, {"commit", lease["lease"].get<std::string>()});
    CHECK(CtlErrorCodeOf(commit) == "forbidden");
    // alice's quota was not touched by the refused acquire.
    json status = CallOk(admin, {{"op", "status"}, {"user", "alice"}});
    CHECK(status["limits"][0]["held"] == 1);
  }
}

}  // namespace
}  // namespace brake::integration
