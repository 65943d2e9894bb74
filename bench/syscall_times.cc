// libbrake-syscall-times.so: an LD_PRELOAD library that times a server's
// socket syscalls, for bench/syscall_split.sh.
//
// At 1x1 a request's round trip is mostly the kernel's: the client's send,
// the server's wake-up, read and write, the client's wake-up. To see which
// part of braked's p50 lies above the echo floor's, this wraps read, recv,
// write, writev and send (and notes when epoll_wait returned with events)
// and, at exit, prints to stderr the p10 / p50 / p90 in nanoseconds of:
//   epoll->io  from epoll_wait's return to the next read or recv's start:
//              the event loop's own dispatch (libuv's, for braked)
//   read/recv  each such call that returned data
//   write/writev/send  each such call that wrote a short line (< 4 KiB)
// Large transfers (a database's) are not counted. Not for production:
// timing every call costs two clock reads. Not loaded into sanitizer
// builds (ASan must come first in the library list).
#include <dlfcn.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <mutex>
#include <vector>

namespace {

int64_t Now() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

class Times {
 public:
  explicit Times(const char* name) : name_(name) {}
  ~Times() {
    if (v_.size() < 100) return;  // not this process's kind of call
    std::sort(v_.begin(), v_.end());
    std::fprintf(stderr, "syscall-times %-10s n=%zu p10=%lld p50=%lld p90=%lld\n",
                 name_, v_.size(), static_cast<long long>(v_[v_.size() / 10]),
                 static_cast<long long>(v_[v_.size() / 2]),
                 static_cast<long long>(v_[v_.size() * 9 / 10]));
  }
  void Add(int64_t ns) {
    std::lock_guard<std::mutex> lock(mu_);
    if (v_.size() < kMax) v_.push_back(ns);
  }

 private:
  static constexpr size_t kMax = 20'000'000;
  const char* name_;
  std::mutex mu_;
  std::vector<int64_t> v_;
};

Times g_dispatch("epoll->io"), g_read("read"), g_recv("recv"),
    g_write("write"), g_writev("writev"), g_send("send");
thread_local int64_t t_events_at = 0;  // when epoll_wait last returned events

void Dispatched(int64_t now) {
  if (t_events_at == 0) return;
  g_dispatch.Add(now - t_events_at);
  t_events_at = 0;
}

template <class Fn>
Fn Real(Fn, const char* name) {
  return reinterpret_cast<Fn>(dlsym(RTLD_NEXT, name));
}

constexpr size_t kShort = 4096;

}  // namespace

extern "C" {

ssize_t read(int fd, void* buf, size_t n) {
  static auto real = Real(&read, "read");
  const int64_t start = Now();
  Dispatched(start);
  const ssize_t r = real(fd, buf, n);
  if (r > 0 && static_cast<size_t>(r) < kShort) g_read.Add(Now() - start);
  return r;
}

ssize_t recv(int fd, void* buf, size_t n, int flags) {
  static auto real = Real(&recv, "recv");
  const int64_t start = Now();
  Dispatched(start);
  const ssize_t r = real(fd, buf, n, flags);
  if (r > 0 && static_cast<size_t>(r) < kShort) g_recv.Add(Now() - start);
  return r;
}

ssize_t write(int fd, const void* buf, size_t n) {
  static auto real = Real(&write, "write");
  const int64_t start = Now();
  const ssize_t r = real(fd, buf, n);
  if (r > 0 && n < kShort) g_write.Add(Now() - start);
  return r;
}

ssize_t writev(int fd, const iovec* iov, int count) {
  static auto real = Real(&writev, "writev");
  const int64_t start = Now();
  const ssize_t r = real(fd, iov, count);
  if (r > 0 && static_cast<size_t>(r) < kShort) g_writev.Add(Now() - start);
  return r;
}

ssize_t send(int fd, const void* buf, size_t n, int flags) {
  static auto real = Real(&send, "send");
  const int64_t start = Now();
  const ssize_t r = real(fd, buf, n, flags);
  if (r > 0 && n < kShort) g_send.Add(Now() - start);
  return r;
}

int epoll_wait(int epfd, epoll_event* events, int max, int timeout) {
  static auto real = Real(&epoll_wait, "epoll_wait");
  const int r = real(epfd, events, max, timeout);
  if (r > 0) t_events_at = Now();
  return r;
}

}  // extern "C"
