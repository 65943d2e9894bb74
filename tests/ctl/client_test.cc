// The Unix socket client against a tiny in-test server.
#include "ctl/client.h"

#include <stdlib.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstring>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>

namespace brake::ctl {
namespace {

using nlohmann::json;

TEST_CASE("replies are matched by id", "[ctl]") {
  CHECK(IsReplyTo(R"({"id":1,"ok":true})", json(1)));
  CHECK(IsReplyTo(R"({"ok":true,"id":"a"})", json("a")));
  CHECK_FALSE(IsReplyTo(R"({"id":2,"ok":true})", json(1)));
  CHECK_FALSE(IsReplyTo(R"({"id":"1","ok":true})", json(1)));
  CHECK_FALSE(IsReplyTo(R"({"ok":true})", json(1)));
  // An error the daemon could not attach an id to is ours.
  CHECK(IsReplyTo(R"({"ok":false,"error":{"code":"bad_json"}})", json(1)));
  CHECK(IsReplyTo(R"({"id":null,"ok":false})", json(1)));
  CHECK_FALSE(IsReplyTo(R"({"id":2,"ok":false})", json(1)));
  CHECK_FALSE(IsReplyTo("garbage", json(1)));
  CHECK_FALSE(IsReplyTo("[1]", json(1)));
  CHECK_FALSE(IsReplyTo("", json(1)));
}

// A listening socket in a fresh temporary directory; `serve` runs on a
// thread with the accepted connection.
class TestServer {
 public:
  explicit TestServer(std::function<void(int fd)> serve) {
    char dir_template[] = "/tmp/brakectl-test-XXXXXX";
    dir_ = ::mkdtemp(dir_template);
    path_ = dir_ + "/s.sock";
    listen_fd_ = ::socket(AF_UNIX, SOCK_STREAM, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::strncpy(addr.sun_path, path_.c_str(), sizeof addr.sun_path - 1);
    REQUIRE(::bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr),
                   sizeof addr) == 0);
    REQUIRE(::listen(listen_fd_, 4) == 0);
    thread_ = std::thread([this, serve] {
      int fd = ::accept(listen_fd_, nullptr, nullptr);
      if (fd >= 0) {
        serve(fd);
        ::close(fd);
      }
    });
  }
  ~TestServer() {
    thread_.join();
    ::close(listen_fd_);
    ::unlink(path_.c_str());
    ::rmdir(dir_.c_str());
  }
  const std::string& path() const { return path_; }

 private:
  std::string dir_, path_;
  int listen_fd_ = -1;
  std::thread thread_;
};

std::string ReadLine(int fd) {
  std::string line;
  char c;
  while (::read(fd, &c, 1) == 1 && c != '\n') line += c;
  return line;
}

void Write(int fd, const std::string& s) {
  REQUIRE(::write(fd, s.data(), s.size()) == static_cast<ssize_t>(s.size()));
}

TEST_CASE("the client skips other lines and returns its reply unchanged",
          "[ctl]") {
  std::string received;
  {
    TestServer server([&](int fd) {
      received = ReadLine(fd);
      Write(fd, "{\"id\":99,\"ok\":true}\nnot json\n{\"id\":1, \"ok\"");
      Write(fd, ":true}\n{\"id\":1,\"ok\":true,\"late\":1}\n");
    });
    Result<std::unique_ptr<Transport>> t =
        UnixSocketTransport::Connect(server.path(), 1000);
    REQUIRE(t.ok());
    Result<std::string> reply =
        (*t)->Exchange(R"({"id":1,"op":"ping"})", json(1), 5000);
    REQUIRE(reply.ok());
    CHECK(*reply == "{\"id\":1, \"ok\":true}");
  }
  CHECK(received == R"({"id":1,"op":"ping"})");
}

TEST_CASE("a daemon that hangs up without replying is an error", "[ctl]") {
  TestServer server([](int fd) { ReadLine(fd); });
  auto t = UnixSocketTransport::Connect(server.path(), 1000);
  REQUIRE(t.ok());
  auto reply = (*t)->Exchange(R"({"id":1,"op":"ping"})", json(1), 5000);
  REQUIRE_FALSE(reply.ok());
  CHECK_THAT(reply.status().message(),
             Catch::Contains("closed the connection without replying"));
}

TEST_CASE("a daemon that never replies times out", "[ctl]") {
  int hold[2];
  REQUIRE(::pipe(hold) == 0);
  {
    // The server waits until the client has given up, then closes.
    TestServer server([&](int) {
      char c;
      (void)!::read(hold[0], &c, 1);
    });
    auto t = UnixSocketTransport::Connect(server.path(), 1000);
    REQUIRE(t.ok());
    auto reply = (*t)->Exchange(R"({"id":1,"op":"ping"})", json(1), 30);
    REQUIRE_FALSE(reply.ok());
    CHECK_THAT(reply.status().message(),
               Catch::StartsWith("timed out after 30 ms"));
    Write(hold[1], "x");
  }
  ::close(hold[0]);
  ::close(hold[1]);
}

TEST_CASE("connection failures say what and where", "[ctl]") {
  auto missing =
      UnixSocketTransport::Connect("/nonexistent-dir/braked.sock", 100);
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.status().message() ==
        "cannot connect to /nonexistent-dir/braked.sock: No such file or "
        "directory (is braked running?)");
  auto too_long =
      UnixSocketTransport::Connect("/" + std::string(200, 'x'), 100);
  REQUIRE_FALSE(too_long.ok());
  CHECK_THAT(too_long.status().message(),
             Catch::Contains("socket path must be"));
}

}  // namespace
}  // namespace brake::ctl
