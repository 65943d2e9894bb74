// Server: the Unix socket, connections, line framing and ordered replies.
//
// Accepts connections on a Unix stream socket, splits input into lines
// (at most max_line_bytes; longer gets line_too_long and the connection is
// closed), hands each line to the Dispatcher with the peer's credentials
// (SO_PEERCRED) and writes the replies in request order.
//
// Durability gate: every reply is tagged with the storage batch it depends
// on (Gate::SeqForReply). A reply is written only once that batch has
// committed (Release), so a client never sees an answer whose state could be
// lost; replies behind it on the same connection wait too, keeping order.
// If the batch fails (Fail), its replies become `unavailable` errors.
//
// Loop thread only. Owns every connection handle; Close() closes them all
// and calls back once the last close callback has run.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include <uv.h>

#include "common/status.h"
#include "daemon/config.h"
#include "daemon/dispatcher.h"

namespace brake {

class Server {
 public:
  struct Gate {
    virtual ~Gate() = default;
    // The batch a reply produced now must wait for (0: none).
    virtual uint64_t SeqForReply() = 0;
    // Whether the state changed since the previous reply was tagged: such a
    // reply must not be sent if its batch fails; others only observed it.
    virtual bool ReplyChangedState() = 0;
    // The daemon's clock, sampled once per request.
    virtual int64_t NowUs() = 0;
    // A connection is gone (its waiters must go too).
    virtual void OnConnectionClosed(uint64_t conn) = 0;
  };

  Server(uv_loop_t* loop, Dispatcher* dispatcher, const Config* config,
         ServerStats* stats, Gate* gate);
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // Binds and listens on `path` with `mode`. A stale socket file (nobody
  // answers on it) is replaced; a live one is not: kUnavailable.
  Status Listen(const std::string& path, int mode);
  // Queues a reply line for connection `conn` (if it is still open), behind
  // its earlier replies and gated like them.
  void Deliver(uint64_t conn, std::string line);
  // Answers a deferred request of `conn` with `line` and resumes reading
  // the requests behind it.
  void Resume(uint64_t conn, std::string line);
  // Handles `request` of a deferred `conn` again (what it waited for is
  // there now), then resumes reading behind it.
  void Redo(uint64_t conn, std::string request);
  // An in-process client (the HTTP front): lines sent on a channel are
  // handled as a socket connection's are (in order, deferred and gated by
  // the durability of their batch alike) and its replies go to `on_reply`,
  // a line at a time, from FlushWrites: never from inside SendLine.
  uint64_t OpenChannel(const Peer& peer,
                       std::function<void(std::string_view)> on_reply);
  void SendLine(uint64_t conn, std::string_view line);
  // Closes a channel; its unanswered requests are dropped (a waiter's
  // with it), as for a socket connection that closes.
  void CloseChannel(uint64_t conn);
  // Lines were sent on channels since FlushWrites began: their replies
  // need another loop turn (the daemon keeps the loop from sleeping).
  bool channel_work_pending() const { return channel_lines_ > 0; }
  // Writes every held reply whose batch is <= `seq`.
  void Release(uint64_t seq);
  // Turns every held reply whose batch is <= `seq` into an `unavailable`
  // error (same id) and writes it.
  void Fail(uint64_t seq, const std::string& message);
  // Closes connections that have held an incomplete line longer than
  // partial_line_timeout_ms (a slow-loris client), after an error line, and
  // drops closed connections whose clients have not taken their last
  // replies within that time either. Also runs while stopping, so a client
  // that never reads cannot hold up shutdown.
  void ExpireSlowClients(int64_t now_us);
  // Writes every connection's gathered replies (once per loop turn).
  void FlushWrites();
  // Lets connections that read their share of the last turn read again
  // (once per loop turn).
  void ResumeReading();
  // Stops accepting and reading; connections stay open for their replies.
  void StopAccepting();
  // Closes every handle (after queued writes), then `on_closed`.
  void Close(std::function<void()> on_closed);

  size_t connection_count() const { return connections_.size(); }

 private:
  struct Connection;
  static void OnConnection(uv_stream_t* server, int status);
  static void OnAlloc(uv_handle_t* handle, size_t suggested, uv_buf_t* buf);
  static void OnRead(uv_stream_t* stream, ssize_t nread, const uv_buf_t* buf);
  static void OnClosed(uv_handle_t* handle);
  // How many bytes a connection may read now (see kTurnReadBudget).
  size_t ReadShare() const;
  void HandleLine(Connection* c, std::string_view line);
  // After a deferred request: handles the lines held behind it and reads on.
  void ReadOn(Connection* c);
  // Handles the complete lines in data[0, n), keeping the rest as `in`.
  void Consume(Connection* c, const char* data, size_t n);
  // Sends a reply produced now, once the batch it depends on has committed
  // (the gate's tag; at once when it has).
  // Both copy `data`: a reply answered at once is appended to the
  // connection's reused output buffer, so it allocates nothing.
  void QueueReply(Connection* c, std::string_view data);
  void Flush(Connection* c);
  void FlushHolding();
  // Whether `c` may queue `more` bytes under max_output_bytes; if not, it
  // is dropped as a slow reader.
  bool Admit(Connection* c, size_t more);
  void Write(Connection* c, std::string_view data);
  void WriteOut(Connection* c);
  // Bytes of replies `c` holds: waiting for their batch, gathered, and
  // queued in libuv; max_output_bytes bounds them.
  static size_t QueuedBytes(const Connection* c);
  // Logs and aborts a connection over max_output_bytes.
  void DropSlowReader(Connection* c, size_t queued);
  // Forgets `c` as a live connection (its id, stats, waiters, reading).
  void Detach(Connection* c);
  // Closes after the queued writes have gone out.
  void CloseConnection(Connection* c);
  // Closes now, discarding whatever is queued for the client.
  void AbortConnection(Connection* c);
  void MaybeClosed();

  uv_loop_t* loop_;
  Dispatcher* dispatcher_;
  const Config* config_;
  ServerStats* stats_;
  Gate* gate_;
  uv_pipe_t listener_;
  bool listening_ = false;
  bool listener_closed_ = true;
  std::string path_;
  std::unordered_set<Connection*> connections_;
  std::unordered_map<uint64_t, Connection*> by_id_;
  uint64_t next_conn_id_ = 1;
  std::vector<Connection*> holding_;  // each connection holding replies, once
  std::vector<Connection*> releasing_;  // Release's scratch, keeps capacity
  std::function<void()> on_closed_;
  bool closing_ = false;
  uint64_t released_seq_ = 0;
  std::string reply_;  // scratch buffer for one reply
  std::vector<Connection*> unflushed_;  // connections with `out` pending
  std::vector<Connection*> throttled_;  // stopped reading until next turn
  size_t last_turn_readers_ = 0;  // connections that filled their share
  // Channel replies gathered by WriteOut, delivered by FlushWrites.
  std::vector<std::pair<uint64_t, std::string>> channel_out_;
  std::vector<std::pair<uint64_t, std::string>> delivering_;
  std::string channel_line_;  // SendLine's scratch: the line and its '\n'
  size_t channel_lines_ = 0;
};

}  // namespace brake
