// FrontMetrics: what the front counts, per route and upstream, as
// Prometheus text (brake_front_*, docs/OPERATIONS.md). Pure.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <tuple>

namespace brake::front {

class FrontMetrics {
 public:
  void Request(const std::string& route, const std::string& upstream);
  void Denial(const std::string& route, const std::string& reason);
  void Upstream(const std::string& upstream, int status, double seconds);
  void Settled(const std::string& upstream, int64_t input, int64_t output,
               bool reported);
  // A stream cut short: by "client" (gone) or "upstream" (broke).
  void StreamCut(const std::string& upstream, const std::string& by);
  void Error(const std::string& route, int status);
  std::string Text() const;

 private:
  std::map<std::pair<std::string, std::string>, int64_t> requests_;
  std::map<std::pair<std::string, std::string>, int64_t> denials_;
  std::map<std::pair<std::string, std::string>, int64_t> errors_;
  std::map<std::pair<std::string, std::string>, int64_t> answers_;  // upstream, status class
  std::map<std::string, std::pair<double, int64_t>> latency_;  // sum, count
  std::map<std::tuple<std::string, std::string, std::string>, int64_t> tokens_;
  std::map<std::pair<std::string, std::string>, int64_t> cut_;
};

}  // namespace brake::front
