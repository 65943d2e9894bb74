#include "front/request_reader.h"

#include <catch2/catch.hpp>
#include <string>

namespace brake::front {
namespace {

using Progress = RequestReader::Progress;

TEST_CASE("request reader: one request whole, the next held behind it",
          "[front]") {
  RequestReader r(1024, 1024);
  const std::string two =
      "POST /v1/chat/completions?x=1 HTTP/1.1\r\nHost: a\r\nAuthorization: "
      "Bearer k\r\nContent-Length: 2\r\n\r\n{}GET /v1/models HTTP/1.1\r\n\r\n";
  REQUIRE(r.Feed(two) == Progress::kRequest);
  CHECK(r.held() > 0);
  HttpRequest first = r.Take();
  CHECK(first.method == "POST");
  CHECK(first.target == "/v1/chat/completions?x=1");
  CHECK(first.header("authorization") == "Bearer k");  // names lower-cased
  CHECK(first.body == "{}");
  CHECK(first.keep_alive);
  REQUIRE(r.Feed({}) == Progress::kRequest);
  CHECK(r.Take().method == "GET");
  CHECK(r.Feed({}) == Progress::kIdle);
}

TEST_CASE("request reader: progress byte by byte, chunked bodies, 100-continue",
          "[front]") {
  RequestReader r(1024, 1024);
  const std::string req =
      "POST /v1/messages HTTP/1.1\r\nTransfer-Encoding: chunked\r\nExpect: "
      "100-continue\r\n\r\n3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n";
  Progress p = Progress::kIdle;
  bool saw_head = false, saw_body = false;
  for (char ch : req) {
    p = r.Feed(std::string(1, ch));
    saw_head |= p == Progress::kHead;
    if (p == Progress::kBody && !saw_body) {
      saw_body = true;
      CHECK(r.current().expect_continue);
    }
  }
  CHECK(saw_head);
  CHECK(saw_body);
  REQUIRE(p == Progress::kRequest);
  CHECK(r.Take().body == "abcde");
}

TEST_CASE("request reader: bounds and malformed bytes end the reading",
          "[front]") {
  RequestReader head(64, 1024);
  CHECK(head.Feed("GET /" + std::string(100, 'a') + " HTTP/1.1\r\n\r\n") ==
        Progress::kError);
  CHECK(head.error_status() == 431);
  RequestReader declared(1024, 10);
  CHECK(declared.Feed("POST / HTTP/1.1\r\nContent-Length: 11\r\n\r\n") ==
        Progress::kError);
  CHECK(declared.error_status() == 413);
  RequestReader chunked(1024, 10);
  CHECK(chunked.Feed("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"
                     "b\r\n0123456789a\r\n") == Progress::kError);
  CHECK(chunked.error_status() == 413);
  RequestReader bad(1024, 1024);
  CHECK(bad.Feed("NOT HTTP\r\n\r\n") == Progress::kError);
  CHECK(bad.error_status() == 400);
  CHECK(bad.error_message().find("malformed HTTP") != std::string::npos);
  CHECK(bad.Feed("GET / HTTP/1.1\r\n\r\n") == Progress::kError);
  RequestReader old(1024, 1024);
  REQUIRE(old.Feed("GET / HTTP/1.0\r\n\r\n") == Progress::kRequest);
  HttpRequest r = old.Take();
  CHECK(r.http10);
  CHECK_FALSE(r.keep_alive);
}

}  // namespace
}  // namespace brake::front
