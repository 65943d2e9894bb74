// RequestReader: the HTTP/1.1 requests in the bytes of one connection, as
// http-parser (Debian's libhttp-parser) reads them, within bounds: the head
// (request line and headers) at most max_header_bytes (431 past it), the
// body at most max_body_bytes (413), whether declared by Content-Length or
// sent chunked. Malformed HTTP is a 400 naming what http-parser found. One
// request at a time: bytes behind a whole request wait until it is taken.
// Pure: bytes in, requests out; no IO, no clock.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "front/answers.h"

struct http_parser;

namespace brake::front {

struct HttpRequest {
  std::string method;
  std::string target;  // path and query
  Headers headers;     // names lower-cased
  std::string body;
  bool keep_alive = true;
  bool http10 = false;
  bool expect_continue = false;  // Expect: 100-continue
  // A header's value by its lower-case name; "" when absent.
  std::string_view header(std::string_view name) const;
};

class RequestReader {
 public:
  RequestReader(int64_t max_header_bytes, int64_t max_body_bytes);
  ~RequestReader();
  RequestReader(const RequestReader&) = delete;
  RequestReader& operator=(const RequestReader&) = delete;

  enum class Progress {
    kIdle,     // no request begun
    kHead,     // its head is arriving
    kBody,     // its head is whole, its body arriving
    kRequest,  // a whole request: Take it
    kError,    // error_status(), error_message(); nothing more is read
  };
  // Reads `data` after what is held; Feed("") goes on with the held bytes
  // (those behind a request just taken).
  Progress Feed(std::string_view data);
  HttpRequest Take();
  // The request being read (its head, once Feed said kBody).
  const HttpRequest& current() const { return request_; }
  int error_status() const { return error_status_; }
  const std::string& error_message() const { return error_message_; }
  // Bytes held: read but not yet parsed (behind a whole request).
  size_t held() const { return held_.size(); }

  struct Hooks;  // http-parser's callbacks (request_reader.cc)

 private:
  void Fail(int status, std::string message);

  int64_t max_header_bytes_;
  int64_t max_body_bytes_;
  http_parser* parser_;
  HttpRequest request_;
  Progress progress_ = Progress::kIdle;
  std::string held_;
  std::string field_, value_;  // the header being read
  bool in_value_ = false;
  int64_t head_bytes_ = 0;
  int error_status_ = 0;
  std::string error_message_;
};

}  // namespace brake::front
