#include "tests/integration/crowd.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <stdexcept>

#include "tests/integration/harness.h"

namespace brake::integration {

Crowd::Crowd(const std::string& socket_path, size_t n) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, socket_path.c_str(), sizeof(addr.sun_path) - 1);
  members_.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd >= 0 &&
        connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
      close(fd);
      fd = -1;
    }
    if (fd < 0) {
      throw std::runtime_error("crowd: connection " + std::to_string(i) +
                               " of " + std::to_string(n) + ": " +
                               std::strerror(errno));
    }
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
    members_.push_back(Member{fd, "", -1});
  }
}

Crowd::~Crowd() {
  for (Member& m : members_) close(m.fd);
}

size_t Crowd::closed_count() const {
  size_t n = 0;
  for (const Member& m : members_) n += m.closed_at_ms >= 0 ? 1 : 0;
  return n;
}

void Crowd::MarkClosed(Member& m) {
  if (m.closed_at_ms < 0) m.closed_at_ms = MonoMs();
}

void Crowd::SendToOpen(std::string_view bytes) {
  for (Member& m : members_) {
    if (m.closed_at_ms >= 0) continue;
    if (send(m.fd, bytes.data(), bytes.size(), MSG_NOSIGNAL) < 0 &&
        errno != EAGAIN && errno != EINTR) {
      ReadSome(m);  // what the daemon said before closing
      MarkClosed(m);
    }
  }
}

void Crowd::ReadSome(Member& m) {
  char chunk[16384];
  while (true) {
    ssize_t n = recv(m.fd, chunk, sizeof(chunk), 0);
    if (n > 0) {
      m.in.append(chunk, static_cast<size_t>(n));
      continue;
    }
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) return;
    MarkClosed(m);  // end of stream, or ECONNRESET
    return;
  }
}

void Crowd::Pump(int64_t timeout_ms) {
  std::vector<pollfd> fds;
  std::vector<Member*> open;
  for (Member& m : members_) {
    if (m.closed_at_ms >= 0) continue;
    fds.push_back(pollfd{m.fd, POLLIN, 0});
    open.push_back(&m);
  }
  if (fds.empty()) return;
  if (poll(fds.data(), fds.size(), static_cast<int>(timeout_ms)) <= 0) return;
  for (size_t i = 0; i < fds.size(); ++i) {
    if (fds[i].revents != 0) ReadSome(*open[i]);
  }
}

bool Crowd::WaitAllClosed(int64_t timeout_ms) {
  const int64_t deadline = MonoMs() + timeout_ms;
  while (closed_count() < members_.size()) {
    const int64_t left = deadline - MonoMs();
    if (left <= 0) return false;
    Pump(left);
  }
  return true;
}

uint64_t Crowd::Flood(std::string_view chunk, int64_t timeout_ms) {
  const int64_t deadline = MonoMs() + timeout_ms;
  uint64_t sent = 0;
  // Where each member is in `chunk`, so every request goes out whole.
  std::vector<size_t> offset(members_.size(), 0);
  while (closed_count() < members_.size()) {
    const int64_t left = deadline - MonoMs();
    if (left <= 0) break;
    std::vector<pollfd> fds;
    std::vector<size_t> index;
    for (size_t i = 0; i < members_.size(); ++i) {
      if (members_[i].closed_at_ms >= 0) continue;
      fds.push_back(pollfd{members_[i].fd, POLLOUT, 0});
      index.push_back(i);
    }
    // A member the daemon stopped reading never becomes writable again;
    // poll in short steps so its close (POLLHUP/POLLERR) is seen.
    if (poll(fds.data(), fds.size(), static_cast<int>(std::min<int64_t>(
                                         left, 100))) <= 0) {
      continue;
    }
    for (size_t k = 0; k < fds.size(); ++k) {
      Member& m = members_[index[k]];
      if (fds[k].revents & (POLLHUP | POLLERR)) {
        ReadSome(m);  // what the daemon said before closing
        MarkClosed(m);
        continue;
      }
      if (!(fds[k].revents & POLLOUT)) continue;
      size_t& at = offset[index[k]];
      ssize_t n = send(m.fd, chunk.data() + at, chunk.size() - at,
                       MSG_NOSIGNAL);
      if (n < 0) {
        if (errno != EAGAIN && errno != EINTR) {
          ReadSome(m);
          MarkClosed(m);
        }
        continue;
      }
      sent += static_cast<uint64_t>(n);
      at = (at + static_cast<size_t>(n)) % chunk.size();
    }
  }
  return sent;
}

}  // namespace brake::integration
