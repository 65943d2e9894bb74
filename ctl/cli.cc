#include "ctl/cli.h"

#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <vector>

#include "common/sat_math.h"
#include "common/socket_path.h"
#include "ctl/commands.h"
#include "ctl/format.h"
#include "ctl/help.h"

#ifndef BRAKE_VERSION
#define BRAKE_VERSION "unknown"
#endif

namespace brake::ctl {

using nlohmann::json;

namespace {

// One request per connection, so a fixed id suffices to pick our reply out
// of anything else the daemon might send.
constexpr int kRequestId = 1;

struct GlobalOptions {
  std::optional<std::string> socket;
  bool json = false;
  bool help = false;
  bool version = false;
  int64_t timeout_ms = kDefaultTimeoutMs;
  std::vector<std::string> words;  // the command and its arguments
};

// Takes the global options out of `args`, wherever they appear. Every command
// flag takes a value, so the word after one is skipped: "--user --json" is
// the user "--json".
Result<GlobalOptions> ParseGlobalOptions(const std::vector<std::string>& args) {
  GlobalOptions options;
  bool timeout_given = false;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& word = args[i];
    if (word == "--") {
      options.words.insert(options.words.end(), args.begin() + i, args.end());
      break;
    }
    std::string name = word;
    std::optional<std::string> value;
    if (size_t eq = word.find('=');
        word.rfind("--", 0) == 0 && eq != std::string::npos) {
      name = word.substr(0, eq);
      value = word.substr(eq + 1);
    }
    auto take_value = [&]() -> Result<std::string> {
      if (value) return *value;
      if (i + 1 >= args.size()) return UsageError(name + ": missing value");
      return args[++i];
    };
    if (name == "--json" || name == "--help" || name == "-h" ||
        name == "--version") {
      if (value) return UsageError(name + ": takes no value");
      if (name == "--json") options.json = true;
      if (name == "--help" || name == "-h") options.help = true;
      if (name == "--version") options.version = true;
    } else if (name == "--socket") {
      if (options.socket) return UsageError("--socket: given more than once");
      Result<std::string> path = take_value();
      if (!path.ok()) return path.status();
      if (path->empty()) return UsageError("--socket: must not be empty");
      options.socket = *path;
    } else if (name == "--timeout-ms") {
      if (timeout_given)
        return UsageError("--timeout-ms: given more than once");
      timeout_given = true;
      Result<std::string> text = take_value();
      if (!text.ok()) return text.status();
      Parsed<int64_t> ms = ParseNonNegativeInt(*text);
      if (!ms.value || *ms.value < 1) {
        return UsageError("--timeout-ms: must be an integer >= 1");
      }
      options.timeout_ms = *ms.value;
    } else {
      options.words.push_back(word);
      // A command flag: its value is the next word, whatever it looks like.
      if (word.rfind("--", 0) == 0 && !value && i + 1 < args.size()) {
        options.words.push_back(args[++i]);
      }
    }
  }
  return options;
}

// Where the socket is when neither --socket nor BRAKE_SOCKET says.
std::string DefaultPath(const CtlEnv& env) {
  std::optional<std::string> xdg;
  if (env.get_env) xdg = env.get_env("XDG_RUNTIME_DIR");
  return DefaultSocketPathFor(xdg.value_or(""), env.uid);
}

// `help`, `help COMMAND`, `help GROUP`.
int Help(const std::vector<std::string>& topic, const CtlEnv& env,
         std::ostream& out, std::ostream& err) {
  if (topic.empty()) {
    WriteHelp(out, "$BRAKE_SOCKET, else " + DefaultPath(env));
    return kExitOk;
  }
  size_t consumed = 0;
  const CommandSpec* command = FindCommand(topic, &consumed);
  if (command != nullptr && consumed == topic.size()) {
    WriteCommandHelp(*command, out);
    return kExitOk;
  }
  if (topic.size() == 1 && IsCommandGroup(topic[0])) {
    WriteGroupHelp(topic[0], out);
    return kExitOk;
  }
  std::string name;
  for (const std::string& w : topic) name += (name.empty() ? "" : " ") + w;
  err << "brakectl: help: unknown command '" << name << "'\n";
  return kExitUsage;
}

}  // namespace

std::string ResolveSocketPath(const std::optional<std::string>& flag,
                              const CtlEnv& env) {
  if (flag) return *flag;
  std::optional<std::string> from_env;
  if (env.get_env) from_env = env.get_env("BRAKE_SOCKET");
  if (from_env && !from_env->empty()) return *from_env;
  return DefaultPath(env);
}

CtlEnv SystemEnv() {
  CtlEnv env;
  env.connect = &UnixSocketTransport::Connect;
  env.get_env = [](const std::string& name) -> std::optional<std::string> {
    const char* value = std::getenv(name.c_str());
    if (value == nullptr) return std::nullopt;
    return std::string(value);
  };
  env.read_file = [](const std::string& path) -> Result<std::string> {
    std::ifstream file(path, std::ios::binary);
    if (!file) {
      return Status(ErrorCode::kUnavailable,
                    "cannot read " + path + ": " + std::strerror(errno));
    }
    std::string text((std::istreambuf_iterator<char>(file)),
                     std::istreambuf_iterator<char>());
    if (file.bad()) {
      return Status(ErrorCode::kUnavailable, "cannot read " + path);
    }
    return text;
  };
  env.uid = static_cast<unsigned long>(::getuid());
  env.open_terminal = &OpenStdioTerminal;
  return env;
}

namespace {

// --version and help: answered without a command; nullopt otherwise.
std::optional<int> AnswerHelp(const GlobalOptions& options, const CtlEnv& env,
                              std::ostream& out, std::ostream& err) {
  const std::vector<std::string>& words = options.words;
  if (options.version) {
    out << "brakectl " << BRAKE_VERSION << '\n';
    return kExitOk;
  }
  if (!words.empty() && words[0] != "help") return std::nullopt;
  if (words.empty() && !options.help) {
    Help({}, env, err, err);
    return kExitUsage;
  }
  std::vector<std::string> topic;
  if (!words.empty()) topic.assign(words.begin() + 1, words.end());
  return Help(topic, env, out, err);
}

// The words name no command: a group's help, or what is wrong.
int NoSuchCommand(const GlobalOptions& options, std::ostream& out,
                  std::ostream& err) {
  const std::vector<std::string>& words = options.words;
  if (!IsCommandGroup(words[0])) {
    err << "brakectl: unknown command '" << words[0]
        << "'\nRun 'brakectl help' for the list of commands.\n";
    return kExitUsage;
  }
  if (options.help && words.size() == 1) {
    WriteGroupHelp(words[0], out);
    return kExitOk;
  }
  if (words.size() == 1) {
    err << "brakectl: " << words[0] << ": missing subcommand\n";
  } else {
    err << "brakectl: " << words[0] << ": unknown subcommand '" << words[1]
        << "'\n";
  }
  WriteGroupHelp(words[0], err);
  return kExitUsage;
}

// A command with a runner of its own (brakectl top).
int RunCommand(const CommandSpec& command, const json& request,
               const GlobalOptions& options, const CtlEnv& env,
               std::ostream& out, std::ostream& err) {
  RunContext run;
  run.socket_path = ResolveSocketPath(options.socket, env);
  run.timeout_ms = options.timeout_ms;
  run.connect = [&env, &run]() -> Result<std::unique_ptr<Transport>> {
    if (!env.connect) return Status::Unavailable("no transport");
    return env.connect(run.socket_path, run.timeout_ms);
  };
  run.json = options.json;
  std::unique_ptr<Terminal> terminal =
      env.open_terminal ? env.open_terminal() : OpenStdioTerminal();
  run.terminal = terminal.get();
  run.out = &out;
  run.err = &err;
  return command.run(request, run);
}

// One request, one reply: sent, checked, printed (raw with --json, else
// rendered); a refused acquire exits kExitDenied.
int Exchange(const CommandSpec& command, json request,
             const GlobalOptions& options, const CtlEnv& env,
             std::ostream& out, std::ostream& err) {
  request["id"] = kRequestId;
  // A waiting acquire may legitimately take wait_ms before it is answered.
  int64_t timeout_ms = options.timeout_ms;
  if (auto wait = request.find("wait_ms");
      wait != request.end() && wait->is_number_integer()) {
    timeout_ms = sat::SatAdd(timeout_ms, wait->get<int64_t>());
  }
  if (!env.connect) {
    err << "brakectl: no transport\n";
    return kExitError;
  }
  Result<std::unique_ptr<Transport>> transport = env.connect(
      ResolveSocketPath(options.socket, env), options.timeout_ms);
  if (!transport.ok()) {
    err << "brakectl: " << transport.status().message() << '\n';
    return kExitError;
  }
  Result<std::string> line =
      (*transport)->Exchange(DumpJson(request), json(kRequestId), timeout_ms);
  if (!line.ok()) {
    err << "brakectl: " << line.status().message() << '\n';
    return kExitError;
  }

  if (options.json) out << *line << '\n';
  json reply = json::parse(*line, nullptr, /*allow_exceptions=*/false);
  auto ok = reply.is_object() ? reply.find("ok") : reply.end();
  if (!reply.is_object() || ok == reply.end() || !ok->is_boolean()) {
    err << "brakectl: malformed reply from braked: " << *line << '\n';
    return kExitError;
  }
  if (!ok->get<bool>()) {
    const json empty = json::object();
    auto e = reply.find("error");
    const json& error = e != reply.end() && e->is_object() ? *e : empty;
    err << "brakectl: " << FormatField(error, "code") << ": "
        << FormatField(error, "message") << '\n';
    return kExitError;
  }
  if (!options.json && command.render != nullptr) {
    command.render(request, reply, out);
  }
  auto granted = reply.find("granted");
  if (granted != reply.end() && granted->is_boolean() &&
      !granted->get<bool>()) {
    return kExitDenied;
  }
  return kExitOk;
}

}  // namespace

int Run(int argc, const char* const argv[], std::istream& in, std::ostream& out,
        std::ostream& err, const CtlEnv& env) {
  std::vector<std::string> args;
  for (int i = 1; i < argc; ++i) args.emplace_back(argv[i]);
  Result<GlobalOptions> parsed = ParseGlobalOptions(args);
  if (!parsed.ok()) {
    err << "brakectl: " << parsed.status().message() << '\n';
    err << "Run 'brakectl help' for usage.\n";
    return kExitUsage;
  }
  const GlobalOptions& options = *parsed;
  if (std::optional<int> answered = AnswerHelp(options, env, out, err)) {
    return *answered;
  }
  const std::vector<std::string>& words = options.words;
  size_t consumed = 0;
  const CommandSpec* command = FindCommand(words, &consumed);
  if (command == nullptr) return NoSuchCommand(options, out, err);
  if (options.help) {
    WriteCommandHelp(*command, out);
    return kExitOk;
  }

  BuildContext context;
  context.read_file = [&](const std::string& path) -> Result<std::string> {
    if (path == "-") {
      std::string text((std::istreambuf_iterator<char>(in)),
                       std::istreambuf_iterator<char>());
      return text;
    }
    if (!env.read_file) return Status::Internal("cannot read " + path);
    return env.read_file(path);
  };
  Result<json> request = BuildRequest(
      *command, std::vector<std::string>(words.begin() + consumed, words.end()),
      context);
  if (!request.ok()) {
    err << "brakectl: " << command->name << ": " << request.status().message()
        << '\n';
    if (!IsUsageError(request.status())) return kExitError;
    err << "usage: brakectl " << Synopsis(*command) << '\n';
    return kExitUsage;
  }
  if (command->run != nullptr) {
    return RunCommand(*command, *request, options, env, out, err);
  }
  return Exchange(*command, std::move(*request), options, env, out, err);
}

}  // namespace brake::ctl
