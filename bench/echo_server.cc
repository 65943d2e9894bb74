#include "bench/echo_server.h"

#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <mutex>
#include <string_view>
#include <thread>
#include <unordered_map>

#include "bench/byte_buffer.h"
#include "bench/unix_socket.h"

namespace brake::bench {
namespace {

constexpr size_t kReadChunk = 64 * 1024;

// Tags for the epoll entries that are not connections.
char kListenTag;
char kWakeTag;

}  // namespace

struct EchoServer::Conn {
  int fd = -1;
  bool paused = false;  // Reading stops while replies wait to be written.
  ByteBuffer in;
  ByteBuffer out;
};

struct EchoServer::Worker {
  int epoll_fd = -1;
  int wake_fd = -1;
  std::mutex mu;
  std::vector<int> handed;  // Accepted fds not yet registered; guarded by mu.
  std::unordered_map<Conn*, std::unique_ptr<Conn>> conns;  // Thread-owned.
  std::thread thread;
};

EchoServer::EchoServer() = default;
EchoServer::~EchoServer() { Stop(); }

Status EchoServer::Start(const std::string& path, int threads) {
  if (threads < 1) return Status::BadRequest("echo threads must be >= 1");
  Stop();
  stopping_ = false;
  Result<int> listen_fd = ListenUnix(path);
  if (!listen_fd.ok()) return listen_fd.status();
  listen_fd_ = *listen_fd;
  path_ = path;

  for (int i = 0; i < threads; ++i) {
    auto w = std::make_unique<Worker>();
    w->epoll_fd = epoll_create1(EPOLL_CLOEXEC);
    w->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (w->epoll_fd < 0 || w->wake_fd < 0) {
      const int err = errno;
      if (w->epoll_fd >= 0) close(w->epoll_fd);
      if (w->wake_fd >= 0) close(w->wake_fd);
      Stop();
      return Status::Internal(std::string("echo server epoll/eventfd: ") +
                              std::strerror(err));
    }
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.ptr = &kWakeTag;
    epoll_ctl(w->epoll_fd, EPOLL_CTL_ADD, w->wake_fd, &ev);
    if (i == 0) {
      ev.data.ptr = &kListenTag;
      epoll_ctl(w->epoll_fd, EPOLL_CTL_ADD, listen_fd_, &ev);
    }
    workers_.push_back(std::move(w));
  }
  for (auto& w : workers_) {
    Worker* raw = w.get();
    w->thread = std::thread([this, raw] { Run(raw); });
  }
  return Status::Ok();
}

void EchoServer::Stop() {
  stopping_ = true;
  for (auto& w : workers_) {
    const uint64_t one = 1;
    if (w->wake_fd >= 0) (void)!write(w->wake_fd, &one, sizeof(one));
  }
  for (auto& w : workers_) {
    if (w->thread.joinable()) w->thread.join();
    for (auto& [raw, conn] : w->conns) close(conn->fd);
    w->conns.clear();
    for (int fd : w->handed) close(fd);
    w->handed.clear();
    if (w->epoll_fd >= 0) close(w->epoll_fd);
    if (w->wake_fd >= 0) close(w->wake_fd);
  }
  workers_.clear();
  if (listen_fd_ >= 0) {
    close(listen_fd_);
    listen_fd_ = -1;
    unlink(path_.c_str());
  }
}

void EchoServer::HandOff(int fd) {
  Worker* w = workers_[next_worker_++ % workers_.size()].get();
  {
    std::lock_guard<std::mutex> lock(w->mu);
    w->handed.push_back(fd);
  }
  const uint64_t one = 1;
  (void)!write(w->wake_fd, &one, sizeof(one));
}

void EchoServer::AcceptAll() {
  while (true) {
    const int fd =
        accept4(listen_fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      // EAGAIN: nothing left. EMFILE and friends: the client sees a refused
      // or hung connection; the bench reports it, the server keeps going.
      if (errno == EINTR || errno == ECONNABORTED) continue;
      return;
    }
    HandOff(fd);
  }
}

void EchoServer::Run(Worker* w) {
  auto close_conn = [w](Conn* c) {
    epoll_ctl(w->epoll_fd, EPOLL_CTL_DEL, c->fd, nullptr);
    close(c->fd);
    w->conns.erase(c);
  };
  auto set_events = [w](Conn* c, uint32_t events) {
    epoll_event ev{};
    ev.events = events;
    ev.data.ptr = c;
    epoll_ctl(w->epoll_fd, EPOLL_CTL_MOD, c->fd, &ev);
  };
  // Sends what is queued; false when the connection failed.
  auto flush = [&](Conn* c) {
    switch (SendQueued(c->fd, &c->out)) {
      case SendResult::kSent:
        break;
      case SendResult::kWouldBlock:
        if (!c->paused) {
          c->paused = true;
          set_events(c, EPOLLOUT);
        }
        return true;
      case SendResult::kFailed:
        return false;
    }
    if (c->paused) {
      c->paused = false;
      set_events(c, EPOLLIN);
    }
    return true;
  };
  // Reads what is there and echoes every complete line; false when the
  // connection is over (closed by the peer, failed, or a line too long).
  auto on_readable = [&](Conn* c) {
    while (!c->paused) {
      char* dst = c->in.Prepare(kReadChunk);
      const ssize_t n = recv(c->fd, dst, kReadChunk, 0);
      if (n == 0) return false;
      if (n < 0) {
        if (errno == EINTR) continue;
        return errno == EAGAIN || errno == EWOULDBLOCK;
      }
      c->in.Commit(static_cast<size_t>(n));
      const std::string_view data = c->in.view();
      const size_t last = data.rfind('\n');
      if (last != std::string_view::npos) {
        c->out.Append(data.substr(0, last + 1));
        c->in.Consume(last + 1);
        if (!flush(c)) return false;
      }
      if (c->in.size() > kMaxLineBytes) return false;
      if (static_cast<size_t>(n) < kReadChunk) break;
    }
    return true;
  };

  epoll_event events[128];
  while (!stopping_.load(std::memory_order_relaxed)) {
    const int n = epoll_wait(w->epoll_fd, events, 128, -1);
    if (n < 0) {
      if (errno == EINTR) continue;
      break;
    }
    for (int i = 0; i < n; ++i) {
      void* tag = events[i].data.ptr;
      if (tag == &kListenTag) {
        AcceptAll();
        continue;
      }
      if (tag == &kWakeTag) {
        uint64_t count;
        (void)!read(w->wake_fd, &count, sizeof(count));
        std::vector<int> fds;
        {
          std::lock_guard<std::mutex> lock(w->mu);
          fds.swap(w->handed);
        }
        for (int fd : fds) {
          auto conn = std::make_unique<Conn>();
          conn->fd = fd;
          epoll_event ev{};
          ev.events = EPOLLIN;
          ev.data.ptr = conn.get();
          if (epoll_ctl(w->epoll_fd, EPOLL_CTL_ADD, fd, &ev) != 0) {
            close(fd);
            continue;
          }
          Conn* raw = conn.get();
          w->conns.emplace(raw, std::move(conn));
        }
        continue;
      }
      Conn* c = static_cast<Conn*>(tag);
      // A connection closed earlier in this batch cannot appear again: epoll
      // reports each fd once per wait.
      bool alive = true;
      if (events[i].events & EPOLLOUT) alive = flush(c);
      if (alive && (events[i].events & (EPOLLIN | EPOLLHUP | EPOLLERR))) {
        alive = on_readable(c);
      }
      if (alive && c->paused == false &&
          (events[i].events & (EPOLLHUP | EPOLLERR)) && c->out.empty()) {
        // Peer gone and nothing more to read.
        alive = false;
      }
      if (!alive) close_conn(c);
    }
  }
}

}  // namespace brake::bench
