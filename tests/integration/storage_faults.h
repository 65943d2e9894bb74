// The faults tests/integration/storage_failure*_test.cc inject into a
// running braked's disk (a full tmpfs, a file size limit, EIO from fsync
// through strace), and the checks they share. See
// storage_failure_test.cc for the scenario.
#pragma once

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <iostream>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "tests/integration/expect.h"
#include "tests/integration/harness.h"

extern char** environ;

namespace brake::integration {

// The full path of `name` found in $PATH, or "".
inline std::string FindInPath(const std::string& name) {
  const char* path = std::getenv("PATH");
  std::string dirs = path != nullptr ? path : "/usr/bin:/bin";
  std::istringstream in(dirs);
  std::string dir;
  while (std::getline(in, dir, ':')) {
    if (dir.empty()) continue;
    std::string candidate = dir + "/" + name;
    if (access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return "";
}

// A tmpfs of `size_bytes` mounted on `path` while this lives.
class TmpfsMount {
 public:
  TmpfsMount(const std::string& path, int64_t size_bytes) : path_(path) {
    mkdir(path.c_str(), 0755);
    std::string options = "size=" + std::to_string(size_bytes) + ",mode=0755";
    if (mount("tmpfs", path.c_str(), "tmpfs", 0, options.c_str()) == 0) {
      mounted_ = true;
    } else {
      error_ = std::strerror(errno);
    }
  }
  ~TmpfsMount() {
    if (mounted_) umount2(path_.c_str(), MNT_DETACH);
  }
  TmpfsMount(const TmpfsMount&) = delete;
  TmpfsMount& operator=(const TmpfsMount&) = delete;

  bool mounted() const { return mounted_; }
  const std::string& error() const { return error_; }

 private:
  std::string path_;
  bool mounted_ = false;
  std::string error_;
};

// Appends zeros to `path` until the file system refuses (ENOSPC); the bytes
// written.
inline int64_t FillUp(const std::string& path) {
  int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) return 0;
  std::vector<char> chunk(64 * 1024, 0);
  int64_t total = 0;
  size_t size = chunk.size();
  while (size > 0) {
    ssize_t n = write(fd, chunk.data(), size);
    if (n > 0) {
      total += n;
    } else if (n < 0 && errno == EINTR) {
      continue;
    } else {
      size /= 2;  // fill the last partial pages too
    }
  }
  close(fd);
  return total;
}

// The strace binary, or "" after a WARN that the case calling it is
// skipped (strace is not installed).
inline std::string FindStrace() {
  const std::string strace = FindInPath("strace");
  if (strace.empty()) WARN("strace not installed: fsync-failure case skipped");
  return strace;
}

// strace attached to every thread of `pid`, injecting EIO into fsync and
// fdatasync while this lives (or until Detach).
class StraceInjector {
 public:
  StraceInjector(const std::string& strace, pid_t pid,
                 const std::string& log_path)
      : target_(pid) {
    std::vector<std::string> argv = {strace,
                                     "-f",
                                     "-qq",
                                     "-p",
                                     std::to_string(pid),
                                     "-e",
                                     "trace=fsync,fdatasync",
                                     "-e",
                                     "inject=fsync,fdatasync:error=EIO",
                                     "-o",
                                     log_path};
    std::vector<char*> args;
    for (std::string& a : argv) args.push_back(a.data());
    args.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_addopen(&actions, 2, (log_path + ".err").c_str(),
                                     O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (posix_spawn(&pid_, argv[0].c_str(), &actions, nullptr, args.data(),
                    environ) != 0) {
      pid_ = -1;
    }
    posix_spawn_file_actions_destroy(&actions);
  }
  ~StraceInjector() { Detach(); }
  StraceInjector(const StraceInjector&) = delete;
  StraceInjector& operator=(const StraceInjector&) = delete;

  // Waits up to `timeout_ms` until every thread of the target is traced.
  bool WaitAttached(int64_t timeout_ms) {
    const int64_t deadline = MonoMs() + timeout_ms;
    while (MonoMs() < deadline) {
      if (pid_ < 0 || waitpid(pid_, nullptr, WNOHANG) == pid_) {
        pid_ = -1;
        return false;  // strace gave up (no ptrace here?)
      }
      if (AllThreadsTraced()) return true;
      SleepMs(10);
    }
    return false;
  }

  // Stops strace (it detaches on SIGINT) and reaps it.
  void Detach() {
    if (pid_ < 0) return;
    kill(pid_, SIGINT);
    int status = 0;
    const int64_t deadline = MonoMs() + 5000;
    while (waitpid(pid_, &status, WNOHANG) == 0) {
      if (MonoMs() >= deadline) {
        kill(pid_, SIGKILL);
        waitpid(pid_, &status, 0);
        break;
      }
      SleepMs(5);
    }
    pid_ = -1;
  }

 private:
  bool AllThreadsTraced() const {
    std::string dir = "/proc/" + std::to_string(target_) + "/task";
    DIR* d = opendir(dir.c_str());
    if (d == nullptr) return false;
    int threads = 0;
    bool all = true;
    while (dirent* e = readdir(d)) {
      if (e->d_name[0] == '.') continue;
      ++threads;
      std::string status = ReadFile(dir + "/" + e->d_name + "/status");
      size_t at = status.find("TracerPid:");
      if (at == std::string::npos || std::atol(status.c_str() + at + 10) == 0) {
        all = false;
      }
    }
    closedir(d);
    return all && threads > 1;  // the loop and the storage thread at least
  }

  pid_t target_;
  pid_t pid_ = -1;
};

// How a case breaks the disk and mends it.
struct Fault {
  std::function<bool()> begin;  // false: could not inject
  std::function<void()> end;
};

inline bool IsUnavailable(const json& reply) {
  return reply.value("ok", true) == false &&
         ErrorCodeOf(reply) == "unavailable";
}

inline void CheckIntegrity(const std::string& db_path) {
  const std::string sqlite3 = FindInPath("sqlite3");
  if (sqlite3.empty()) {
    WARN(
        "sqlite3 command-line shell not installed: PRAGMA integrity_check "
        "skipped");
    return;
  }
  ProgramResult r =
      RunProgram({sqlite3, db_path, "PRAGMA integrity_check;"}, 10000);
  INFO("sqlite3 stderr: " << r.err);
  CHECK(r.exit_code == 0);
  CHECK(r.out == "ok\n");
}

// How many times the daemon logged that storage recovered.
inline int RecoveriesLogged(const Daemon& d) {
  const std::string log = d.log();
  int n = 0;
  for (size_t at = log.find("storage recovered"); at != std::string::npos;
       at = log.find("storage recovered", at + 1)) {
    ++n;
  }
  return n;
}

// Injects EIO into braked's fsyncs with strace for as long as it is
// attached; begin() WARNs and returns false when strace cannot attach.
struct StraceFault {
  StraceFault(const std::string& strace, Daemon& d, const std::string& log)
      : strace_path(strace), daemon(d), log_path(log) {
    fault.begin = [this] {
      injector =
          std::make_unique<StraceInjector>(strace_path, daemon.pid(), log_path);
      if (!injector->WaitAttached(5000)) {
        WARN("strace could not attach to braked (ptrace not permitted?): "
             << ReadFile(log_path + ".err") << " -- case skipped");
        injector.reset();
        return false;
      }
      return true;
    };
    fault.end = [this] {
      injector->Detach();
      INFO("strace log:\n" << ReadFile(log_path).substr(0, 2000));
      CHECK(ReadFile(log_path).find("INJECTED") != std::string::npos);
    };
  }
  std::string strace_path;
  Daemon& daemon;
  std::string log_path;
  std::unique_ptr<StraceInjector> injector;
  Fault fault;
};

}  // namespace brake::integration
