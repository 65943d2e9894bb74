// MetricsHttp: GET /metrics over HTTP for Prometheus (config metrics_listen).
//
// A deliberately tiny HTTP/1.0-style responder on the loop: it reads one
// request head (at most 8 KiB, 5 s), answers `GET /metrics` with the same
// text exposition as the `metrics` op, anything else with 404, and closes.
// Loop thread only; owns its handles and closes them in Close().
#pragma once

#include <functional>
#include <string>
#include <unordered_set>

#include <uv.h>

#include "common/status.h"

namespace brake {

class MetricsHttp {
 public:
  // `text()` produces the exposition for each scrape.
  MetricsHttp(uv_loop_t* loop, std::function<std::string()> text);
  ~MetricsHttp();
  MetricsHttp(const MetricsHttp&) = delete;
  MetricsHttp& operator=(const MetricsHttp&) = delete;

  // Listens on "HOST:PORT" (IPv4 or [IPv6]). Errors: kBadRequest for a
  // malformed address, kUnavailable when it cannot bind.
  Status Listen(const std::string& host_port);
  void Close(std::function<void()> on_closed);

 private:
  struct Conn;
  static void OnConnection(uv_stream_t* server, int status);
  void Finish(Conn* c, const std::string& response);

  uv_loop_t* loop_;
  std::function<std::string()> text_;
  uv_tcp_t listener_;
  bool listening_ = false;
  std::unordered_set<Conn*> conns_;
  std::function<void()> on_closed_;
  int closing_handles_ = 0;
};

}  // namespace brake
