// Fuzz target: the front's RequestReader (http-parser within brake's bounds)
// on one connection's arbitrary bytes.
//
// Byte 0 picks where the bytes are cut into reads (how a peer's writes
// reach recv); the rest is what a client sent. Checked on every input:
//   - the requests read, and whether an error ends the reading, are the same
//     whether the bytes come whole or cut into those reads (which error may
//     differ: an oversized head that is also malformed is found too large or
//     malformed first depending on where the reads end, 431 or 400);
//   - every request's head and body are within the bounds; header names
//     are lower case; an error is a 400, 413 or 431 with a message;
//   - nothing is read after an error.
#include <cctype>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "front/request_reader.h"
#include "tests/fuzz/fuzz_check.h"

namespace {

using brake::front::HttpRequest;
using brake::front::RequestReader;

constexpr int64_t kMaxHead = 512;
constexpr int64_t kMaxBody = 1024;

struct Outcome {
  std::vector<std::string> requests;  // each flattened
  int error = 0;
};

std::string Flatten(const HttpRequest& r) {
  std::string out = r.method + " " + r.target + "\n";
  for (const auto& [k, v] : r.headers) out += k + ": " + v + "\n";
  out += r.keep_alive ? "keep\n" : "close\n";
  out += r.body;
  return out;
}

void Check(const HttpRequest& r) {
  FUZZ_CHECK(static_cast<int64_t>(r.body.size()) <= kMaxBody, "body past its bound");
  FUZZ_CHECK(static_cast<int64_t>(r.target.size()) <= kMaxHead, "target past the head's bound");
  int64_t head = static_cast<int64_t>(r.target.size());
  for (const auto& [k, v] : r.headers) {
    head += static_cast<int64_t>(k.size() + v.size());
    for (char ch : k)
      FUZZ_CHECK(!std::isupper(static_cast<unsigned char>(ch)), "a header name not lower-cased: " + k);
  }
  FUZZ_CHECK(head <= kMaxHead, "head past its bound");
  FUZZ_CHECK(!r.method.empty(), "a request without a method");
}

Outcome Read(std::string_view bytes, size_t step) {
  Outcome out;
  RequestReader reader(kMaxHead, kMaxBody);
  size_t pos = 0;
  while (true) {
    std::string_view piece;
    if (pos < bytes.size()) {
      piece = bytes.substr(pos, step);
      pos += piece.size();
    }
    auto p = reader.Feed(piece);
    while (p == RequestReader::Progress::kRequest) {
      HttpRequest r = reader.Take();
      Check(r);
      out.requests.push_back(Flatten(r));
      if (out.requests.size() > 64) return out;
      p = reader.Feed({});
    }
    if (p == RequestReader::Progress::kError) {
      const int s = reader.error_status();
      FUZZ_CHECK(s == 400 || s == 413 || s == 431, "error status " + std::to_string(s));
      FUZZ_CHECK(!reader.error_message().empty(), "an error without a message");
      FUZZ_CHECK(reader.Feed("GET / HTTP/1.1\r\n\r\n") == RequestReader::Progress::kError,
                 "read on after an error");
      out.error = s;
      return out;
    }
    if (pos >= bytes.size()) return out;
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const size_t step = 1 + data[0] % 17;
  const std::string_view bytes(reinterpret_cast<const char*>(data) + 1, size - 1);
  const Outcome whole = Read(bytes, bytes.size() + 1);
  const Outcome cut = Read(bytes, step);
  if (whole.requests.size() <= 64 && cut.requests.size() <= 64) {
    FUZZ_CHECK(whole.requests == cut.requests, "requests differ when the bytes are cut");
    const bool same = whole.error == cut.error ||
                      (whole.error + cut.error == 400 + 431 && whole.error != 0 &&
                       cut.error != 0);
    FUZZ_CHECK(same, "errors differ when the bytes are cut: " +
                         std::to_string(whole.error) + " vs " + std::to_string(cut.error));
  }
  return 0;
}
