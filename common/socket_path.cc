#include "common/socket_path.h"

#include <unistd.h>

#include <cstdlib>

namespace brake {

std::string DefaultSocketPathFor(std::string_view xdg_runtime_dir,
                                 unsigned long uid) {
  if (!xdg_runtime_dir.empty()) {
    std::string path(xdg_runtime_dir);
    // "/run/user/1000/" and "/run/user/1000" name the same directory.
    while (path.size() > 1 && path.back() == '/') path.pop_back();
    if (path != "/") path += '/';
    return path + "brake/braked.sock";
  }
  return "/tmp/brake-" + std::to_string(uid) + "/braked.sock";
}

std::string DefaultSocketPath() {
  const char* xdg = std::getenv("XDG_RUNTIME_DIR");
  return DefaultSocketPathFor(xdg == nullptr ? "" : xdg,
                              static_cast<unsigned long>(::getuid()));
}

}  // namespace brake
