// UpstreamClient: calls to the providers through libcurl's multi interface,
// driven by the daemon's libuv loop (curl's documented multi_socket pattern:
// a uv_poll per socket curl names, one uv_timer for curl's timeout).
//
// TLS comes from libcurl, connections are reused between calls (curl's
// connection cache in the multi handle), and nothing blocks the loop: name
// resolution, connects and transfers all run on it. Each call streams its
// answer to callbacks as it arrives: the head once (status and headers,
// interim 1xx answers skipped), then the body in pieces, then the end. A
// call's receiving can be paused (the client is not taking its answer) and
// aborted (the client is gone). Loop thread only.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>

#include <uv.h>

#include "front/answers.h"

namespace brake::front {

struct UpstreamCall {
  std::string url;
  std::string method = "POST";
  Headers headers;  // sent as given
  std::string body;
  int64_t connect_timeout_ms = 10'000;
  int64_t timeout_ms = 600'000;  // the whole call
  // The answer's status line and headers (names lower-cased).
  std::function<void(int status, const Headers& headers)> on_head;
  // A piece of the answer's body.
  std::function<void(std::string_view data)> on_data;
  // The end: "" when the answer came whole, else what failed (a refused
  // connection, a timeout, a stream cut by the provider).
  std::function<void(const std::string& error, bool timed_out)> on_done;
};

class UpstreamClient {
 public:
  explicit UpstreamClient(uv_loop_t* loop);
  ~UpstreamClient();
  UpstreamClient(const UpstreamClient&) = delete;
  UpstreamClient& operator=(const UpstreamClient&) = delete;

  // Starts a call; its id, or 0 when curl refused it (nothing runs then).
  // on_done runs once, unless the call is aborted.
  uint64_t Start(UpstreamCall call);
  // Stops or resumes taking the answer's bytes (TCP pushes back on the
  // provider meanwhile).
  void Pause(uint64_t id, bool paused);
  // Ends the call now; its on_done does not run.
  void Abort(uint64_t id);
  // Aborts every call and closes the handles; then `on_closed`.
  void Close(std::function<void()> on_closed);

  size_t active() const { return calls_.size(); }

  struct Transfer;  // one call in flight (upstream.cc)
  struct Socket;    // one socket curl watches

 private:
  static int OnSocket(void* easy, int fd, int what, void* self, void* socketp);
  static int OnTimer(void* multi, long timeout_ms, void* self);
  void Drive(int fd, int events);
  void Finished();
  void Remove(Transfer* t);

  uv_loop_t* loop_;
  void* multi_ = nullptr;  // CURLM*
  uv_timer_t timer_;
  uint64_t next_id_ = 1;
  std::unordered_map<uint64_t, std::unique_ptr<Transfer>> calls_;
  int in_callbacks_ = 0;  // inside curl: removals wait for Finished
  bool closing_ = false;
  int open_handles_ = 1;  // the timer and each socket's poll
  std::function<void()> on_closed_;
};

}  // namespace brake::front
