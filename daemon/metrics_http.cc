#include "daemon/metrics_http.h"

#include <cstdlib>
#include <cstring>
#include <vector>

#include "daemon/write_pool.h"

namespace brake {

struct MetricsHttp::Conn {
  uv_tcp_t tcp;
  uv_timer_t deadline;
  MetricsHttp* owner = nullptr;
  std::string head;
  bool done = false;
  int open_handles = 2;
};

namespace {

constexpr size_t kMaxHead = 8192;
constexpr uint64_t kDeadlineMs = 5000;

std::string Response(const char* status, const std::string& body,
                     const char* type) {
  return std::string("HTTP/1.1 ") + status + "\r\nContent-Type: " + type +
         "\r\nContent-Length: " + std::to_string(body.size()) +
         "\r\nConnection: close\r\n\r\n" + body;
}

}  // namespace

MetricsHttp::MetricsHttp(uv_loop_t* loop, std::function<std::string()> text)
    : loop_(loop), text_(std::move(text)) {}

MetricsHttp::~MetricsHttp() = default;

Status MetricsHttp::Listen(const std::string& host_port) {
  size_t colon = host_port.rfind(':');
  if (colon == std::string::npos || colon == 0) {
    return Status::BadRequest("metrics_listen: must be HOST:PORT");
  }
  std::string host = host_port.substr(0, colon);
  int port = std::atoi(host_port.c_str() + colon + 1);
  if (port <= 0 || port > 65535) {
    return Status::BadRequest("metrics_listen: bad port in " + host_port);
  }
  sockaddr_storage addr{};
  int rc;
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') {
    rc = uv_ip6_addr(host.substr(1, host.size() - 2).c_str(), port,
                     reinterpret_cast<sockaddr_in6*>(&addr));
  } else {
    rc = uv_ip4_addr(host.c_str(), port, reinterpret_cast<sockaddr_in*>(&addr));
  }
  if (rc != 0) {
    return Status::BadRequest("metrics_listen: bad address " + host_port);
  }
  uv_tcp_init(loop_, &listener_);
  listener_.data = this;
  listening_ = true;
  rc = uv_tcp_bind(&listener_, reinterpret_cast<sockaddr*>(&addr), 0);
  if (rc == 0) {
    rc = uv_listen(reinterpret_cast<uv_stream_t*>(&listener_), 64,
                   &MetricsHttp::OnConnection);
  }
  if (rc != 0) {
    return Status::Unavailable("metrics_listen: cannot listen on " +
                               host_port + ": " + uv_strerror(rc));
  }
  return Status::Ok();
}

void MetricsHttp::OnConnection(uv_stream_t* server, int status) {
  auto* self = static_cast<MetricsHttp*>(server->data);
  if (status < 0) return;
  auto* c = new Conn();
  c->owner = self;
  uv_tcp_init(self->loop_, &c->tcp);
  uv_timer_init(self->loop_, &c->deadline);
  c->tcp.data = c;
  c->deadline.data = c;
  self->conns_.insert(c);
  if (uv_accept(server, reinterpret_cast<uv_stream_t*>(&c->tcp)) != 0) {
    self->Finish(c, "");
    return;
  }
  uv_timer_start(&c->deadline, [](uv_timer_t* t) {
    auto* conn = static_cast<Conn*>(t->data);
    conn->owner->Finish(conn, "");
  }, kDeadlineMs, 0);
  uv_read_start(
      reinterpret_cast<uv_stream_t*>(&c->tcp),
      [](uv_handle_t*, size_t, uv_buf_t* buf) {
        static char chunk[4096];
        buf->base = chunk;
        buf->len = sizeof(chunk);
      },
      [](uv_stream_t* s, ssize_t n, const uv_buf_t* buf) {
        auto* conn = static_cast<Conn*>(s->data);
        if (conn->done) return;
        if (n < 0) {
          conn->owner->Finish(conn, "");
          return;
        }
        conn->head.append(buf->base, static_cast<size_t>(n));
        if (conn->head.find("\r\n\r\n") == std::string::npos &&
            conn->head.find("\n\n") == std::string::npos) {
          if (conn->head.size() > kMaxHead) {
            conn->owner->Finish(
                conn, Response("431 Request Header Fields Too Large", "",
                               "text/plain"));
          }
          return;
        }
        bool metrics = conn->head.rfind("GET /metrics ", 0) == 0 ||
                       conn->head.rfind("GET /metrics\r", 0) == 0;
        conn->owner->Finish(
            conn, metrics ? Response("200 OK", conn->owner->text_(),
                                     "text/plain; version=0.0.4")
                          : Response("404 Not Found", "not found\n",
                                     "text/plain"));
      });
}

void MetricsHttp::Finish(Conn* c, const std::string& response) {
  if (c->done) return;
  c->done = true;
  uv_read_stop(reinterpret_cast<uv_stream_t*>(&c->tcp));
  uv_timer_stop(&c->deadline);
  if (!response.empty()) {
    WriteReq* w = TakeWriteReq();
    w->data = response;
    uv_buf_t buf = uv_buf_init(w->data.data(),
                               static_cast<unsigned>(w->data.size()));
    w->req.data = w;
    if (uv_write(&w->req, reinterpret_cast<uv_stream_t*>(&c->tcp), &buf, 1,
                 [](uv_write_t* r, int) {
                   ReturnWriteReq(static_cast<WriteReq*>(r->data));
                 }) != 0) {
      ReturnWriteReq(w);
    }
  }
  auto closed = [](uv_handle_t* h) {
    auto* conn = static_cast<Conn*>(h->data);
    if (--conn->open_handles > 0) return;
    MetricsHttp* owner = conn->owner;
    owner->conns_.erase(conn);
    delete conn;
    if (owner->on_closed_ && owner->conns_.empty() &&
        owner->closing_handles_ == 0) {
      auto cb = std::move(owner->on_closed_);
      owner->on_closed_ = nullptr;
      cb();
    }
  };
  uv_close(reinterpret_cast<uv_handle_t*>(&c->deadline), closed);
  // Shut down after the queued write (a plain close would cancel it), then
  // close.
  auto* req = new uv_shutdown_t();
  req->data = reinterpret_cast<void*>(+closed);
  if (uv_shutdown(req, reinterpret_cast<uv_stream_t*>(&c->tcp),
                  [](uv_shutdown_t* r, int) {
                    auto cb = reinterpret_cast<uv_close_cb>(r->data);
                    uv_close(reinterpret_cast<uv_handle_t*>(r->handle), cb);
                    delete r;
                  }) != 0) {
    delete req;
    uv_close(reinterpret_cast<uv_handle_t*>(&c->tcp), closed);
  }
}

void MetricsHttp::Close(std::function<void()> on_closed) {
  on_closed_ = std::move(on_closed);
  std::vector<Conn*> all(conns_.begin(), conns_.end());
  for (Conn* c : all) Finish(c, "");
  if (listening_) {
    listening_ = false;
    ++closing_handles_;
    uv_close(reinterpret_cast<uv_handle_t*>(&listener_), [](uv_handle_t* h) {
      auto* self = static_cast<MetricsHttp*>(h->data);
      --self->closing_handles_;
      if (self->on_closed_ && self->conns_.empty()) {
        auto cb = std::move(self->on_closed_);
        self->on_closed_ = nullptr;
        cb();
      }
    });
  } else if (conns_.empty() && on_closed_) {
    auto cb = std::move(on_closed_);
    on_closed_ = nullptr;
    cb();
  }
}

}  // namespace brake
