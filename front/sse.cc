#include "front/sse.h"

namespace brake::front {

bool SseReader::Feed(std::string_view bytes,
                     const std::function<void(const SseEvent&)>& on_event) {
  if (failed_) return false;
  buf_.append(bytes);
  // A blank line: "\n\n", or "\n\r\n" (CRLF line ends).
  size_t i = scan_ > start_ ? scan_ : start_;
  while (i < buf_.size()) {
    if (buf_[i] != '\n') {
      ++i;
      continue;
    }
    size_t next = i + 1;
    if (next < buf_.size() && buf_[next] == '\r') ++next;
    if (next >= buf_.size()) break;  // the next line is not here yet
    if (buf_[next] == '\n') {
      Emit(next + 1, on_event);
      i = start_;
    } else {
      i = next;
    }
  }
  scan_ = i;
  if (start_ == buf_.size()) {
    buf_.clear();
    start_ = scan_ = 0;
  } else if (start_ > 0 && start_ * 2 > buf_.size()) {
    buf_.erase(0, start_);
    scan_ -= start_;
    start_ = 0;
  }
  if (pending() > max_event_bytes_) {
    failed_ = true;
    return false;
  }
  return true;
}

void SseReader::Emit(size_t end,
                     const std::function<void(const SseEvent&)>& on_event) {
  SseEvent e;
  e.raw = std::string_view(buf_).substr(start_, end - start_);
  std::string_view single;  // the one data line, when there is one
  int data_lines = 0;
  data_.clear();
  size_t pos = 0;
  while (pos < e.raw.size()) {
    size_t nl = e.raw.find('\n', pos);
    if (nl == std::string_view::npos) nl = e.raw.size();
    std::string_view line = e.raw.substr(pos, nl - pos);
    pos = nl + 1;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty() || line.front() == ':') continue;
    size_t colon = line.find(':');
    std::string_view field = line.substr(0, colon);
    std::string_view value;
    if (colon != std::string_view::npos) {
      value = line.substr(colon + 1);
      if (!value.empty() && value.front() == ' ') value.remove_prefix(1);
    }
    if (field == "event") {
      e.name = value;
    } else if (field == "data") {
      if (data_lines++ > 0) data_ += '\n';
      data_ += value;
      single = value;
    }
  }
  e.data = data_lines == 1 ? single : std::string_view(data_);
  start_ = end;
  on_event(e);
}

}  // namespace brake::front
