// EchoServer: the transport floor for brake-bench. It listens on a Unix
// socket and answers every complete request line with the same line, so a
// reply is about the size of a braked reply, carries the request's "id", and
// costs only framing and syscalls.
//
// Like braked, it runs a fixed number of epoll threads (one by default, the
// shape of braked's single loop); thread 0 also accepts and hands each new
// connection to a thread round-robin. A line longer than kMaxLineBytes
// without a newline closes the connection, as braked's line_too_long does.
// Start and Stop are called from one owning thread; the server owns its
// threads, sockets and the socket file, which Stop unlinks.
#pragma once

#include <atomic>
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "common/status.h"

namespace brake::bench {

class EchoServer {
 public:
  static constexpr size_t kMaxLineBytes = 64 * 1024;

  EchoServer();
  ~EchoServer();
  EchoServer(const EchoServer&) = delete;
  EchoServer& operator=(const EchoServer&) = delete;

  // Listens on `path` and starts `threads` (>= 1) threads. Ok means clients
  // can connect. On error nothing is left running.
  Status Start(const std::string& path, int threads);

  // Closes every connection and the listener, joins the threads and unlinks
  // the socket file. Idempotent.
  void Stop();

  const std::string& path() const { return path_; }

 private:
  struct Worker;
  struct Conn;

  void Run(Worker* worker);
  void AcceptAll();
  void HandOff(int fd);

  std::string path_;
  int listen_fd_ = -1;
  size_t next_worker_ = 0;
  std::atomic<bool> stopping_{false};
  std::vector<std::unique_ptr<Worker>> workers_;
};

}  // namespace brake::bench
