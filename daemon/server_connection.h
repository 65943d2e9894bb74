// Server::Connection: one client connection's state, shared by the server's
// files (server.cc: accepting, reading, closing; server_replies.cc: the
// reply gate and writing). Internal to daemon/.
#pragma once

#include <uv.h>

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "daemon/held_replies.h"
#include "daemon/server.h"

namespace brake {

struct Server::Connection {
  uv_pipe_t pipe;
  Server* server = nullptr;
  Peer peer;
  std::string in;  // an incomplete line
  HeldReplies held;  // replies waiting for their batch to commit
  bool closing = false;
  bool close_after_write = false;
  bool paused = false;  // a deferred request is being answered
  bool throttled = false;  // read its share of this loop turn
  std::string out;      // replies not yet handed to uv_write
  int64_t partial_since_us = 0;  // when the incomplete line in `in` began
  int64_t closing_since_us = 0;  // when a graceful close began
  // A channel (Server::OpenChannel) has no pipe: its replies go here.
  std::function<void(std::string_view)> on_reply;
  bool channel() const { return static_cast<bool>(on_reply); }
};

}  // namespace brake
