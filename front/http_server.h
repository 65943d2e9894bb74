// HttpServer: the front's HTTP/1.1 server side on the daemon's libuv loop.
//
// Requests are parsed by http-parser (Debian's libhttp-parser, Node's
// parser for years): keep-alive, Content-Length and chunked bodies, one
// request in flight per connection (bytes a client pipelines behind it wait
// in the parser). Limits: the request head (max_header_bytes: 431), the
// body (max_body_bytes: 413), the head's arrival (header_timeout_ms from its
// first byte, and a body that stops arriving for as long: 408, closed), an
// unused keep-alive connection (idle_timeout_ms: closed), connections at
// once (max_connections: 503, closed). A slow or silent client costs a
// timer, never a thread. Malformed HTTP: 400, closed.
//
// Each whole request is an Exchange handed to the handler, which answers it
// whole (Respond) or streams the answer (StartStream, Send, End: chunked
// encoding). An exchange outlives its connection: once the client is gone,
// its answers are dropped and `on_gone` runs. Loop thread only.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_set>

#include <uv.h>

#include "common/status.h"
#include "front/answers.h"
#include "front/request_reader.h"

namespace brake::front {

struct HttpLimits {
  int64_t max_header_bytes = 16 * 1024;
  int64_t max_body_bytes = 8 << 20;
  int64_t header_timeout_ms = 10'000;
  int64_t idle_timeout_ms = 60'000;
  int64_t max_connections = 4096;
};

class HttpServer;
struct Conn;
struct ParserHooks;

class Exchange {
 public:
  std::string_view method() const { return request_.method; }
  std::string_view target() const { return request_.target; }  // path, query
  std::string_view body() const { return request_.body; }
  // A request header's value by its lower-case name; "" when absent.
  std::string_view header(std::string_view name) const {
    return request_.header(name);
  }

  // The whole answer. `headers` must not name content-length, connection
  // or transfer-encoding: the server sets them.
  void Respond(int status, const Headers& headers, std::string_view body);
  // A streamed answer: the head now, then Send each piece as it comes, then
  // End. Send returns false when the client is gone.
  void StartStream(int status, const Headers& headers);
  bool Send(std::string_view data);
  void End();
  // Bytes the client has not yet taken; past kHighWater the producer should
  // pause until `on_drain` runs (the queue fell under kLowWater).
  size_t queued() const;
  static constexpr size_t kHighWater = 256 * 1024;
  static constexpr size_t kLowWater = 64 * 1024;
  bool gone() const { return conn_ == nullptr; }
  bool answered() const { return done_; }
  // Runs once the client is gone before the answer ended.
  std::function<void()> on_gone;
  std::function<void()> on_drain;

 private:
  friend class HttpServer;
  friend struct ParserHooks;
  Conn* conn_ = nullptr;
  HttpRequest request_;
  bool streaming_ = false;
  bool done_ = false;
};

class HttpServer {
 public:
  // Runs for each whole request; the handler keeps the exchange until it
  // has answered it (or it is gone).
  using Handler = std::function<void(std::shared_ptr<Exchange>)>;
  HttpServer(uv_loop_t* loop, HttpLimits limits, Handler handler);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  Status Listen(const std::string& host, int port);
  // Stops accepting; closes idle connections now and the others once their
  // answer has gone out; then `on_closed`.
  void Close(std::function<void()> on_closed);

  struct Stats {
    int64_t connections = 0;         // open now
    int64_t connections_total = 0;
    int64_t requests_total = 0;
    int64_t bad_requests = 0;        // malformed, too large, timed out
    int64_t refused_connections = 0;  // over max_connections
  };
  const Stats& stats() const { return stats_; }
  int port() const { return port_; }  // the bound port (after Listen)

 private:
  friend class Exchange;
  friend struct ParserHooks;
  static void OnConnection(uv_stream_t* listener, int status);
  void CloseConn(Conn* c, bool now);
  void ConnClosed(Conn* c);
  void MaybeClosed();

  uv_loop_t* loop_;
  HttpLimits limits_;
  Handler handler_;
  uv_tcp_t listener_;
  bool listening_ = false;
  bool listener_open_ = false;
  bool closing_ = false;
  int port_ = 0;
  std::unordered_set<Conn*> conns_;
  std::function<void()> on_closed_;
  Stats stats_;
};

}  // namespace brake::front
