#include "common/paths.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace brake {

std::string DefaultDbPath() {
  const char* state = std::getenv("XDG_STATE_HOME");
  if (state != nullptr && *state != '\0') {
    return std::string(state) + "/brake/brake.db";
  }
  const char* home = std::getenv("HOME");
  if (home != nullptr && *home != '\0') {
    return std::string(home) + "/.local/state/brake/brake.db";
  }
  return "/tmp/brake-" + std::to_string(getuid()) + "/brake.db";
}

Status EnsureParentDir(const std::string& file_path) {
  size_t slash = file_path.rfind('/');
  if (slash == std::string::npos || slash == 0) return Status::Ok();
  std::string dir = file_path.substr(0, slash);
  for (size_t pos = 1; pos <= dir.size(); ++pos) {
    if (pos != dir.size() && dir[pos] != '/') continue;
    std::string part = dir.substr(0, pos);
    if (mkdir(part.c_str(), 0700) != 0 && errno != EEXIST) {
      return Status::Unavailable("cannot create directory " + part + ": " +
                                 std::strerror(errno));
    }
  }
  return Status::Ok();
}

}  // namespace brake
