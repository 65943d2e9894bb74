// Small POSIX helpers for Unix-domain stream sockets, shared by the load
// generator and the echo server: the default socket path, connecting and
// listening. Any thread may call them; they own no state.
#pragma once

#include <string>

#include "common/status.h"

namespace brake::bench {

// The same rule as brake::DefaultSocketPath (common/socket_path.h, not yet
// in brake_common when this was written), plus BRAKE_SOCKET first:
// BRAKE_SOCKET if set and non-empty, else $XDG_RUNTIME_DIR/brake/braked.sock
// if XDG_RUNTIME_DIR is set and non-empty, else /tmp/brake-$UID/braked.sock.
std::string DefaultSocketPath();

// A blocking connect to `path`; on success the returned fd is non-blocking
// and close-on-exec. Errors say what failed and why ("connect /x: No such
// file or directory").
Result<int> ConnectUnix(const std::string& path);

// Binds and listens on `path` with a non-blocking, close-on-exec socket. A
// stale socket file nobody answers on is replaced; a live one is an error.
Result<int> ListenUnix(const std::string& path);

// Sets O_NONBLOCK. False on failure (errno set).
bool SetNonBlocking(int fd);

}  // namespace brake::bench
