// Server::Connection: one client connection's state, shared by the server's
// files (server.cc: accepting, reading, closing; server_replies.cc: the
// reply gate and writing). Internal to daemon/.
#pragma once

#include <uv.h>

#include <cstdint>
#include <deque>
#include <string>

#include "daemon/server.h"

namespace brake {

struct Server::Connection {
  uv_pipe_t pipe;
  Server* server = nullptr;
  Peer peer;
  std::string in;  // an incomplete line
  // Replies waiting for their batch to commit, in order: (seq, lines).
  struct Held {
    uint64_t seq;      // the batch these replies wait for
    bool must_commit;  // their requests changed state: fail if it fails
    std::string data;
  };
  std::deque<Held> held;
  size_t held_bytes = 0;
  bool closing = false;
  bool close_after_write = false;
  bool paused = false;  // a deferred request is being answered
  bool throttled = false;  // read its share of this loop turn
  std::string out;      // replies not yet handed to uv_write
  int64_t partial_since_us = 0;  // when the incomplete line in `in` began
  int64_t closing_since_us = 0;  // when a graceful close began
};

}  // namespace brake
