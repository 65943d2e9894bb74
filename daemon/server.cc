#include "daemon/server.h"

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <deque>
#include <memory>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "daemon/log.h"
#include "daemon/look_ahead.h"
#include "daemon/server_connection.h"

namespace brake {

namespace {

// A read buffer shared by every connection: the loop is single threaded and
// OnRead consumes the bytes before the next read.
char g_read_buffer[64 * 1024];

// Fairness between pipelining clients. Each connection reads at most its
// share per loop turn; one that fills it stops reading until the next turn
// (ResumeReading), so every other client is served in between. Left alone,
// libuv reads up to 32 buffers (2 MiB) per connection per turn, and fifty
// clients pipelining without pause made a well-behaved one wait about a
// second for each reply. The share is the turn's budget split between the
// connections that filled theirs in this turn or the previous one (a lone
// busy client keeps whole buffers, so its throughput is unchanged), but
// never under kMinReadShare (Redis reads 16 KiB per client per event for
// this reason).
constexpr size_t kTurnReadBudget = 64 * 1024;
constexpr size_t kMinReadShare = 2 * 1024;

bool PeerUid(uv_pipe_t* pipe, uint32_t* uid) {
  uv_os_fd_t fd;
  if (uv_fileno(reinterpret_cast<uv_handle_t*>(pipe), &fd) != 0) return false;
  struct ucred cred;
  socklen_t len = sizeof(cred);
  if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0) return false;
  *uid = cred.uid;
  return true;
}

// True when something answers on the socket at `path`.
bool SocketIsLive(const std::string& path) {
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, path.c_str(), sizeof(addr.sun_path) - 1);
  bool live = connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
  close(fd);
  return live;
}


}  // namespace

Server::Server(uv_loop_t* loop, Dispatcher* dispatcher, const Config* config,
               ServerStats* stats, Gate* gate)
    : loop_(loop),
      dispatcher_(dispatcher),
      config_(config),
      stats_(stats),
      gate_(gate) {}

Server::~Server() = default;

Status Server::Listen(const std::string& path, int mode) {
  if (path.size() >= sizeof(sockaddr_un::sun_path)) {
    return Status::Unavailable("socket: path longer than " +
                               std::to_string(sizeof(sockaddr_un::sun_path) - 1) +
                               " bytes: " + path);
  }
  struct stat st;
  if (lstat(path.c_str(), &st) == 0) {
    if (!S_ISSOCK(st.st_mode)) {
      return Status::Unavailable("socket: " + path +
                                 " exists and is not a socket; refusing to "
                                 "replace it");
    }
    if (SocketIsLive(path)) {
      return Status::Unavailable("socket: another braked is listening on " +
                                 path);
    }
    unlink(path.c_str());  // stale: its daemon is gone
  }
  uv_pipe_init(loop_, &listener_, 0);
  listener_.data = this;
  listener_closed_ = false;
  int rc = uv_pipe_bind(&listener_, path.c_str());
  if (rc == 0) {
    if (chmod(path.c_str(), static_cast<mode_t>(mode)) != 0) rc = -errno;
  }
  if (rc == 0) rc = uv_listen(reinterpret_cast<uv_stream_t*>(&listener_), 511,
                              &Server::OnConnection);
  if (rc != 0) {
    return Status::Unavailable("socket: cannot listen on " + path + ": " +
                               uv_strerror(rc));
  }
  path_ = path;
  listening_ = true;
  return Status::Ok();
}

void Server::OnConnection(uv_stream_t* listener, int status) {
  auto* self = static_cast<Server*>(listener->data);
  if (status < 0 || !self->listening_) return;
  auto* c = new Connection();
  c->server = self;
  uv_pipe_init(self->loop_, &c->pipe, 0);
  c->pipe.data = c;
  if (uv_accept(listener, reinterpret_cast<uv_stream_t*>(&c->pipe)) != 0) {
    uv_close(reinterpret_cast<uv_handle_t*>(&c->pipe),
             [](uv_handle_t* h) { delete static_cast<Connection*>(h->data); });
    return;
  }
  self->connections_.insert(c);
  c->peer.conn = self->next_conn_id_++;
  self->by_id_[c->peer.conn] = c;
  ++self->stats_->connections_total;
  // Connections still closing do not count: their clients are gone.
  self->stats_->connections = static_cast<int64_t>(self->by_id_.size());
  if (self->stats_->connections > self->config_->max_connections) {
    self->stats_->limit_hits.Add(LimitHit::kMaxConnections);
    self->Write(c, Dispatcher::ErrorLine(
                       ErrorCode::kTooManyConnections,
                       "connections: the daemon already serves " +
                           std::to_string(self->config_->max_connections)));
    self->CloseConnection(c);
    return;
  }
  uint32_t uid = 0;
  if (!PeerUid(&c->pipe, &uid)) {
    Log(LogLevel::kWarn, "connection without peer credentials; refused");
    self->CloseConnection(c);
    return;
  }
  c->peer.uid = uid;
  c->peer.admin = uid == getuid();  // conn was set at accept
  for (int64_t admin : self->config_->admin_uids)
    if (admin == static_cast<int64_t>(uid)) c->peer.admin = true;
  uv_read_start(reinterpret_cast<uv_stream_t*>(&c->pipe), &Server::OnAlloc,
                &Server::OnRead);
}

void Server::OnAlloc(uv_handle_t* handle, size_t, uv_buf_t* buf) {
  buf->base = g_read_buffer;
  buf->len = static_cast<Connection*>(handle->data)->server->ReadShare();
}

size_t Server::ReadShare() const {
  const size_t readers = std::max(last_turn_readers_, throttled_.size() + 1);
  return std::clamp(kTurnReadBudget / readers, kMinReadShare,
                    sizeof(g_read_buffer));
}

void Server::OnRead(uv_stream_t* stream, ssize_t nread, const uv_buf_t* buf) {
  auto* c = static_cast<Connection*>(stream->data);
  Server* self = c->server;
  if (nread < 0) {
    self->CloseConnection(c);
    return;
  }
  // The share this read was offered (Consume may change the next one).
  const size_t share = self->ReadShare();
  self->Consume(c, buf->base, static_cast<size_t>(nread));
  // The read's replies go out now, not at the turn's end (FlushWrites): a
  // lone request's answer leaves before libuv's and the turn's other work.
  // Still one write per read: Consume gathered a burst's replies.
  if (!c->closing) self->WriteOut(c);
  if (static_cast<size_t>(nread) == share && !c->closing &&
      !c->close_after_write && !c->paused) {
    uv_read_stop(stream);
    c->throttled = true;
    self->throttled_.push_back(c);
  }
}

void Server::ResumeReading() {
  last_turn_readers_ = throttled_.size();
  for (Connection* c : throttled_) {
    c->throttled = false;
    if (!c->paused && !c->close_after_write && listening_) {
      uv_read_start(reinterpret_cast<uv_stream_t*>(&c->pipe),
                    &Server::OnAlloc, &Server::OnRead);
    }
  }
  throttled_.clear();
}

void Server::Consume(Connection* c, const char* data, size_t n) {
  const size_t max_line = static_cast<size_t>(config_->max_line_bytes);
  Server* self = this;
  uv_stream_t* stream = reinterpret_cast<uv_stream_t*>(&c->pipe);
  size_t pos = 0;
  bool too_long = false;
  LookAhead look_ahead(dispatcher_, data, n);
  while (pos < n && !c->closing && !c->close_after_write && !c->paused) {
    const char* nl =
        static_cast<const char*>(memchr(data + pos, '\n', n - pos));
    if (nl == nullptr) break;
    size_t len = static_cast<size_t>(nl - (data + pos));
    if (c->in.size() + len > max_line) {
      too_long = true;
      break;
    }
    look_ahead.BeforeLine();
    if (c->in.empty()) {
      self->HandleLine(c, std::string_view(data + pos, len));
    } else {
      c->in.append(data + pos, len);
      std::string line = std::move(c->in);
      c->in.clear();
      self->HandleLine(c, line);
    }
    pos += len + 1;
  }
  if (c->closing || c->close_after_write) return;
  if (c->paused) {
    // A deferred request answers later, in order: hold what follows it.
    c->in.insert(0, data + pos, n - pos);
    if (!c->channel()) uv_read_stop(stream);
    return;
  }
  if (!too_long && pos < n) {
    c->in.append(data + pos, n - pos);
    too_long = c->in.size() > max_line;
  }
  // The clock runs for the line now incomplete: a client whose reads keep
  // ending mid-line while whole lines go through (any long pipelined
  // stream) is not a slow-loris.
  if (c->in.empty()) {
    c->partial_since_us = 0;
  } else if (c->partial_since_us == 0 || pos > 0) {
    c->partial_since_us = gate_->NowUs();
  }
  if (too_long) {
    stats_->limit_hits.Add(LimitHit::kMaxLineBytes);
    c->in.clear();
    c->in.shrink_to_fit();
    if (!c->channel()) uv_read_stop(stream);
    self->QueueReply(c, Dispatcher::ErrorLine(
                    ErrorCode::kLineTooLong,
                    "request: line longer than max_line_bytes (" +
                        std::to_string(max_line) + "); closing"));
    c->close_after_write = true;
    if (c->held.empty()) self->CloseConnection(c);
  }
}

void Server::HandleLine(Connection* c, std::string_view line) {
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  if (line.empty()) return;  // blank lines are not requests
  reply_.clear();
  dispatcher_->Handle(c->peer, line, gate_->NowUs(), &reply_);
  if (dispatcher_->TakeDeferred()) c->paused = true;
  if (!reply_.empty()) QueueReply(c, reply_);
}

void Server::Resume(uint64_t conn, std::string line) {
  auto it = by_id_.find(conn);
  if (it == by_id_.end()) return;
  Connection* c = it->second;
  c->paused = false;
  if (c->closing) return;
  QueueReply(c, line);
  ReadOn(c);
}

void Server::Redo(uint64_t conn, std::string request) {
  auto it = by_id_.find(conn);
  if (it == by_id_.end()) return;
  Connection* c = it->second;
  c->paused = false;
  if (c->closing) return;
  HandleLine(c, request);
  if (!c->paused) ReadOn(c);
}

void Server::ReadOn(Connection* c) {
  std::string pending = std::move(c->in);
  c->in.clear();
  Consume(c, pending.data(), pending.size());
  if (!c->paused && !c->throttled && !c->closing && !c->close_after_write &&
      listening_ && !c->channel()) {
    uv_read_start(reinterpret_cast<uv_stream_t*>(&c->pipe), &Server::OnAlloc,
                  &Server::OnRead);
  }
}

void Server::Deliver(uint64_t conn, std::string line) {
  auto it = by_id_.find(conn);
  if (it == by_id_.end() || it->second->closing) return;
  QueueReply(it->second, line);
}

void Server::Detach(Connection* c) {
  c->closing = true;
  unflushed_.erase(std::remove(unflushed_.begin(), unflushed_.end(), c),
                   unflushed_.end());
  throttled_.erase(std::remove(throttled_.begin(), throttled_.end(), c),
                   throttled_.end());
  holding_.erase(std::remove(holding_.begin(), holding_.end(), c),
                 holding_.end());
  by_id_.erase(c->peer.conn);
  stats_->connections = static_cast<int64_t>(by_id_.size());
  gate_->OnConnectionClosed(c->peer.conn);
  if (!c->channel()) uv_read_stop(reinterpret_cast<uv_stream_t*>(&c->pipe));
}

void Server::OnClosed(uv_handle_t* handle) {
  auto* c = static_cast<Connection*>(handle->data);
  Server* self = c->server;
  self->connections_.erase(c);
  delete c;
  self->MaybeClosed();
}

void Server::CloseConnection(Connection* c) {
  if (c->closing) return;
  if (c->channel()) {
    AbortConnection(c);
    return;
  }
  WriteOut(c);  // what was answered still goes out before the shutdown
  Detach(c);
  c->closing_since_us = gate_->NowUs();
  // Shut down after queued writes (an error line must reach the client),
  // then close. A client that never takes them is cut off by
  // ExpireSlowClients (AbortConnection), which cancels this shutdown.
  auto* req = new uv_shutdown_t();
  req->data = c;
  int rc = uv_shutdown(req, reinterpret_cast<uv_stream_t*>(&c->pipe),
                       [](uv_shutdown_t* r, int) {
                         auto* h = reinterpret_cast<uv_handle_t*>(r->handle);
                         delete r;
                         if (!uv_is_closing(h)) uv_close(h, &Server::OnClosed);
                       });
  if (rc != 0) {
    delete req;
    uv_close(reinterpret_cast<uv_handle_t*>(&c->pipe), &Server::OnClosed);
  }
}

void Server::AbortConnection(Connection* c) {
  if (!c->closing) Detach(c);
  c->held.Clear();
  c->out.clear();
  c->in.clear();
  if (c->channel()) {
    connections_.erase(c);
    delete c;
    MaybeClosed();
    return;
  }
  // Pending writes (and a pending shutdown) are cancelled; their callbacks
  // free them.
  auto* h = reinterpret_cast<uv_handle_t*>(&c->pipe);
  if (!uv_is_closing(h)) uv_close(h, &Server::OnClosed);
}

void Server::ExpireSlowClients(int64_t now_us) {
  const int64_t limit_us = config_->partial_line_timeout_ms * 1000;
  std::vector<Connection*> stalled;
  for (Connection* c : connections_) {
    if (c->closing_since_us != 0 && !c->channel() &&
        now_us - c->closing_since_us > limit_us &&
        !uv_is_closing(reinterpret_cast<uv_handle_t*>(&c->pipe))) {
      stalled.push_back(c);
    }
  }
  for (Connection* c : stalled) {
    Log(LogLevel::kWarn, "connection of uid %u did not take its last %zu "
        "bytes of replies within %lld ms; dropping it", c->peer.uid,
        c->pipe.write_queue_size,
        static_cast<long long>(config_->partial_line_timeout_ms));
    AbortConnection(c);
  }
  std::vector<Connection*> slow;
  for (const auto& [id, c] : by_id_) {
    if (c->partial_since_us != 0 && !c->paused && !c->close_after_write &&
        !c->channel() && now_us - c->partial_since_us > limit_us) {
      slow.push_back(c);
    }
  }
  for (Connection* c : slow) {
    stats_->limit_hits.Add(LimitHit::kPartialLineTimeoutMs);
    Log(LogLevel::kWarn, "connection of uid %u held an incomplete line for "
        "over %lld ms; closing it", c->peer.uid,
        static_cast<long long>(config_->partial_line_timeout_ms));
    uv_read_stop(reinterpret_cast<uv_stream_t*>(&c->pipe));
    c->in.clear();
    c->in.shrink_to_fit();
    QueueReply(c, Dispatcher::ErrorLine(
                      ErrorCode::kBadRequest,
                      "request: incomplete line held longer than "
                      "partial_line_timeout_ms; closing"));
    c->close_after_write = true;
    if (c->held.empty()) CloseConnection(c);
  }
}

uint64_t Server::OpenChannel(const Peer& peer,
                             std::function<void(std::string_view)> on_reply) {
  auto* c = new Connection();
  c->server = this;
  c->on_reply = std::move(on_reply);
  c->peer = peer;
  c->peer.conn = next_conn_id_++;
  connections_.insert(c);
  by_id_[c->peer.conn] = c;
  return c->peer.conn;
}

void Server::SendLine(uint64_t conn, std::string_view line) {
  auto it = by_id_.find(conn);
  if (it == by_id_.end() || !it->second->channel()) return;
  ++channel_lines_;
  channel_line_.assign(line);
  channel_line_ += '\n';
  std::string data;
  data.swap(channel_line_);  // Consume may run a channel's callbacks
  Consume(it->second, data.data(), data.size());
  data.clear();
  channel_line_.swap(data);
}

void Server::CloseChannel(uint64_t conn) {
  auto it = by_id_.find(conn);
  if (it == by_id_.end() || !it->second->channel()) return;
  AbortConnection(it->second);
}

void Server::StopAccepting() {
  if (!listening_) return;
  listening_ = false;
  uv_close(reinterpret_cast<uv_handle_t*>(&listener_), [](uv_handle_t* h) {
    auto* self = static_cast<Server*>(h->data);
    self->listener_closed_ = true;
    self->MaybeClosed();
  });
  unlink(path_.c_str());
  for (Connection* c : connections_) {
    if (!c->channel()) uv_read_stop(reinterpret_cast<uv_stream_t*>(&c->pipe));
  }
}

void Server::Close(std::function<void()> on_closed) {
  on_closed_ = std::move(on_closed);
  closing_ = true;
  StopAccepting();
  std::vector<Connection*> all(connections_.begin(), connections_.end());
  for (Connection* c : all) {
    Flush(c);
    CloseConnection(c);
  }
  MaybeClosed();
}

void Server::MaybeClosed() {
  if (closing_ && listener_closed_ && connections_.empty() && on_closed_) {
    auto cb = std::move(on_closed_);
    on_closed_ = nullptr;
    cb();
  }
}

}  // namespace brake
