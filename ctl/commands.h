// The table of brakectl commands: each names its wire op, its arguments, a
// one-line summary, how its words become a request and how its reply is
// shown (or, for a command that holds a conversation of its own such as
// `top`, the function that runs it). Help, argument parsing and dispatch all
// come from this one table.
//
// Building a request is pure apart from BuildContext::read_file (for
// `policy set --file`); rendering is pure. A usage error is a Status with code
// kBadRequest (exit code 2); any other failure (an unreadable file) is an
// error (exit code 1). Read-only after start; any thread.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "ctl/args.h"
#include "ctl/client.h"
#include "ctl/terminal.h"

namespace brake::ctl {

struct BuildContext {
  // The contents of the file at `path`; "-" means standard input.
  std::function<Result<std::string>(const std::string& path)> read_file;
};

// Completes `request` (already holding "op" and the declared fields) with
// what the table cannot express: choices between flags, JSON arguments.
using BuildFn = Status (*)(const ParsedArgs& args, const BuildContext& context,
                           nlohmann::json* request);

// Writes the human form of a successful ("ok": true) `reply` to `request`.
using RenderFn = void (*)(const nlohmann::json& request,
                          const nlohmann::json& reply, std::ostream& out);

// What a command that runs its own exchanges gets from the CLI.
struct RunContext {
  // Opens a new connection to the daemon (the socket brakectl resolved).
  std::function<Result<std::unique_ptr<Transport>>()> connect;
  std::string socket_path;
  int64_t timeout_ms = 0;  // per exchange
  bool json = false;       // --json was given
  Terminal* terminal = nullptr;
  std::ostream* out = nullptr;
  std::ostream* err = nullptr;
};

// Runs a command whose `request` holds its converted arguments (it is never
// sent as is) and returns the exit code.
using RunFn = int (*)(const nlohmann::json& request, RunContext& context);

struct CommandSpec {
  std::string_view name;      // "policy set": one or two words
  std::string_view op;        // "policy.set"
  std::string_view summary;   // one line for `brakectl help`
  bool admin = false;         // the daemon allows it to admin peers only
  std::vector<ArgSpec> args;  // positionals in order, then flags
  BuildFn build = nullptr;    // optional extra step after ApplyArgs()
  RenderFn render = nullptr;
  std::string_view synopsis = {};  // overrides the generated one
  RunFn run = nullptr;  // set: runs instead of one request and its reply
};

// Every command, in help order.
const std::vector<CommandSpec>& Commands();

// The command named by the leading words of `words` (two-word names win), or
// nullptr. On success `*consumed` is the number of words of the name.
const CommandSpec* FindCommand(const std::vector<std::string>& words,
                               size_t* consumed);

// True when `word` is the first word of a two-word command ("policy").
bool IsCommandGroup(std::string_view word);

// The request object for `command` given the words after its name, without
// an "id".
Result<nlohmann::json> BuildRequest(const CommandSpec& command,
                                    const std::vector<std::string>& words,
                                    const BuildContext& context);

// "acquire --user U --task T [--tokens N] ...": the declared synopsis, or
// one generated from the arguments.
std::string Synopsis(const CommandSpec& command);

}  // namespace brake::ctl
