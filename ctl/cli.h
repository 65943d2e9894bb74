// The whole of brakectl behind one call, so main.cc stays a few lines and
// tests can run the CLI against a fake daemon.
//
// Run() parses the global options and the command's words, builds the
// request from the command table (commands.h), sends it through the
// Transport that CtlEnv::connect opens, and prints the reply: as tables, or
// with --json the reply line byte for byte; a command with its own loop
// (`top`) gets a RunContext instead. Diagnostics go to `err`. It
// returns the process exit code. Everything outside the process (sockets,
// environment, files) comes in through CtlEnv. One call per thread.
#pragma once

#include <functional>
#include <istream>
#include <memory>
#include <optional>
#include <ostream>
#include <string>

#include "common/status.h"
#include "ctl/client.h"
#include "ctl/terminal.h"

namespace brake::ctl {

constexpr int kExitOk = 0;
constexpr int kExitError = 1;   // unreachable, "ok": false, I/O
constexpr int kExitUsage = 2;   // bad or missing arguments, unknown command
constexpr int kExitDenied = 3;  // acquire answered "granted": false

constexpr int64_t kDefaultTimeoutMs = 10000;

struct CtlEnv {
  Connector connect;
  // The value of environment variable `name`, or nullopt when unset.
  std::function<std::optional<std::string>(const std::string& name)> get_env;
  // The contents of the file at `path`; failures are errors (exit code 1).
  std::function<Result<std::string>(const std::string& path)> read_file;
  // The real uid, for the default socket path.
  unsigned long uid = 0;
  // The terminal for `top` (keys, clocks, size); unset: a PosixTerminal on
  // standard input and output.
  std::function<std::unique_ptr<Terminal>()> open_terminal;
};

// The real thing: Unix-socket transport, getenv, files, getuid(), the
// standard input and output as the terminal.
CtlEnv SystemEnv();

// The socket brakectl talks to: `flag` when given, else $BRAKE_SOCKET when
// set and non-empty, else DefaultSocketPathFor($XDG_RUNTIME_DIR, uid).
std::string ResolveSocketPath(const std::optional<std::string>& flag,
                              const CtlEnv& env);

// Runs brakectl with `argv` (argv[0] is the program name; `in` serves
// `--file -`) and returns its exit code.
int Run(int argc, const char* const argv[], std::istream& in, std::ostream& out,
        std::ostream& err, const CtlEnv& env);

}  // namespace brake::ctl
