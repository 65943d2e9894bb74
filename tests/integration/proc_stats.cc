#include "tests/integration/proc_stats.h"

#include <dirent.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <sstream>
#include <string>

#include "tests/integration/harness.h"

namespace brake::integration {

int64_t ProcStatusKb(pid_t pid, std::string_view field) {
  std::istringstream in(ReadFile("/proc/" + std::to_string(pid) + "/status"));
  std::string line;
  while (std::getline(in, line)) {
    if (line.size() > field.size() && line.compare(0, field.size(), field) == 0 &&
        line[field.size()] == ':') {
      return std::strtoll(line.c_str() + field.size() + 1, nullptr, 10);
    }
  }
  return -1;
}

int64_t ProcCpuMs(pid_t pid) {
  const std::string stat = ReadFile("/proc/" + std::to_string(pid) + "/stat");
  // The command name may hold blanks and parentheses: fields follow the last
  // ')'. utime and stime are fields 14 and 15, the 12th and 13th after it.
  const size_t paren = stat.rfind(')');
  if (paren == std::string::npos) return -1;
  std::istringstream in(stat.substr(paren + 1));
  std::string field;
  int64_t ticks = 0;
  for (int i = 1; i <= 13 && in >> field; ++i) {
    if (i >= 12) ticks += std::strtoll(field.c_str(), nullptr, 10);
  }
  return ticks * 1000 / sysconf(_SC_CLK_TCK);
}

int ProcOpenFds(pid_t pid) {
  const std::string path = "/proc/" + std::to_string(pid) + "/fd";
  DIR* dir = opendir(path.c_str());
  if (dir == nullptr) return -1;
  int count = 0;
  while (dirent* entry = readdir(dir)) {
    if (entry->d_name[0] != '.') ++count;
  }
  closedir(dir);
  return count;
}

bool RaiseOwnFileLimit(uint64_t wanted) {
  rlimit limit;
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0) return false;
  if (limit.rlim_cur >= wanted) return true;
  limit.rlim_cur = std::min<rlim_t>(wanted, limit.rlim_max);
  return setrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur >= wanted;
}

FileLimit FileLimitOf(pid_t pid) {
  rlimit limit;
  if (prlimit(pid, RLIMIT_NOFILE, nullptr, &limit) != 0) return {};
  return {limit.rlim_cur, limit.rlim_max};
}

bool SetFileLimitOf(pid_t pid, uint64_t soft) {
  rlimit limit;
  if (prlimit(pid, RLIMIT_NOFILE, nullptr, &limit) != 0) return false;
  limit.rlim_cur = std::min<rlim_t>(soft, limit.rlim_max);
  return prlimit(pid, RLIMIT_NOFILE, &limit, nullptr) == 0;
}

}  // namespace brake::integration
