// SseReader: a server-sent event stream cut into events as its bytes arrive.
//
// Events end at a blank line (LF or CRLF). For each whole event the reader
// hands over its raw bytes (to pass on unchanged), its `event:` name and its
// `data:` lines joined by '\n'; comments (':') and other fields are kept in
// the raw bytes only. An event larger than the reader's bound is an error:
// the stream is treated as broken. Pure.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>

namespace brake::front {

struct SseEvent {
  std::string_view raw;   // the event's bytes, its blank line included
  std::string_view name;  // "" when it names none ("message")
  std::string_view data;
};

class SseReader {
 public:
  explicit SseReader(size_t max_event_bytes = 4 << 20)
      : max_event_bytes_(max_event_bytes) {}

  // Feeds `bytes`; calls `on_event` for each event they complete, in order.
  // False once an event outgrew the bound (nothing more is read).
  bool Feed(std::string_view bytes,
            const std::function<void(const SseEvent&)>& on_event);
  // Bytes of an event not yet complete.
  size_t pending() const { return buf_.size() - start_; }

 private:
  // Parses the event in buf_[start_, end) (blank line included).
  void Emit(size_t end, const std::function<void(const SseEvent&)>& on_event);

  std::string buf_;
  size_t start_ = 0;  // where the incomplete event begins in buf_
  size_t scan_ = 0;   // how far buf_ was searched for a blank line
  std::string data_;  // scratch: an event's data lines, joined
  size_t max_event_bytes_;
  bool failed_ = false;
};

}  // namespace brake::front
