#include "front/front.h"

#include <charconv>
#include <cstdlib>

#include <nlohmann/json.hpp>

#include "front/call.h"
#include "front/front_call.h"

namespace brake::front {

using json = nlohmann::json;

// --- Front -----------------------------------------------------------------

Front::Front(uv_loop_t* loop, const FrontConfig& config, Brake* brake)
    : loop_(loop), config_(config), brake_(brake) {}

Front::~Front() = default;

Status Front::Start() {
  for (const auto& [name, up] : config_.upstreams) {
    if (up.api_key_env.empty()) continue;
    const char* key = std::getenv(up.api_key_env.c_str());
    if (key == nullptr || *key == '\0') {
      return Status::BadRequest("http.upstreams." + name + ".api_key_env: " +
                                up.api_key_env + " is not set");
    }
    api_keys_[name] = key;
  }
  HttpLimits limits{config_.max_header_bytes, config_.max_body_bytes,
                    config_.header_timeout_ms, config_.idle_timeout_ms,
                    config_.max_connections};
  server_ = std::make_unique<HttpServer>(
      loop_, limits, [this](std::shared_ptr<Exchange> x) { OnRequest(std::move(x)); });
  upstream_ = std::make_unique<UpstreamClient>(loop_);
  return server_->Listen(config_.host, config_.port);
}

void Front::Reconfigure(const FrontConfig& config) {
  config_.keys = config.keys;
  config_.default_max_tokens = config.default_max_tokens;
  config_.wait_ms = config.wait_ms;
}

void Front::OnRequest(std::shared_ptr<Exchange> x) {
  auto call = std::make_shared<FrontCall>();
  FrontCall* c = call.get();
  c->front = this;
  c->x = x;
  c->received_ns = uv_hrtime();
  bool method_ok = false;
  c->route = FindRoute(x->method(), x->target(), &method_ok);
  static const Route kUnknown{Api::kModels, "", "", "", "unknown"};
  if (c->route == nullptr) {
    c->route = &kUnknown;
    c->dialect = Dialect::kOpenAi;
    c->Fail(404, "unknown_url", "brake: no route " + std::string(x->method()) + " " +
                                    std::string(x->target()));
    return;
  }
  c->dialect = c->route->api == Api::kMessages ? Dialect::kAnthropic : Dialect::kOpenAi;
  if (!method_ok) {
    c->Fail(405, "method_not_allowed", "brake: " + std::string(c->route->path) +
                                           " takes " + std::string(c->route->method));
    return;
  }
  metrics_.Request(std::string(c->route->name), std::string(c->route->upstream));
  std::string_view key = x->header("x-api-key");
  std::string_view auth = x->header("authorization");
  if (key.empty() && auth.size() > 7 &&
      (auth.substr(0, 7) == "Bearer " || auth.substr(0, 7) == "bearer "))
    key = auth.substr(7);
  auto who = config_.keys.find(std::string(key));
  if (who == config_.keys.end()) {
    c->Fail(401, "invalid_api_key",
            key.empty() ? "brake: no key (Authorization: Bearer KEY or x-api-key)"
                        : "brake: unknown key");
    return;
  }
  if (!config_.upstreams.count(std::string(c->route->upstream))) {
    c->Fail(404, "unknown_upstream", "brake: no " + std::string(c->route->upstream) +
                                         " upstream is configured (http.upstreams)");
    return;
  }
  c->user = who->second.user;
  calls_.emplace(c, call);
  x->on_gone = [c] { c->ClientGone(); };
  if (c->route->api == Api::kModels) {  // nothing to reserve
    c->stage = FrontCall::Stage::kUpstream;
    c->lease.clear();
    c->GoUpstream();
    return;
  }
  auto plan = PlanCall(c->route->api, x->body(), config_.default_max_tokens);
  if (!plan.ok()) {
    c->Fail(400, plan.status().code() == ErrorCode::kBadJson ? "bad_json" : "bad_request",
            "brake: " + plan.status().message());
    Finish(c);
    return;
  }
  c->plan = std::move(*plan);
  std::string_view task = x->header("x-brake-task");
  c->task = task.empty() ? c->user + "/default" : std::string(task);
  std::string_view resource = x->header("x-brake-resource");
  c->resource = !resource.empty() ? std::string(resource)
                : c->plan.model.empty() ? std::string(c->route->upstream)
                                        : std::string(c->route->upstream) + "/" + c->plan.model;
  c->wait_ms = config_.wait_ms;
  if (std::string_view wait = x->header("x-brake-wait-ms"); !wait.empty()) {
    int64_t ms = -1;
    auto [end, ec] = std::from_chars(wait.data(), wait.data() + wait.size(), ms);
    if (ec != std::errc() || end != wait.data() + wait.size() || ms < 0 ||
        ms > kMaxWaitMs) {
      c->Fail(400, "bad_request",
              "brake: x-brake-wait-ms: must be an integer from 0 to " +
                  std::to_string(kMaxWaitMs));
      Finish(c);
      return;
    }
    c->wait_ms = ms;
  }
  json& acquire = c->acquire;
  acquire = {{"op", "acquire"},
             {"user", c->user},
             {"task", c->task},
             {"resource", c->resource},
             {"tokens", c->plan.prompt_tokens + c->plan.output_tokens},
             {"fingerprint", c->plan.fingerprint}};
  // A model brake has no price for is reserved as "*" (or refused under a
  // usd limit when "*" has none either): never as free.
  if (!c->plan.model.empty() && brake_->EstimateUsd(c->plan.model, 0)) {
    acquire["model"] = c->plan.model;
    c->model_priced = c->plan.model;
  } else {
    c->model_priced = "*";
  }
  if (std::string_view parent = x->header("x-brake-parent"); !parent.empty())
    acquire["parent"] = std::string(parent);
  c->channel = brake_->OpenChannel([c](std::string_view line) { c->OnReply(line); });
  brake_->SendLine(c->channel, acquire.dump());
}

void Front::Finish(FrontCall* call) {
  if (call->channel != 0) brake_->CloseChannel(call->channel);
  call->channel = 0;
  auto it = calls_.find(call);
  if (it == calls_.end()) return;
  std::shared_ptr<FrontCall> keep = std::move(it->second);
  calls_.erase(it);
  if (keep->x) keep->x->on_gone = nullptr;
  if (keep->x) keep->x->on_drain = nullptr;
}

void Front::Close(std::function<void()> on_closed) {
  std::vector<FrontCall*> all;
  for (auto& [c, keep] : calls_) all.push_back(c);
  for (FrontCall* c : all) c->ClientGone();
  auto remaining = std::make_shared<int>(2);
  auto done = [remaining, on_closed] {
    if (--*remaining == 0 && on_closed) on_closed();
  };
  server_->Close(done);
  upstream_->Close(done);
}

std::string Front::MetricsText() const { return metrics_.Text(); }

}  // namespace brake::front
