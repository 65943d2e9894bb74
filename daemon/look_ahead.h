// LookAhead: tells the engine of the lines of one read before they are
// handled, so that their subjects are in cache by their turn.
//
// With more subjects than the caches hold, a decision mostly waits on
// memory. Before each whole line of a read is handled, the task of the line
// Engine::kPrefetchAhead lines on is announced (Dispatcher::Prefetch ->
// Engine::Prefetch); once no whole line is left to announce, "" is
// announced instead, so that the lines still to come are each decided
// kPrefetchAhead announcements after their own, as Engine::AnnouncedTask
// expects. Off while the subjects fit the caches (prefetch_pays). Loop
// thread only; valid while the read's bytes are.
#pragma once

#include <cstddef>
#include <cstring>
#include <string_view>

#include "daemon/dispatcher.h"

namespace brake {

class LookAhead {
 public:
  LookAhead(Dispatcher* dispatcher, const char* data, size_t n)
      : dispatcher_(dispatcher),
        on_(dispatcher->prefetch_pays()),
        data_(data),
        n_(n) {}

  // Before handling each whole line of the read, in order.
  void BeforeLine() {
    while (on_ && pending_ <= Engine::kPrefetchAhead) {
      const char* end =
          next_ < n_ ? static_cast<const char*>(
                           std::memchr(data_ + next_, '\n', n_ - next_))
                     : nullptr;
      if (end == nullptr) {
        dispatcher_->Prefetch({});
        next_ = n_;
      } else {
        dispatcher_->Prefetch(std::string_view(
            data_ + next_, static_cast<size_t>(end - (data_ + next_))));
        next_ = static_cast<size_t>(end - data_) + 1;
      }
      ++pending_;
    }
    if (pending_ > 0) --pending_;
  }

 private:
  Dispatcher* dispatcher_;
  const bool on_;
  const char* data_;
  size_t n_;
  size_t next_ = 0;     // where the next line to announce starts
  size_t pending_ = 0;  // announcements made minus lines handled
};

}  // namespace brake
