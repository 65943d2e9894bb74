#include "ctl/client.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <utility>

namespace brake::ctl {

using nlohmann::json;

namespace {

// Metrics text can be large, but a reply beyond this is a broken peer.
constexpr size_t kMaxReplyBytes = 64u << 20;

Status Unavailable(std::string message) {
  return Status(ErrorCode::kUnavailable, std::move(message));
}

std::string ErrnoText(int err) { return std::strerror(err); }

using Clock = std::chrono::steady_clock;

int64_t MsLeft(Clock::time_point deadline) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
      deadline - Clock::now());
  return std::max<int64_t>(0, left.count());
}

Clock::time_point DeadlineIn(int64_t timeout_ms) {
  // Saturate: a huge --timeout-ms must not wrap into the past.
  constexpr int64_t kMaxMs = int64_t{1} << 40;
  return Clock::now() + std::chrono::milliseconds(std::min(timeout_ms, kMaxMs));
}

}  // namespace

bool IsReplyTo(std::string_view line, const json& id) {
  json reply = json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (!reply.is_object()) return false;
  auto it = reply.find("id");
  if (it != reply.end() && !it->is_null()) return *it == id;
  auto ok = reply.find("ok");
  return ok != reply.end() && ok->is_boolean() && !ok->get<bool>();
}

UnixSocketTransport::~UnixSocketTransport() {
  if (fd_ >= 0) ::close(fd_);
}

Result<std::unique_ptr<Transport>> UnixSocketTransport::Connect(
    const std::string& socket_path, int64_t timeout_ms) {
  const std::string prefix = "cannot connect to " + socket_path + ": ";
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (socket_path.empty() || socket_path.size() >= sizeof addr.sun_path) {
    return Unavailable(prefix + "socket path must be 1 to " +
                       std::to_string(sizeof addr.sun_path - 1) + " bytes");
  }
  std::memcpy(addr.sun_path, socket_path.data(), socket_path.size());

  int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return Unavailable(prefix + ErrnoText(errno));
  std::unique_ptr<Transport> transport(
      new UnixSocketTransport(fd, socket_path));

  // A Unix-socket connect blocks only while the listen backlog is full; the
  // send timeout bounds that wait.
  timeval tv{};
  tv.tv_sec =
      static_cast<time_t>(std::min<int64_t>(timeout_ms / 1000, 1 << 30));
  tv.tv_usec = static_cast<suseconds_t>((timeout_ms % 1000) * 1000);
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  int rc;
  do {
    rc = ::connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr);
  } while (rc != 0 && errno == EINTR);
  if (rc != 0) {
    int err = errno;
    if (err == EAGAIN || err == EINPROGRESS) {
      return Unavailable(prefix + "timed out after " +
                         std::to_string(timeout_ms) + " ms");
    }
    std::string message = prefix + ErrnoText(err);
    if (err == ENOENT || err == ECONNREFUSED)
      message += " (is braked running?)";
    return Unavailable(message);
  }
  int flags = ::fcntl(fd, F_GETFL, 0);
  if (flags < 0 || ::fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0) {
    return Unavailable(prefix + ErrnoText(errno));
  }
  return transport;
}

Result<std::string> UnixSocketTransport::Exchange(std::string_view request_line,
                                                  const json& id,
                                                  int64_t timeout_ms) {
  const Clock::time_point deadline = DeadlineIn(timeout_ms);
  auto timed_out = [&] {
    return Unavailable("timed out after " + std::to_string(timeout_ms) +
                       " ms waiting for braked at " + path_);
  };
  auto wait_for = [&](short events) -> Status {
    while (true) {
      pollfd p{fd_, events, 0};
      int64_t left = MsLeft(deadline);
      int rc =
          ::poll(&p, 1, static_cast<int>(std::min<int64_t>(left, 1 << 30)));
      if (rc > 0) return Status::Ok();
      if (rc == 0) return timed_out();
      if (errno != EINTR) return Unavailable("poll: " + ErrnoText(errno));
    }
  };

  std::string out(request_line);
  out += '\n';
  size_t sent = 0;
  while (sent < out.size()) {
    ssize_t n = ::send(fd_, out.data() + sent, out.size() - sent, MSG_NOSIGNAL);
    if (n > 0) {
      sent += static_cast<size_t>(n);
    } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      if (Status s = wait_for(POLLOUT); !s.ok()) return s;
    } else if (n < 0 && errno != EINTR) {
      return Unavailable("sending to " + path_ + ": " + ErrnoText(errno));
    }
  }

  size_t scanned = 0;  // bytes of buffer_ known to hold no newline
  while (true) {
    size_t newline = buffer_.find('\n', scanned);
    if (newline != std::string::npos) {
      std::string line = buffer_.substr(0, newline);
      buffer_.erase(0, newline + 1);
      scanned = 0;
      if (IsReplyTo(line, id)) return line;
      continue;
    }
    scanned = buffer_.size();
    if (buffer_.size() > kMaxReplyBytes) {
      return Unavailable("reply from braked at " + path_ + " is too long");
    }
    char chunk[65536];
    ssize_t n = ::recv(fd_, chunk, sizeof chunk, 0);
    if (n > 0) {
      buffer_.append(chunk, static_cast<size_t>(n));
    } else if (n == 0) {
      return Unavailable("braked at " + path_ +
                         " closed the connection without replying");
    } else if (errno == EAGAIN || errno == EWOULDBLOCK) {
      if (Status s = wait_for(POLLIN); !s.ok()) return s;
    } else if (errno != EINTR) {
      return Unavailable("reading from " + path_ + ": " + ErrnoText(errno));
    }
  }
}

}  // namespace brake::ctl
