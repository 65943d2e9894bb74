// FastOps: acquire, commit and cancel answered without nlohmann.
//
// Dispatcher::Handle offers every line here first. A line that
// ScanFastRequest accepts, that passes the ops table's validation (the same
// FieldSpec rows, ValidateName, MayActAs) and that needs nothing the general
// path does differently (storage down, subjects to load, wait_ms > 0) is
// decided through the same Decider calls as ops.cc's handlers and answered
// with fast_reply.h's writers. Anything else is declined before any state
// changes, and the general path answers it as it always has, so the fast path
// never words an error of validation; it only relays the Decider's own
// errors, through the same reply builder. Loop thread only.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "daemon/dispatcher.h"

namespace brake {

struct FastOps {
  // True when `line` was answered (one line appended to `out`); false,
  // with nothing changed or appended, when the general path must take it.
  static bool Handle(Dispatcher& d, const Peer& peer, std::string_view line,
                     int64_t now_us, std::string* out);

 private:
  static bool Acquire(Dispatcher& d, const Peer& peer, int64_t now_us,
                      std::string* out);
  static bool Commit(Dispatcher& d, const Peer& peer, int64_t now_us,
                     std::string* out);
  static bool Cancel(Dispatcher& d, const Peer& peer, int64_t now_us,
                     std::string* out);
};

}  // namespace brake
