// GET /metrics over HTTP (config metrics_listen): the exposition is valid
// Prometheus text, checked with a small parser of the format.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <csignal>
#include <regex>
#include <set>
#include <sstream>
#include <string>

#include "tests/integration/expect.h"
#include "tests/integration/harness.h"

namespace brake::integration {
namespace {

// A free TCP port on 127.0.0.1 (bound and released; good enough for a test).
int FreePort() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
  socklen_t len = sizeof(addr);
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  close(fd);
  return ntohs(addr.sin_port);
}

std::string HttpGet(int port, const std::string& path) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    close(fd);
    return "";
  }
  std::string req = "GET " + path + " HTTP/1.1\r\nHost: x\r\n\r\n";
  (void)!write(fd, req.data(), req.size());
  std::string out;
  char buf[4096];
  ssize_t n;
  while ((n = read(fd, buf, sizeof(buf))) > 0) out.append(buf, n);
  close(fd);
  return out;
}

TEST_CASE("metrics_listen serves valid Prometheus text over HTTP",
          "[integration][metrics]") {
  const int port = FreePort();
  TempDir dir;
  Daemon d(dir.path(),
           json{{"metrics_listen", "127.0.0.1:" + std::to_string(port)}});
  REQUIRE(d.Start());
  Client c = d.Connect();
  AcquireLease(c, "alice", "t1");

  std::string response = HttpGet(port, "/metrics");
  REQUIRE(response.rfind("HTTP/1.1 200 OK\r\n", 0) == 0);
  size_t body_at = response.find("\r\n\r\n");
  REQUIRE(body_at != std::string::npos);
  std::string body = response.substr(body_at + 4);

  // The text format: "# HELP name text", "# TYPE name counter|gauge|...",
  // and samples "name{label="value",...} number"; every sample's family
  // declared by a TYPE line before it.
  const std::regex help(R"(# HELP [a-zA-Z_:][a-zA-Z0-9_:]* .*)");
  const std::regex type(
      R"(# TYPE ([a-zA-Z_:][a-zA-Z0-9_:]*) (counter|gauge|histogram|summary|untyped))");
  const std::regex sample(
      R"(([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[a-zA-Z_][a-zA-Z0-9_]*="[^"]*"(,[a-zA-Z_][a-zA-Z0-9_]*="[^"]*")*\})? (-?[0-9.eE+-]+|NaN|\+Inf|-Inf))");
  const std::regex histogram_part(R"((.*)_(bucket|sum|count))");
  std::set<std::string> families;
  std::set<std::string> histograms;
  std::istringstream lines(body);
  std::string line;
  int samples = 0;
  while (std::getline(lines, line)) {
    INFO("line: " << line);
    std::smatch m;
    if (line.rfind("# HELP", 0) == 0) {
      CHECK(std::regex_match(line, help));
    } else if (line.rfind("# TYPE", 0) == 0) {
      REQUIRE(std::regex_match(line, m, type));
      families.insert(m[1]);
      if (m[2] == "histogram") histograms.insert(m[1]);
    } else {
      REQUIRE(std::regex_match(line, m, sample));
      // A histogram's samples are its family name plus _bucket, _sum or
      // _count.
      std::string family = m[1];
      std::smatch part;
      if (std::regex_match(family, part, histogram_part) &&
          histograms.count(part[1]) == 1) {
        family = part[1];
      }
      CHECK(families.count(family) == 1);
      ++samples;
    }
  }
  CHECK(samples > 10);
  CHECK(MetricValue(body, "brake_acquires_total{result=\"granted\"}") == 1.0);
  CHECK(MetricValue(body, "brake_leases_open") == 1.0);

  CHECK(HttpGet(port, "/nope").rfind("HTTP/1.1 404", 0) == 0);
  CHECK(d.Stop(SIGTERM) == 0);
}

}  // namespace
}  // namespace brake::integration
