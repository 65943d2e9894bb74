// The HTTP front's wiring into the daemon (docs/FRONT.md): the front sends
// its acquires and commits on channels of the server (Server::OpenChannel),
// handled like any client's lines, and reads prices from the engine.
#include "daemon/daemon.h"

#include "daemon/json_fields.h"
#include "daemon/log.h"

#ifdef BRAKE_HAVE_FRONT
#include "front/front.h"
#endif

namespace brake {

#ifdef BRAKE_HAVE_FRONT
namespace {

class DaemonFront : public FrontLink, public front::Brake {
 public:
  DaemonFront(uv_loop_t* loop, const front::FrontConfig& config,
              Server* server, const Engine* engine)
      : server_(server), engine_(engine), front_(loop, config, this) {
    // The key named the user; the front acts for it, never as an admin.
    peer_.uid = static_cast<uint32_t>(getuid());
    peer_.admin = false;
    peer_.front = true;
  }

  Status Start() { return front_.Start(); }
  int port() const { return front_.port(); }

  void Reconfigure(const front::FrontConfig& config) override {
    front_.Reconfigure(config);
  }
  void Close(std::function<void()> on_closed) override {
    front_.Close(std::move(on_closed));
  }
  std::string MetricsText() const override { return front_.MetricsText(); }

  uint64_t OpenChannel(std::function<void(std::string_view)> on_reply) override {
    return server_->OpenChannel(peer_, std::move(on_reply));
  }
  void SendLine(uint64_t channel, std::string_view line) override {
    server_->SendLine(channel, line);
  }
  void CloseChannel(uint64_t channel) override {
    server_->CloseChannel(channel);
  }
  std::optional<double> EstimateUsd(std::string_view model,
                                    int64_t tokens) override {
    const Price* price = engine_->GetPrice(std::string(model));
    if (price == nullptr) return std::nullopt;
    return NanoToUsd(EstimateUsdNano(*price, tokens));
  }
  std::optional<LimitFacts> LimitOf(std::string_view scope,
                                    std::string_view name) override {
    if (name.empty() || name == "breaker") return std::nullopt;
    const LimitSpec* spec =
        engine_->FindLimit(std::string(scope), std::string(name));
    if (spec == nullptr) return std::nullopt;
    LimitFacts facts;
    facts.resource = spec->resource == Resource::kRequests ? "requests"
                     : spec->resource == Resource::kTokens ? "tokens"
                                                           : "usd";
    facts.capacity = Capacity(*spec);
    return facts;
  }

 private:
  Server* server_;
  const Engine* engine_;
  Peer peer_;
  front::Front front_;
};

}  // namespace
#endif

Status Daemon::StartFront() {
  if (!config_.http) return Status::Ok();
#ifdef BRAKE_HAVE_FRONT
  auto f = std::make_unique<DaemonFront>(&loop_, *config_.http, server_.get(),
                                         engine_.get());
  if (Status s = f->Start(); !s.ok()) return s;
  Log(LogLevel::kInfo, "http front on %s:%d (%zu keys)",
      config_.http->host.c_str(), f->port(), config_.http->keys.size());
  front_ = std::move(f);
  dispatcher_->set_extra_metrics(
      [this] { return front_ ? front_->MetricsText() : std::string(); });
  return Status::Ok();
#else
  return Status::BadRequest(
      "http: this braked was built without the front's libraries (install "
      "libhttp-parser-dev and libcurl4-openssl-dev and build again)");
#endif
}

void Daemon::StopFront() {
  if (front_) front_->Close(nullptr);
}

}  // namespace brake
