// braked as a process: its command line, the process settings a daemon
// needs (memory kept for reuse, signals ignored, descriptors), and the start
// with the stop signals held until the handlers are in place.
#include "daemon/process.h"

#include <malloc.h>
#include <pthread.h>
#include <sys/resource.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>

#include "common/paths.h"
#include "common/socket_path.h"
#include "daemon/config.h"
#include "daemon/daemon.h"
#include "daemon/dispatcher.h"
#include "daemon/log.h"

namespace brake {
namespace {

constexpr const char* kUsage =
    "usage: braked [--socket PATH] [--db PATH] [--config FILE]\n"
    "              [--help] [--help-config] [--help-ops] [--version]\n"
    "  --socket PATH  Unix socket to listen on (env BRAKE_SOCKET; default\n"
    "                 $XDG_RUNTIME_DIR/brake/braked.sock, else\n"
    "                 /tmp/brake-$UID/braked.sock)\n"
    "  --db PATH      SQLite database (env BRAKE_DB; default\n"
    "                 $XDG_STATE_HOME/brake/brake.db, else\n"
    "                 ~/.local/state/brake/brake.db)\n"
    "  --config FILE  JSON config file, reloaded on SIGHUP\n";

// Memory a storage batch held, freed on the storage thread, is reused by
// the next batch instead of going back to the system: glibc returns the
// free top of its heap past a threshold that follows the largest block it
// served with mmap, so under a steady load each drain touched fresh pages
// again, a fault per 4 KiB. The limits are fixed instead:
// blocks under 1 MiB (a batch of a few thousand rows) come from the heap,
// larger ones from mmap (a burst's batch, returned whole), and up to 8 MiB
// of free heap is kept. An operator's own setting (GLIBC_TUNABLES) wins.
void KeepFreedMemory() {
  const char* tunables = std::getenv("GLIBC_TUNABLES");
  const std::string set = tunables != nullptr ? tunables : "";
  if (set.find("mmap_threshold") == std::string::npos) {
    mallopt(M_MMAP_THRESHOLD, 1 << 20);
  }
  if (set.find("trim_threshold") == std::string::npos) {
    mallopt(M_TRIM_THRESHOLD, 8 << 20);
  }
}

// The options of the command line, or the exit code when it is answered
// (--help, --version) or wrong.
struct Parsed {
  std::optional<DaemonOptions> options;
  int exit_code = 0;
};

Parsed ParseFlags(int argc, char** argv) {
  DaemonOptions options;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    const char* flag_value = nullptr;
    if (arg == "--socket" || arg == "--db" || arg == "--config") {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "braked: %s needs a value\n%s", arg.c_str(),
                     kUsage);
        return {std::nullopt, 2};
      }
      flag_value = argv[++i];
    }
    if (arg == "--socket") {
      options.socket_path = flag_value;
    } else if (arg == "--db") {
      options.db_path = flag_value;
    } else if (arg == "--config") {
      options.config_path = flag_value;
    } else if (arg == "--help" || arg == "-h") {
      std::fputs(kUsage, stdout);
      return {std::nullopt, 0};
    } else if (arg == "--help-config") {
      std::fputs(ConfigHelp().c_str(), stdout);
      return {std::nullopt, 0};
    } else if (arg == "--help-ops") {
      std::fputs(Dispatcher::OpsHelp().c_str(), stdout);
      return {std::nullopt, 0};
    } else if (arg == "--version") {
      std::printf("braked %s\n", BRAKE_VERSION);
      return {std::nullopt, 0};
    } else {
      std::fprintf(stderr, "braked: unknown argument %s\n%s", arg.c_str(),
                   kUsage);
      return {std::nullopt, 2};
    }
  }
  return {options, 0};
}

// The socket and database paths not given: from the environment, else the
// defaults; their folders are made.
Status ResolvePaths(DaemonOptions* options) {
  auto from_env = [](const char* name, std::string fallback) {
    const char* env = std::getenv(name);
    return env != nullptr && *env != '\0' ? std::string(env) : fallback;
  };
  if (options->socket_path.empty()) {
    options->socket_path = from_env("BRAKE_SOCKET", DefaultSocketPath());
  }
  if (options->db_path.empty()) {
    options->db_path = from_env("BRAKE_DB", DefaultDbPath());
  }
  for (const std::string* path : {&options->socket_path, &options->db_path}) {
    if (Status s = EnsureParentDir(*path); !s.ok()) return s;
  }
  return Status::Ok();
}

void PrepareProcess() {
  KeepFreedMemory();
  // A file-size limit must fail a write (and fail closed), not kill us.
  std::signal(SIGXFSZ, SIG_IGN);
  // Nor may a client that hangs up while its replies are being written:
  // libuv writes to sockets with write(2), which raises SIGPIPE; ignored, the
  // write fails with EPIPE and only that connection is closed.
  std::signal(SIGPIPE, SIG_IGN);
  // One descriptor per connection: take all the hard limit allows, as Go
  // programs do, rather than a shell's soft 1024 under the default
  // max_connections of 4096 (connections beyond the limit are closed at
  // once by libuv, without the too_many_connections line).
  if (rlimit files; getrlimit(RLIMIT_NOFILE, &files) == 0 &&
      files.rlim_cur < files.rlim_max) {
    files.rlim_cur = files.rlim_max;
    setrlimit(RLIMIT_NOFILE, &files);
  }
}

}  // namespace

int RunBraked(int argc, char** argv) {
  Parsed parsed = ParseFlags(argc, argv);
  if (!parsed.options) return parsed.exit_code;
  DaemonOptions& options = *parsed.options;
  if (Status s = ResolvePaths(&options); !s.ok()) {
    Log(LogLevel::kError, "%s", s.message().c_str());
    return 1;
  }
  PrepareProcess();
  // The socket accepts before Start() installs the signal handlers: a
  // supervisor that stops or reloads braked as soon as it answers must not
  // kill it outright. Held until then, such a signal is handled as usual.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  for (int signal : {SIGTERM, SIGINT, SIGHUP}) sigaddset(&stop_signals, signal);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  Daemon daemon(options);
  if (Status s = daemon.Start(); !s.ok()) {
    Log(LogLevel::kError, "cannot start: %s", s.ToString().c_str());
    return 1;
  }
  pthread_sigmask(SIG_UNBLOCK, &stop_signals, nullptr);
  return daemon.Run();
}

}  // namespace brake
