#include "bench/unix_socket.h"

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "common/socket_path.h"

namespace brake::bench {
namespace {

Status Errno(const std::string& what, const std::string& path, int err) {
  return Status::Internal(what + " " + path + ": " + std::strerror(err));
}

bool FillAddress(const std::string& path, sockaddr_un* addr) {
  std::memset(addr, 0, sizeof(*addr));
  addr->sun_family = AF_UNIX;
  if (path.empty() || path.size() >= sizeof(addr->sun_path)) return false;
  std::memcpy(addr->sun_path, path.data(), path.size());
  return true;
}

Status PathTooLong(const std::string& path) {
  return Status::BadRequest("socket path must be 1 to " +
                            std::to_string(sizeof(sockaddr_un::sun_path) - 1) +
                            " bytes: " + path);
}

}  // namespace

std::string BenchSocketPath() {
  const char* env = std::getenv("BRAKE_SOCKET");
  if (env != nullptr && *env != '\0') return env;
  return brake::DefaultSocketPath();
}

bool SetNonBlocking(int fd) {
  const int flags = fcntl(fd, F_GETFL);
  return flags >= 0 && fcntl(fd, F_SETFL, flags | O_NONBLOCK) == 0;
}

Result<int> ConnectUnix(const std::string& path) {
  sockaddr_un addr;
  if (!FillAddress(path, &addr)) return PathTooLong(path);
  const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return Errno("socket for", path, errno);
  int rc;
  do {
    rc = connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof(addr));
  } while (rc != 0 && errno == EINTR);
  if (rc != 0) {
    const int err = errno;
    close(fd);
    return Errno("connect", path, err);
  }
  if (!SetNonBlocking(fd)) {
    const int err = errno;
    close(fd);
    return Errno("fcntl", path, err);
  }
  return fd;
}

Result<int> ListenUnix(const std::string& path) {
  sockaddr_un addr;
  if (!FillAddress(path, &addr)) return PathTooLong(path);
  struct stat st;
  if (lstat(path.c_str(), &st) == 0) {
    if (!S_ISSOCK(st.st_mode)) {
      return Status::BadRequest("exists and is not a socket: " + path);
    }
    Result<int> probe = ConnectUnix(path);
    if (probe.ok()) {
      close(*probe);
      return Status::BadRequest("a server already listens on " + path);
    }
    unlink(path.c_str());  // Stale: nobody answers on it.
  }
  const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return Errno("socket for", path, errno);
  if (bind(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)) != 0) {
    const int err = errno;
    close(fd);
    return Errno("bind", path, err);
  }
  if (listen(fd, SOMAXCONN) != 0) {
    const int err = errno;
    close(fd);
    unlink(path.c_str());
    return Errno("listen", path, err);
  }
  return fd;
}

SendResult SendQueued(int fd, ByteBuffer* out) {
  while (!out->empty()) {
    const ssize_t n = send(fd, out->data(), out->size(), MSG_NOSIGNAL);
    if (n > 0) {
      out->Consume(static_cast<size_t>(n));
    } else if (n < 0 && errno == EINTR) {
      continue;
    } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      return SendResult::kWouldBlock;
    } else {
      if (n == 0) errno = EPIPE;
      return SendResult::kFailed;
    }
  }
  return SendResult::kSent;
}

}  // namespace brake::bench
