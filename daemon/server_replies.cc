// The server's reply side: replies wait for the batch their answer depends on
// (the gate), are failed as `unavailable` when it fails, gathered per
// connection and written after each read or loop turn, and a client that
// does not read them is dropped at max_output_bytes.
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "daemon/log.h"
#include "daemon/server.h"
#include "daemon/server_connection.h"
#include "daemon/write_pool.h"

namespace brake {
namespace {

// Rewrites the reply lines of `data` as `unavailable` errors with their ids.
std::string AsUnavailable(const std::string& data, const std::string& message) {
  std::string out;
  size_t pos = 0;
  while (pos < data.size()) {
    size_t nl = data.find('\n', pos);
    if (nl == std::string::npos) nl = data.size();
    nlohmann::json line = nlohmann::json::parse(
        data.begin() + pos, data.begin() + nl, nullptr, false);
    nlohmann::json err = {{"ok", false},
                          {"error",
                           {{"code", "unavailable"}, {"message", message}}}};
    if (line.is_object() && line.contains("id")) err["id"] = line["id"];
    out += err.dump();
    out += '\n';
    pos = nl + 1;
  }
  return out;
}

}  // namespace

void Server::QueueReply(Connection* c, std::string_view data) {
  uint64_t seq = gate_->SeqForReply();
  bool changed = gate_->ReplyChangedState();
  if (c->held.empty() && seq <= released_seq_) {
    Write(c, data);
    return;
  }
  // Held replies count against the output cap too: a client that pipelines
  // without reading must not grow them while a batch commits.
  if (!Admit(c, data.size())) return;
  if (c->held.empty()) holding_.push_back(c);  // listed while it holds any
  c->held.Add(seq, changed, data);
  ++stats_->replies_held;
}

// Moves the held replies whose batch is released to `out`.
void Server::Flush(Connection* c) {
  // The released lines are counted in QueuedBytes already, as held.
  if (!c->closing && c->held.Releasable(released_seq_) && Admit(c, 0)) {
    if (c->out.empty()) unflushed_.push_back(c);
    c->held.MoveReleased(released_seq_, &c->out);
  }
  if (c->close_after_write && c->held.empty()) CloseConnection(c);
}

// Flushes every connection holding replies; those still holding some (for
// a later batch) are listed again.
void Server::FlushHolding() {
  releasing_.swap(holding_);
  for (Connection* c : releasing_) {
    Flush(c);
    if (!c->held.empty() && !c->closing) holding_.push_back(c);
  }
  releasing_.clear();
}

void Server::Release(uint64_t seq) {
  if (seq > released_seq_) released_seq_ = seq;
  FlushHolding();
}

void Server::Fail(uint64_t seq, const std::string& message) {
  for (Connection* c : holding_) {
    c->held.Fail(seq, [&](const std::string& lines) {
      return AsUnavailable(lines, message);
    });
  }
  FlushHolding();  // seq 0 is always released
}

// Replies are gathered per connection and written after each read
// (OnRead) and once per loop turn for the rest (FlushWrites), so a
// pipelined burst costs one write(2), not one per reply.
void Server::Write(Connection* c, std::string_view data) {
  if (c->closing || !Admit(c, data.size())) return;
  if (c->out.empty()) unflushed_.push_back(c);
  c->out += data;
}

bool Server::Admit(Connection* c, size_t more) {
  const size_t queued = QueuedBytes(c) + more;
  if (queued <= static_cast<size_t>(config_->max_output_bytes)) return true;
  DropSlowReader(c, queued);
  return false;
}

size_t Server::QueuedBytes(const Connection* c) {
  return (c->channel() ? 0 : c->pipe.write_queue_size) + c->held.bytes() +
         c->out.size();
}

void Server::DropSlowReader(Connection* c, size_t queued) {
  stats_->limit_hits.Add(LimitHit::kMaxOutputBytes);
  Log(LogLevel::kWarn, "connection of uid %u holds %zu bytes of unread "
      "replies; closing it", c->peer.uid, queued);
  AbortConnection(c);
}

void Server::FlushWrites() {
  channel_lines_ = 0;
  for (Connection* c : unflushed_) WriteOut(c);
  unflushed_.clear();
  // Channels' replies, a line at a time; a callback may send or close
  // (its own channel or another), so each is looked up again.
  delivering_.swap(channel_out_);
  for (auto& [conn, data] : delivering_) {
    size_t pos = 0;
    while (pos < data.size()) {
      size_t nl = data.find('\n', pos);
      if (nl == std::string::npos) nl = data.size();
      auto it = by_id_.find(conn);
      if (it == by_id_.end()) break;
      // A copy: the callback may close the channel that owns `on_reply`.
      auto on_reply = it->second->on_reply;
      on_reply(std::string_view(data).substr(pos, nl - pos));
      pos = nl + 1;
    }
  }
  delivering_.clear();
}

void Server::WriteOut(Connection* c) {
  if (c->out.empty()) return;
  if (c->channel()) {
    if (!c->closing) channel_out_.emplace_back(c->peer.conn, std::move(c->out));
    c->out.clear();
    return;
  }
  // Straight to the socket when nothing is queued before it (uv_try_write
  // refuses otherwise): a reply written whole costs no write request, and
  // spares libuv the epoll_ctl it makes to stop watching for POLLOUT after
  // a queued write completes (one syscall per reply at 1x1).
  uv_buf_t direct =
      uv_buf_init(c->out.data(), static_cast<unsigned>(c->out.size()));
  int sent = uv_try_write(reinterpret_cast<uv_stream_t*>(&c->pipe), &direct, 1);
  if (sent == static_cast<int>(c->out.size())) {
    c->out.clear();
    return;
  }
  // Otherwise queue the rest. An error (a peer gone) is left to uv_write to
  // report as before: closing here would re-enter WriteOut through
  // CloseConnection and edit unflushed_ while FlushWrites walks it.
  if (sent > 0) c->out.erase(0, static_cast<size_t>(sent));
  WriteReq* w = TakeWriteReq();
  w->data.swap(c->out);  // c->out keeps the spare's (empty) buffer
  uv_buf_t buf =
      uv_buf_init(w->data.data(), static_cast<unsigned>(w->data.size()));
  w->req.data = w;
  int rc = uv_write(&w->req, reinterpret_cast<uv_stream_t*>(&c->pipe), &buf, 1,
                    [](uv_write_t* req, int) {
                      ReturnWriteReq(static_cast<WriteReq*>(req->data));
                    });
  if (rc != 0) {
    ReturnWriteReq(w);
    CloseConnection(c);
  }
}

}  // namespace brake
