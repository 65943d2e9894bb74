// Small POSIX helpers for Unix-domain stream sockets, shared by the load
// generator and the echo server: the default socket path, connecting and
// listening. Any thread may call them; they own no state.
#pragma once

#include <string>

#include "bench/byte_buffer.h"
#include "common/status.h"

namespace brake::bench {

// brake-bench's default socket: BRAKE_SOCKET if set and non-empty, else
// brake::DefaultSocketPath() (common/socket_path.h), the path braked and
// brakectl use by default.
std::string BenchSocketPath();

// A blocking connect to `path`; on success the returned fd is non-blocking
// and close-on-exec. Errors say what failed and why ("connect /x: No such
// file or directory").
Result<int> ConnectUnix(const std::string& path);

// Binds and listens on `path` with a non-blocking, close-on-exec socket. A
// stale socket file nobody answers on is replaced; a live one is an error.
Result<int> ListenUnix(const std::string& path);

// Sets O_NONBLOCK. False on failure (errno set).
bool SetNonBlocking(int fd);

// Sends what `out` holds from the front, consuming what was sent, until it
// is empty (kSent) or the socket would block (kWouldBlock); kFailed with
// errno set otherwise (EPIPE when send() returned 0).
enum class SendResult { kSent, kWouldBlock, kFailed };
SendResult SendQueued(int fd, ByteBuffer* out);

}  // namespace brake::bench
