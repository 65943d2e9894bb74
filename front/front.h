// Front: the OpenAI-compatible HTTP front (docs/FRONT.md). An agent points
// its OpenAI or Anthropic SDK's base URL here and changes nothing else.
//
// Each call: the key names the user, the body is parsed once and planned
// (front/call.h), an acquire reserves its ceiling, the call goes upstream
// (front/upstream.h) with the output maximum brake reserved, the answer
// streams back as it arrives (paused while the client does not take it),
// and a commit settles the usage the provider reported (or, for a stream
// cut short, the ceiling estimate of what was received), with the latency
// and the outcome (429 -> throttled with its retry-after, 5xx or a broken
// stream -> error) that feed the breakers. The acquire and commit are
// request lines handled by the daemon like any client's (Brake), so the
// front shares the engine, policies, ledger and durability with the socket.
// Loop thread only.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

#include <uv.h>

#include "common/status.h"
#include "front/front_config.h"
#include "front/front_metrics.h"
#include "front/http_server.h"
#include "front/upstream.h"

namespace brake::front {

// What the front needs of the daemon.
class Brake {
 public:
  virtual ~Brake() = default;
  // A channel: request lines sent on it are handled as if a client of its
  // own sent them, in order; `on_reply` receives each reply line.
  virtual uint64_t OpenChannel(std::function<void(std::string_view)> on_reply) = 0;
  virtual void SendLine(uint64_t channel, std::string_view line) = 0;
  virtual void CloseChannel(uint64_t channel) = 0;
  // What `tokens` of `model` reserve in usd; none when the model has no
  // price (and "*" none either).
  virtual std::optional<double> EstimateUsd(std::string_view model,
                                            int64_t tokens) = 0;
  // The limit `name` that applies to `scope` (a denial's): what it counts
  // ("requests", "tokens", "usd") and its capacity; none when unknown.
  struct LimitFacts {
    std::string resource;
    int64_t capacity = 0;
  };
  virtual std::optional<LimitFacts> LimitOf(std::string_view scope,
                                            std::string_view name) = 0;
};

struct FrontCall;

class Front {
 public:
  Front(uv_loop_t* loop, const FrontConfig& config, Brake* brake);
  ~Front();

  // Listens; reads each upstream's key from its environment variable.
  Status Start();
  // A reload: keys and default_max_tokens (the rest needs a restart).
  void Reconfigure(const FrontConfig& config);
  // Stops accepting, aborts the calls in flight (each settled from what it
  // received), then `on_closed`.
  void Close(std::function<void()> on_closed);

  int port() const { return server_ ? server_->port() : 0; }
  // Prometheus text of the front's metrics.
  std::string MetricsText() const;

 private:
  friend struct FrontCall;
  void OnRequest(std::shared_ptr<Exchange> x);
  void Finish(FrontCall* call);

  uv_loop_t* loop_;
  FrontConfig config_;
  Brake* brake_;
  std::map<std::string, std::string> api_keys_;  // upstream -> its key
  std::unique_ptr<HttpServer> server_;
  std::unique_ptr<UpstreamClient> upstream_;
  std::unordered_map<FrontCall*, std::shared_ptr<FrontCall>> calls_;
  FrontMetrics metrics_;
};

}  // namespace brake::front
