// Figures of a running process, read from /proc, and descriptor limits, for
// tests that bound what a hostile client can make braked spend.
//
// Test thread only. Linux only (/proc/PID/status, /proc/PID/stat, prlimit).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string_view>

namespace brake::integration {

// A "VmRSS"-style field of /proc/PID/status in KiB (VmRSS: resident now,
// VmHWM: the peak resident so far); -1 when the process or field is gone.
int64_t ProcStatusKb(pid_t pid, std::string_view field);
// CPU time (user + system) the process has used, in ms; -1 when gone.
int64_t ProcCpuMs(pid_t pid);
// Descriptors the process has open; -1 when gone.
int ProcOpenFds(pid_t pid);

// Raises this process's soft RLIMIT_NOFILE to at least `wanted` (up to the
// hard limit). True when the soft limit is now >= `wanted`.
bool RaiseOwnFileLimit(uint64_t wanted);
// Sets the soft RLIMIT_NOFILE of process `pid` (prlimit). True on success.
bool SetFileLimitOf(pid_t pid, uint64_t soft);
// The soft and hard RLIMIT_NOFILE of process `pid` (pid 0: this one);
// {0, 0} when it cannot be read.
struct FileLimit {
  uint64_t soft = 0;
  uint64_t hard = 0;
};
FileLimit FileLimitOf(pid_t pid);

}  // namespace brake::integration
