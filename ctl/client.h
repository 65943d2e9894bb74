// How brakectl reaches braked: a Transport carries one request line and
// brings back the reply line with the same "id".
//
// The CLI depends on the Transport interface only, so tests substitute a fake
// that checks the request and returns a canned reply. UnixSocketTransport is
// the real one: a blocking client of braked's Unix socket. A transport is
// used by one thread. Failures are Status values with code kUnavailable and a
// message ready for the user ("cannot connect to /p: No such file or
// directory (is braked running?)", "timed out after 10000 ms ...").
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "common/status.h"

namespace brake::ctl {

class Transport {
 public:
  virtual ~Transport() = default;

  // Sends `request_line` (without its newline) and returns the first reply
  // line (without its newline, bytes unchanged) for which IsReplyTo(line, id)
  // holds; other lines are skipped. Fails when the connection breaks or no
  // such line arrives within `timeout_ms`.
  virtual Result<std::string> Exchange(std::string_view request_line,
                                       const nlohmann::json& id,
                                       int64_t timeout_ms) = 0;
};

// Opens a transport to the daemon at `socket_path`; connecting may take at
// most `timeout_ms`.
using Connector = std::function<Result<std::unique_ptr<Transport>>(
    const std::string& socket_path, int64_t timeout_ms)>;

// True when `line` is a JSON object whose "id" equals `id`, or an error reply
// ("ok": false) with no or a null "id": the daemon could not read the id of
// a request it refused (bad_json, line_too_long), and a brakectl connection
// carries a single request, so that error is ours.
bool IsReplyTo(std::string_view line, const nlohmann::json& id);

class UnixSocketTransport final : public Transport {
 public:
  ~UnixSocketTransport() override;
  UnixSocketTransport(const UnixSocketTransport&) = delete;
  UnixSocketTransport& operator=(const UnixSocketTransport&) = delete;

  // Connects to `socket_path`.
  static Result<std::unique_ptr<Transport>> Connect(
      const std::string& socket_path, int64_t timeout_ms);

  Result<std::string> Exchange(std::string_view request_line,
                               const nlohmann::json& id,
                               int64_t timeout_ms) override;

 private:
  UnixSocketTransport(int fd, std::string path)
      : fd_(fd), path_(std::move(path)) {}

  int fd_;
  std::string path_;
  std::string buffer_;  // received bytes not yet returned
};

}  // namespace brake::ctl
