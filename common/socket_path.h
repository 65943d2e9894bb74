// The default path of braked's Unix socket, shared by braked and brakectl.
//
// Both programs use the same rule so that, with no flags and no BRAKE_SOCKET,
// they meet without root: `$XDG_RUNTIME_DIR/brake/braked.sock` when
// XDG_RUNTIME_DIR is set and non-empty, else `/tmp/brake-$UID/braked.sock`.
// The directory is the daemon's to create (mode 0700). Pure functions of their
// inputs plus, for DefaultSocketPath(), the process environment; any thread.
// Depends on the standard library only, so it can move to common/.
#pragma once

#include <string>
#include <string_view>

namespace brake {

// The default socket path for a process whose XDG_RUNTIME_DIR is
// `xdg_runtime_dir` (empty when unset) and whose real uid is `uid`.
std::string DefaultSocketPathFor(std::string_view xdg_runtime_dir,
                                 unsigned long uid);

// DefaultSocketPathFor() applied to this process's environment and getuid().
std::string DefaultSocketPath();

}  // namespace brake
