#include "front/http_server.h"

#include <algorithm>
#include <cctype>
#include <cstring>

namespace brake::front {

namespace {

struct Write {
  uv_write_t req;
  std::string data;
};

}  // namespace

// What a connection's timer waits for: an unused keep-alive connection to
// be closed, a request's head or body, a shutdown that never completes, or
// nothing; kResume parses pipelined bytes on the next loop turn.
enum class Wait { kNone, kIdle, kHead, kBody, kClosing, kResume };

struct Conn {
  uv_tcp_t tcp;
  uv_timer_t timer;
  HttpServer* server = nullptr;
  std::unique_ptr<RequestReader> reader;
  std::shared_ptr<Exchange> x;  // the request being answered
  bool held = false;  // bytes behind the request answered wait in `reader`
  bool in_flight = false;  // handed to the handler, not yet answered
  bool pumping = false;
  bool reading = false;
  bool closing = false;
  bool drain_wanted = false;  // the exchange passed kHighWater
  int open_handles = 2;
  Wait wait = Wait::kNone;
};

namespace {

HttpServer* ServerOf(Conn* c) { return c->server; }

void Arm(Conn* c, Wait wait, int64_t ms);

}  // namespace

struct ParserHooks {
  static const HttpLimits& Limits(Conn* c) { return c->server->limits_; }
  static void WriteRaw(Conn* c, std::string data);
  static void Pump(Conn* c, std::string_view data);
  static void AnswerEnded(Conn* c);
  static void Fail(Conn* c, int status, std::string_view message);
  static void OnRead(uv_stream_t* s, ssize_t n, const uv_buf_t* buf);
  static void OnTimer(uv_timer_t* t);
  static void CloseHandles(Conn* c);
};

namespace {

void Arm(Conn* c, Wait wait, int64_t ms) {
  c->wait = wait;
  if (wait == Wait::kNone) {
    uv_timer_stop(&c->timer);
  } else {
    uv_timer_start(&c->timer, &ParserHooks::OnTimer,
                   static_cast<uint64_t>(ms), 0);
  }
}

// `idle_ms`: how long brake keeps the connection unused. It is told to the
// client (keep-alive: timeout=, a second less) so that the client drops it
// first, never sending on a connection brake is closing.
std::string Head(int status, const Headers& headers, bool keep_alive,
                 bool http10, int64_t idle_ms = 0) {
  std::string head = http10 ? "HTTP/1.0 " : "HTTP/1.1 ";
  head += std::to_string(status);
  head += ' ';
  head += StatusText(status);
  head += "\r\n";
  for (const auto& [name, value] : headers) {
    head += name;
    head += ": ";
    head += value;
    head += "\r\n";
  }
  if (!keep_alive) {
    head += "connection: close\r\n";
  } else {
    if (http10) head += "connection: keep-alive\r\n";
    if (idle_ms > 0) {
      head += "keep-alive: timeout=";
      head += std::to_string(std::max<int64_t>(1, idle_ms / 1000 - 1));
      head += "\r\n";
    }
  }
  return head;
}

}  // namespace

// --- reading ---------------------------------------------------------------

void ParserHooks::OnRead(uv_stream_t* s, ssize_t n, const uv_buf_t* buf) {
  Conn* c = static_cast<Conn*>(s->data);
  if (n < 0) {
    delete[] buf->base;
    ServerOf(c)->CloseConn(c, /*now=*/true);
    return;
  }
  std::string_view data(buf->base, static_cast<size_t>(n));
  if (c->reader->held() + data.size() >
      static_cast<size_t>(Limits(c).max_header_bytes + Limits(c).max_body_bytes) * 2) {
    delete[] buf->base;
    ServerOf(c)->CloseConn(c, true);  // pipelining far ahead of its answers
    return;
  }
  Pump(c, data);
  delete[] buf->base;
}

// Reads `data` (and what the reader holds), handing each whole request to
// the handler; one at a time: the rest waits for its answer.
void ParserHooks::Pump(Conn* c, std::string_view data) {
  using Progress = RequestReader::Progress;
  RequestReader& reader = *c->reader;
  while (!c->closing) {
    if (c->in_flight) {
      if (!data.empty()) reader.Feed(data);  // held until the answer ends
      break;
    }
    const Progress before = c->wait == Wait::kHead   ? Progress::kHead
                            : c->wait == Wait::kBody ? Progress::kBody
                                                     : Progress::kIdle;
    const Progress now = reader.Feed(data);
    data = {};
    if (now == Progress::kError) {
      Fail(c, reader.error_status(), reader.error_message());
      return;
    }
    if (now == Progress::kHead && before != Progress::kHead) {
      Arm(c, Wait::kHead, Limits(c).header_timeout_ms);  // from its first byte
    } else if (now == Progress::kBody) {
      // The head just became whole: a client waiting to send its body is
      // told to go on.
      if (before != Progress::kBody && reader.current().expect_continue)
        WriteRaw(c, "HTTP/1.1 100 Continue\r\n\r\n");
      Arm(c, Wait::kBody, Limits(c).header_timeout_ms);  // it still arrives
    }
    if (now != Progress::kRequest) break;
    auto x = std::make_shared<Exchange>();
    x->request_ = reader.Take();
    x->conn_ = c;
    c->x = x;
    c->in_flight = true;
    Arm(c, Wait::kNone, 0);
    ++ServerOf(c)->stats_.requests_total;
    ServerOf(c)->handler_(x);  // may answer at once (AnswerEnded)
    if (c->in_flight) break;
  }
  // Reading goes on while a request is answered: bytes pipelined behind it
  // wait in the reader, and a client that leaves is seen at once (its call
  // is aborted and settled).
  if (!c->closing && !c->reading) {
    c->reading = true;
    uv_read_start(
        reinterpret_cast<uv_stream_t*>(&c->tcp),
        [](uv_handle_t*, size_t, uv_buf_t* buf) {
          *buf = uv_buf_init(new char[16384], 16384);
        },
        &ParserHooks::OnRead);
  }
}

// The exchange's answer has gone out (into the write queue).
void ParserHooks::AnswerEnded(Conn* c) {
  const bool keep = c->x && c->x->request_.keep_alive &&
                    !(c->x->request_.http10 && c->x->streaming_);
  if (c->x) c->x->conn_ = nullptr;
  c->x.reset();
  c->in_flight = false;
  c->drain_wanted = false;
  if (!keep || ServerOf(c)->closing_) {
    ServerOf(c)->CloseConn(c, false);
    return;
  }
  if (c->reader->held() == 0) {
    Arm(c, Wait::kIdle, Limits(c).idle_timeout_ms);
  } else {
    // Pipelined requests are parsed on the next turn, not inside the
    // callback that answered this one.
    Arm(c, Wait::kResume, 0);
  }
}

void ParserHooks::Fail(Conn* c, int status, std::string_view message) {
  ++ServerOf(c)->stats_.bad_requests;
  Answer a = ErrorAnswer(Dialect::kOpenAi, status, "bad_request", message);
  std::string out = Head(status, a.headers, false, false);
  out += "content-type: application/json\r\ncontent-length: ";
  out += std::to_string(a.body.size());
  out += "\r\n\r\n";
  out += a.body;
  if (c->x) c->x->conn_ = nullptr;
  c->x.reset();
  c->in_flight = false;
  WriteRaw(c, std::move(out));
  ServerOf(c)->CloseConn(c, false);
}

void ParserHooks::OnTimer(uv_timer_t* t) {
  Conn* c = static_cast<Conn*>(t->data);
  if (c->wait == Wait::kResume) {
    c->wait = Wait::kIdle;
    uv_timer_start(&c->timer, &ParserHooks::OnTimer,
                   static_cast<uint64_t>(Limits(c).idle_timeout_ms), 0);
    Pump(c, {});
  } else if (c->wait == Wait::kIdle || c->wait == Wait::kClosing) {
    ServerOf(c)->CloseConn(c, true);
  } else if (c->wait == Wait::kHead || c->wait == Wait::kBody) {
    Fail(c, 408, c->wait == Wait::kHead
                     ? "request head not received within header_timeout_ms"
                     : "request body stalled for header_timeout_ms");
  }
}

// --- writing ---------------------------------------------------------------

void ParserHooks::WriteRaw(Conn* c, std::string data) {
  if (c->closing || data.empty()) return;
  auto* stream = reinterpret_cast<uv_stream_t*>(&c->tcp);
  if (uv_stream_get_write_queue_size(stream) == 0) {
    uv_buf_t direct = uv_buf_init(data.data(), static_cast<unsigned>(data.size()));
    int sent = uv_try_write(stream, &direct, 1);
    if (sent == static_cast<int>(data.size())) return;
    if (sent > 0) data.erase(0, static_cast<size_t>(sent));
  }
  auto* w = new Write();
  w->data = std::move(data);
  w->req.data = w;
  uv_buf_t buf = uv_buf_init(w->data.data(), static_cast<unsigned>(w->data.size()));
  int rc = uv_write(&w->req, stream, &buf, 1, [](uv_write_t* req, int status) {
    auto* w = static_cast<Write*>(req->data);
    Conn* c = static_cast<Conn*>(req->handle->data);
    delete w;
    if (status < 0 || c->closing) return;
    if (c->drain_wanted && c->x &&
        uv_stream_get_write_queue_size(req->handle) < Exchange::kLowWater) {
      c->drain_wanted = false;
      if (c->x->on_drain) c->x->on_drain();
    }
  });
  if (rc != 0) {
    delete w;
    ServerOf(c)->CloseConn(c, true);
  }
}

// --- Exchange --------------------------------------------------------------

void Exchange::Respond(int status, const Headers& headers,
                       std::string_view body) {
  if (done_) return;
  done_ = true;
  if (conn_ == nullptr) return;
  std::string out = Head(status, headers, request_.keep_alive, request_.http10,
                         ParserHooks::Limits(conn_).idle_timeout_ms);
  out += "content-length: ";
  out += std::to_string(body.size());
  out += "\r\n\r\n";
  out += body;
  Conn* c = conn_;
  ParserHooks::WriteRaw(c, std::move(out));
  ParserHooks::AnswerEnded(c);
}

void Exchange::StartStream(int status, const Headers& headers) {
  if (done_ || streaming_ || conn_ == nullptr) return;
  streaming_ = true;
  std::string out = Head(status, headers, request_.keep_alive && !request_.http10, request_.http10,
                         ParserHooks::Limits(conn_).idle_timeout_ms);
  if (!request_.http10) out += "transfer-encoding: chunked\r\n";
  out += "\r\n";
  ParserHooks::WriteRaw(conn_, std::move(out));
}

bool Exchange::Send(std::string_view data) {
  if (conn_ == nullptr || done_ || !streaming_) return false;
  if (data.empty()) return true;
  std::string out;
  if (request_.http10) {
    out.assign(data);
  } else {
    char size[24];
    int n = std::snprintf(size, sizeof(size), "%zx\r\n", data.size());
    out.reserve(static_cast<size_t>(n) + data.size() + 2);
    out.append(size, static_cast<size_t>(n));
    out.append(data);
    out.append("\r\n");
  }
  Conn* c = conn_;
  ParserHooks::WriteRaw(c, std::move(out));
  if (conn_ != nullptr && queued() > kHighWater) c->drain_wanted = true;
  return conn_ != nullptr;
}

void Exchange::End() {
  if (done_) return;
  done_ = true;
  if (conn_ == nullptr) return;
  Conn* c = conn_;
  if (!request_.http10) ParserHooks::WriteRaw(c, "0\r\n\r\n");
  ParserHooks::AnswerEnded(c);
}

size_t Exchange::queued() const {
  if (conn_ == nullptr) return 0;
  return uv_stream_get_write_queue_size(
      reinterpret_cast<const uv_stream_t*>(&conn_->tcp));
}

// --- HttpServer ------------------------------------------------------------

HttpServer::HttpServer(uv_loop_t* loop, HttpLimits limits, Handler handler)
    : loop_(loop), limits_(limits), handler_(std::move(handler)) {}

HttpServer::~HttpServer() = default;

Status HttpServer::Listen(const std::string& host, int port) {
  sockaddr_storage addr{};
  int rc = host.find(':') != std::string::npos
               ? uv_ip6_addr(host.c_str(), port, reinterpret_cast<sockaddr_in6*>(&addr))
               : uv_ip4_addr(host.c_str(), port, reinterpret_cast<sockaddr_in*>(&addr));
  if (rc != 0) {
    return Status::BadRequest("http.listen: not an IP address: " + host);
  }
  uv_tcp_init(loop_, &listener_);
  listener_.data = this;
  listener_open_ = true;
  rc = uv_tcp_bind(&listener_, reinterpret_cast<sockaddr*>(&addr), 0);
  if (rc == 0) {
    rc = uv_listen(reinterpret_cast<uv_stream_t*>(&listener_), 511,
                   &HttpServer::OnConnection);
  }
  if (rc != 0) {
    return Status::Unavailable("http.listen: cannot listen on " + host + ":" +
                               std::to_string(port) + ": " + uv_strerror(rc));
  }
  sockaddr_storage bound{};
  int len = sizeof(bound);
  uv_tcp_getsockname(&listener_, reinterpret_cast<sockaddr*>(&bound), &len);
  port_ = ntohs(bound.ss_family == AF_INET6
                    ? reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port
                    : reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
  listening_ = true;
  return Status::Ok();
}

void HttpServer::OnConnection(uv_stream_t* listener, int status) {
  auto* self = static_cast<HttpServer*>(listener->data);
  if (status < 0 || !self->listening_) return;
  auto* c = new Conn();
  c->server = self;
  uv_tcp_init(self->loop_, &c->tcp);
  c->tcp.data = c;
  uv_timer_init(self->loop_, &c->timer);
  c->timer.data = c;
  self->conns_.insert(c);
  if (uv_accept(listener, reinterpret_cast<uv_stream_t*>(&c->tcp)) != 0) {
    self->CloseConn(c, true);
    return;
  }
  uv_tcp_nodelay(&c->tcp, 1);
  c->reader = std::make_unique<RequestReader>(self->limits_.max_header_bytes,
                                              self->limits_.max_body_bytes);
  ++self->stats_.connections_total;
  self->stats_.connections = static_cast<int64_t>(self->conns_.size());
  if (self->stats_.connections > self->limits_.max_connections) {
    ++self->stats_.refused_connections;
    Answer a = ErrorAnswer(Dialect::kOpenAi, 503, "too_many_connections",
                           "brake: the front already serves max_connections (" +
                               std::to_string(self->limits_.max_connections) + ")");
    std::string out = Head(503, a.headers, false, false);
    out += "content-type: application/json\r\ncontent-length: " +
           std::to_string(a.body.size()) + "\r\n\r\n" + a.body;
    ParserHooks::WriteRaw(c, std::move(out));
    self->CloseConn(c, false);
    return;
  }
  Arm(c, Wait::kIdle, self->limits_.idle_timeout_ms);
  ParserHooks::Pump(c, {});  // starts reading
}

void ParserHooks::CloseHandles(Conn* c) {
  for (uv_handle_t* h : {reinterpret_cast<uv_handle_t*>(&c->tcp),
                         reinterpret_cast<uv_handle_t*>(&c->timer)}) {
    if (!uv_is_closing(h)) {
      uv_close(h, [](uv_handle_t* handle) {
        auto* conn = static_cast<Conn*>(handle->data);
        if (--conn->open_handles == 0) conn->server->ConnClosed(conn);
      });
    }
  }
}

void HttpServer::CloseConn(Conn* c, bool now) {
  if (c->closing) {
    if (now) ParserHooks::CloseHandles(c);
    return;
  }
  c->closing = true;
  uv_read_stop(reinterpret_cast<uv_stream_t*>(&c->tcp));
  if (c->x) {
    std::shared_ptr<Exchange> x = std::move(c->x);
    x->conn_ = nullptr;
    if (!x->done_ && c->in_flight && x->on_gone) x->on_gone();
  }
  if (!now) {
    // What was written goes out first, then the shutdown, then the close;
    // a client that never takes it is cut at the idle timeout.
    auto* req = new uv_shutdown_t();
    if (uv_shutdown(req, reinterpret_cast<uv_stream_t*>(&c->tcp),
                    [](uv_shutdown_t* r, int) {
                      Conn* conn = static_cast<Conn*>(r->handle->data);
                      delete r;
                      ParserHooks::CloseHandles(conn);
                    }) == 0) {
      Arm(c, Wait::kClosing, limits_.idle_timeout_ms);
      return;
    }
    delete req;
  }
  ParserHooks::CloseHandles(c);
}

void HttpServer::ConnClosed(Conn* c) {
  conns_.erase(c);
  stats_.connections = static_cast<int64_t>(conns_.size());
  delete c;
  MaybeClosed();
}

void HttpServer::Close(std::function<void()> on_closed) {
  on_closed_ = std::move(on_closed);
  closing_ = true;
  listening_ = false;
  if (listener_open_) {
    uv_close(reinterpret_cast<uv_handle_t*>(&listener_), [](uv_handle_t* h) {
      auto* self = static_cast<HttpServer*>(h->data);
      self->listener_open_ = false;
      self->MaybeClosed();
    });
  }
  std::vector<Conn*> idle;
  for (Conn* c : conns_)
    if (!c->in_flight && !c->closing) idle.push_back(c);
  for (Conn* c : idle) CloseConn(c, true);
  MaybeClosed();
}

void HttpServer::MaybeClosed() {
  if (closing_ && !listener_open_ && conns_.empty() && on_closed_) {
    auto cb = std::move(on_closed_);
    on_closed_ = nullptr;
    cb();
  }
}

}  // namespace brake::front
