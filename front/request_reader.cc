#include "front/request_reader.h"

#include <http_parser.h>

#include <cctype>
#include <cstring>

namespace brake::front {
namespace {

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& ch : out)
    ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return out;
}

}  // namespace

std::string_view HttpRequest::header(std::string_view name) const {
  for (const auto& [k, v] : headers)
    if (k == name) return v;
  return {};
}

struct RequestReader::Hooks {
  static RequestReader* Of(http_parser* p) {
    return static_cast<RequestReader*>(p->data);
  }
  static bool HeadTooLarge(RequestReader* r, size_t more) {
    r->head_bytes_ += static_cast<int64_t>(more);
    if (r->head_bytes_ <= r->max_header_bytes_) return false;
    r->Fail(431, "request head larger than max_header_bytes (" +
                     std::to_string(r->max_header_bytes_) + ")");
    return true;
  }
  static void PushHeader(RequestReader* r) {
    if (!r->in_value_ && r->field_.empty()) return;
    r->request_.headers.emplace_back(Lower(r->field_), r->value_);
    r->field_.clear();
    r->value_.clear();
    r->in_value_ = false;
  }
  static int OnBegin(http_parser* p) {
    RequestReader* r = Of(p);
    r->request_ = HttpRequest{};
    r->head_bytes_ = 0;
    r->field_.clear();
    r->value_.clear();
    r->in_value_ = false;
    r->progress_ = Progress::kHead;
    return 0;
  }
  static int OnUrl(http_parser* p, const char* at, size_t n) {
    RequestReader* r = Of(p);
    if (HeadTooLarge(r, n)) return 1;
    r->request_.target.append(at, n);
    return 0;
  }
  static int OnField(http_parser* p, const char* at, size_t n) {
    RequestReader* r = Of(p);
    if (HeadTooLarge(r, n)) return 1;
    if (r->in_value_) PushHeader(r);
    r->field_.append(at, n);
    return 0;
  }
  static int OnValue(http_parser* p, const char* at, size_t n) {
    RequestReader* r = Of(p);
    if (HeadTooLarge(r, n)) return 1;
    r->value_.append(at, n);
    r->in_value_ = true;
    return 0;
  }
  static int OnHeadersComplete(http_parser* p) {
    RequestReader* r = Of(p);
    PushHeader(r);
    HttpRequest& q = r->request_;
    q.method = http_method_str(static_cast<http_method>(p->method));
    q.keep_alive = http_should_keep_alive(p) != 0;
    q.http10 = p->http_major == 1 && p->http_minor == 0;
    if ((p->flags & F_CONTENTLENGTH) &&
        p->content_length > static_cast<uint64_t>(r->max_body_bytes_)) {
      r->Fail(413, "request body larger than max_body_bytes (" +
                       std::to_string(r->max_body_bytes_) + ")");
      return -1;  // an error (1 and 2 would mean: no body follows)
    }
    q.expect_continue = !q.http10 && Lower(q.header("expect")) == "100-continue";
    r->progress_ = Progress::kBody;
    return 0;
  }
  static int OnBody(http_parser* p, const char* at, size_t n) {
    RequestReader* r = Of(p);
    if (static_cast<int64_t>(r->request_.body.size() + n) > r->max_body_bytes_) {
      r->Fail(413, "request body larger than max_body_bytes (" +
                       std::to_string(r->max_body_bytes_) + ")");
      return 1;
    }
    r->request_.body.append(at, n);
    return 0;
  }
  static int OnComplete(http_parser* p) {
    if (Of(p)->progress_ == Progress::kError) return 1;
    Of(p)->progress_ = Progress::kRequest;
    http_parser_pause(p, 1);  // what follows waits until this one is taken
    return 0;
  }
};

namespace {

const http_parser_settings kSettings = [] {
  http_parser_settings s;
  std::memset(&s, 0, sizeof(s));
  s.on_message_begin = &RequestReader::Hooks::OnBegin;
  s.on_url = &RequestReader::Hooks::OnUrl;
  s.on_header_field = &RequestReader::Hooks::OnField;
  s.on_header_value = &RequestReader::Hooks::OnValue;
  s.on_headers_complete = &RequestReader::Hooks::OnHeadersComplete;
  s.on_body = &RequestReader::Hooks::OnBody;
  s.on_message_complete = &RequestReader::Hooks::OnComplete;
  return s;
}();

}  // namespace

RequestReader::RequestReader(int64_t max_header_bytes, int64_t max_body_bytes)
    : max_header_bytes_(max_header_bytes),
      max_body_bytes_(max_body_bytes),
      parser_(new http_parser) {
  http_parser_init(parser_, HTTP_REQUEST);
  parser_->data = this;
}

RequestReader::~RequestReader() { delete parser_; }

void RequestReader::Fail(int status, std::string message) {
  if (progress_ == Progress::kError) return;
  progress_ = Progress::kError;
  error_status_ = status;
  error_message_ = std::move(message);
  held_.clear();
}

RequestReader::Progress RequestReader::Feed(std::string_view data) {
  if (progress_ == Progress::kError || progress_ == Progress::kRequest) {
    if (progress_ == Progress::kRequest) held_.append(data);
    return progress_;
  }
  std::string_view bytes = data;
  std::string joined;
  if (!held_.empty()) {
    joined = std::move(held_);
    held_.clear();
    joined.append(data);
    bytes = joined;
  }
  if (bytes.empty()) return progress_;
  if (HTTP_PARSER_ERRNO(parser_) == HPE_PAUSED) http_parser_pause(parser_, 0);
  const size_t parsed =
      http_parser_execute(parser_, &kSettings, bytes.data(), bytes.size());
  if (progress_ == Progress::kError) return progress_;
  const auto err = HTTP_PARSER_ERRNO(parser_);
  if (err != HPE_OK && err != HPE_PAUSED) {
    Fail(400, std::string("malformed HTTP: ") + http_errno_name(err) + " (" +
                  http_errno_description(err) + ")");
    return progress_;
  }
  if (parser_->upgrade) {
    Fail(400, "protocol upgrades are not served");
    return progress_;
  }
  if (progress_ == Progress::kRequest) held_.assign(bytes.substr(parsed));
  return progress_;
}

HttpRequest RequestReader::Take() {
  HttpRequest out = std::move(request_);
  request_ = HttpRequest{};
  progress_ = Progress::kIdle;
  return out;
}

}  // namespace brake::front
