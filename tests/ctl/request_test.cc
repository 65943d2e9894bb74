// brakectl words -> request objects, from the command table.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "ctl/args.h"
#include "ctl/commands.h"

namespace brake::ctl {
namespace {

using nlohmann::json;

std::vector<std::string> Split(const std::string& line) {
  std::vector<std::string> words;
  std::string word;
  bool quoted = false, in_word = false;
  for (char c : line) {
    if (c == '\'') {
      quoted = !quoted;
      in_word = true;
    } else if (c == ' ' && !quoted) {
      if (in_word) words.push_back(word);
      word.clear();
      in_word = false;
    } else {
      word += c;
      in_word = true;
    }
  }
  if (in_word) words.push_back(word);
  return words;
}

BuildContext FakeFiles() {
  BuildContext context;
  context.read_file = [](const std::string& path) -> Result<std::string> {
    if (path == "policy.json") {
      return std::string(
          R"({"limits":[{"name":"rpm"}],"breaker":{"open_ms":5}})");
    }
    if (path == "bad.json") return std::string("{nope");
    return Status(ErrorCode::kUnavailable, "cannot read " + path);
  };
  return context;
}

// Builds the request for a command line such as "acquire --user a".
Result<json> Build(const std::string& line) {
  std::vector<std::string> words = Split(line);
  size_t consumed = 0;
  const CommandSpec* command = FindCommand(words, &consumed);
  if (command == nullptr) return UsageError("no such command");
  return BuildRequest(
      *command, std::vector<std::string>(words.begin() + consumed, words.end()),
      FakeFiles());
}

TEST_CASE("each command's words build the documented request", "[ctl]") {
  struct Case {
    const char* line;
    const char* request;
  };
  const Case cases[] = {
      {"ping", R"({"op":"ping"})"},
      {"metrics", R"({"op":"metrics"})"},
      {"status --user alice", R"({"op":"status","user":"alice"})"},
      {"status --task t-42", R"({"op":"status","task":"t-42"})"},
      {"status --resource=openai", R"({"op":"status","resource":"openai"})"},
      {"acquire --user alice --task t-42",
       R"({"op":"acquire","user":"alice","task":"t-42"})"},
      {"acquire --user alice --task t-42 --tokens 1200 --requests 0 "
       "--model gpt-4o --resource openai --fingerprint 9f2c --parent t-7 "
       "--wait-ms 250",
       R"({"op":"acquire","user":"alice","task":"t-42","tokens":1200,
           "requests":0,"model":"gpt-4o","resource":"openai",
           "fingerprint":"9f2c","parent":"t-7","wait_ms":250})"},
      {"commit L1", R"({"op":"commit","lease":"L1"})"},
      {"commit L1 --tokens 1350 --input-tokens 1000 --output-tokens 350 "
       "--latency-ms 812 --outcome ok",
       R"({"op":"commit","lease":"L1","tokens":1350,"input_tokens":1000,
           "output_tokens":350,"latency_ms":812,"outcome":"ok"})"},
      {"commit L1 --outcome throttled --retry-after-ms 3000",
       R"({"op":"commit","lease":"L1","outcome":"throttled",
           "retry_after_ms":3000})"},
      {"cancel L1", R"({"op":"cancel","lease":"L1"})"},
      {"policy set user:alice --limits "
       "'[{\"name\":\"rpm\",\"resource\":\"requests\"}]'",
       R"({"op":"policy.set","scope":"user:alice",
           "limits":[{"name":"rpm","resource":"requests"}]})"},
      {"policy set user:* '{\"limits\":[],\"breaker\":{\"open_ms\":1}}'",
       R"({"op":"policy.set","scope":"user:*","limits":[],
           "breaker":{"open_ms":1}})"},
      {"policy set global '[{\"name\":\"x\"}]'",
       R"({"op":"policy.set","scope":"global","limits":[{"name":"x"}]})"},
      {"policy set task:t --file policy.json",
       R"({"op":"policy.set","scope":"task:t","limits":[{"name":"rpm"}],
           "breaker":{"open_ms":5}})"},
      {"policy set task:t --file policy.json --limits '[]'",
       R"({"op":"policy.set","scope":"task:t","limits":[],
           "breaker":{"open_ms":5}})"},
      {"policy set resource:openai --breaker '{\"open_ms\":9}'",
       R"({"op":"policy.set","scope":"resource:openai",
           "breaker":{"open_ms":9}})"},
      {"policy get user:alice", R"({"op":"policy.get","scope":"user:alice"})"},
      {"policy list", R"({"op":"policy.list"})"},
      {"policy delete task:*", R"({"op":"policy.delete","scope":"task:*"})"},
      {"reset user:bob", R"({"op":"reset","scope":"user:bob"})"},
      {"breaker list", R"({"op":"breaker.list"})"},
      {"busiest", R"({"op":"top","by":"user"})"},
      {"busiest --by task --limit 5", R"({"op":"top","by":"task","limit":5})"},
      {"breaker trip task:t-1", R"({"op":"breaker.trip","scope":"task:t-1"})"},
      {"breaker trip task:t-1 --open-ms 60000",
       R"({"op":"breaker.trip","scope":"task:t-1","open_ms":60000})"},
      {"breaker reset resource:db",
       R"({"op":"breaker.reset","scope":"resource:db"})"},
      {"prices set gpt-4o --input 2.5 --output 10",
       R"({"op":"prices.set","model":"gpt-4o","input_usd_per_mtok":2.5,
           "output_usd_per_mtok":10.0})"},
      {"usage --user alice", R"({"op":"usage","user":"alice"})"},
      {"usage --user alice --task t --since 2024-03-01 --by model",
       R"({"op":"usage","user":"alice","task":"t","since_ms":1709251200000,
           "by":"model"})"},
      {"usage --user alice --since 1700000000000 --by day",
       R"({"op":"usage","user":"alice","since_ms":1700000000000,"by":"day"})"},
      {"commit -- -odd-lease", R"({"op":"commit","lease":"-odd-lease"})"},
  };
  for (const Case& c : cases) {
    INFO(c.line);
    Result<json> request = Build(c.line);
    REQUIRE(request.ok());
    CHECK(*request == json::parse(c.request));
  }
}

TEST_CASE("bad words are usage errors that name the argument", "[ctl]") {
  struct Case {
    const char* line;
    const char* message;  // a substring of the error
  };
  const Case cases[] = {
      {"ping extra", "unexpected argument 'extra'"},
      {"status", "exactly one of --user, --task, --resource"},
      {"status --user a --task t", "exactly one of"},
      {"status --user", "--user: missing value"},
      {"status --user ''", "--user: must not be empty"},
      {"status --who a", "unknown option --who"},
      {"acquire --task t", "missing --user U"},
      {"acquire --user a", "missing --task T"},
      {"acquire --user a --user b --task t", "--user: given more than once"},
      {"acquire --user a --task t --tokens -1",
       "--tokens: must be an integer >= 0"},
      {"acquire --user a --task t --tokens 1.5",
       "--tokens: must be an integer"},
      {"acquire --user a --task t --tokens 12x",
       "--tokens: must be an integer"},
      {"acquire --user a --task t --requests ''",
       "--requests: must be an integer"},
      {"acquire --user a --task t --wait-ms 99999999999999999999",
       "--wait-ms: is out of range"},
      {"commit", "missing LEASE"},
      {"commit L1 --latency-ms -5", "--latency-ms: must be an integer >= 0"},
      {"commit L1 --outcome maybe", "--outcome: must be one of ok|error|"},
      {"commit L1 --retry-after-ms 5", "--retry-after-ms: only with --outcome"},
      {"commit L1 --outcome error --retry-after-ms 5", "--retry-after-ms"},
      {"cancel", "missing LEASE"},
      {"cancel a b", "unexpected argument 'b'"},
      {"policy set", "missing SCOPE"},
      {"policy set user:a", "missing policy"},
      {"policy set alice --limits '[]'", "SCOPE: must be global, user:NAME"},
      {"policy set user: --limits '[]'", "SCOPE: must be global"},
      {"policy set user:a --limits '{}'", "--limits: must be a JSON array"},
      {"policy set user:a --limits '[1,'",
       "--limits: is not valid JSON (at byte 4)"},
      {"policy set user:a --breaker '[]'", "--breaker: must be a JSON object"},
      {"policy set user:a '{bad'", "POLICY: is not valid JSON (at byte 2)"},
      {"policy set user:a '5'", "POLICY: must be a policy object"},
      {"policy set user:a '{\"scope\":\"user:b\"}'",
       "must not contain \"scope\""},
      {"policy set user:a '{}' --file policy.json", "either POLICY or --file"},
      {"policy set user:a --file bad.json",
       "--file: bad.json is not valid JSON (at byte 3)"},
      {"policy get", "missing SCOPE"},
      {"reset nobody", "SCOPE: must be global"},
      {"breaker trip task:t --open-ms soon", "--open-ms: must be an integer"},
      {"prices set gpt-4o --input 2.5", "missing --output USD"},
      {"prices set gpt-4o --input -1 --output 1",
       "--input: must be a number >= 0"},
      {"prices set gpt-4o --input nan --output 1", "--input: must be a number"},
      {"prices set gpt-4o --input 1e999 --output 1",
       "--input: must be a number"},
      {"prices set --input 1 --output 1", "missing MODEL"},
      {"usage", "missing --user U"},
      {"usage --user a --since yesterday", "--since: must be a date"},
      {"usage --user a --since 2024-02-30", "--since: is not a valid date"},
      {"usage --user a --by week", "--by: must be one of task|model|day"},
  };
  for (const Case& c : cases) {
    INFO(c.line);
    Result<json> request = Build(c.line);
    REQUIRE_FALSE(request.ok());
    CHECK(IsUsageError(request.status()));
    CHECK_THAT(request.status().message(), Catch::Contains(c.message));
  }
}

TEST_CASE("an unreadable policy file is an error, not a usage error", "[ctl]") {
  Result<json> request = Build("policy set user:a --file missing.json");
  REQUIRE_FALSE(request.ok());
  CHECK_FALSE(IsUsageError(request.status()));
  CHECK_THAT(request.status().message(), Catch::Contains("missing.json"));
}

TEST_CASE("commands are found by their longest name", "[ctl]") {
  size_t consumed = 0;
  const CommandSpec* c = FindCommand({"policy", "get", "user:a"}, &consumed);
  REQUIRE(c != nullptr);
  CHECK(c->op == "policy.get");
  CHECK(consumed == 2);
  CHECK(FindCommand({"policy"}, &consumed) == nullptr);
  CHECK(FindCommand({"policy", "frob"}, &consumed) == nullptr);
  CHECK(FindCommand({}, &consumed) == nullptr);
  CHECK(IsCommandGroup("policy"));
  CHECK(IsCommandGroup("breaker"));
  CHECK(IsCommandGroup("prices"));
  CHECK_FALSE(IsCommandGroup("acquire"));
}

TEST_CASE("the command table is consistent", "[ctl]") {
  for (const CommandSpec& c : Commands()) {
    INFO(c.name);
    CHECK_FALSE(c.op.empty());
    CHECK_FALSE(c.summary.empty());
    // Either one reply to render or a loop of its own (top), never both.
    CHECK((c.render != nullptr) != (c.run != nullptr));
    size_t consumed = 0;
    std::vector<std::string> words;
    std::string name(c.name);
    if (size_t space = name.find(' '); space != std::string::npos) {
      words = {name.substr(0, space), name.substr(space + 1)};
    } else {
      words = {name};
    }
    CHECK(FindCommand(words, &consumed) == &c);
    for (const ArgSpec& a : c.args) {
      CHECK_FALSE(a.metavar.empty());
      CHECK_FALSE(a.help.empty());
    }
  }
  size_t consumed = 0;
  const CommandSpec* trip = FindCommand({"breaker", "trip"}, &consumed);
  REQUIRE(trip != nullptr);
  CHECK(Synopsis(*trip) == "breaker trip SCOPE [--open-ms N]");
}

}  // namespace
}  // namespace brake::ctl
