#include "front/front_call.h"

#include <cstdio>
#include <cstdlib>
#include <utility>

namespace brake::front {

using json = nlohmann::json;

namespace {

// The longest answer the front holds whole (not streamed) to read its usage.
constexpr size_t kMaxAnswerBytes = 64 << 20;

// Request headers passed upstream as they came (the key headers are the
// front's to set).
constexpr std::string_view kForwarded[] = {
    "content-type", "accept", "anthropic-version", "anthropic-beta",
    "openai-organization", "openai-project", "openai-beta", "idempotency-key"};

// Answer headers not passed back: the server frames the answer itself.
bool HopByHop(std::string_view name) {
  return name == "connection" || name == "transfer-encoding" ||
         name == "content-length" || name == "keep-alive" ||
         name == "content-encoding" || name.starts_with("x-ratelimit-");
}

double MsSince(uint64_t start_ns) {
  return static_cast<double>(uv_hrtime() - start_ns) / 1e6;
}

std::string Fixed(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.*f", digits, v);
  return buf;
}

// The retry wait an upstream 429 asks for, in ms; -1 when it names none.
int64_t RetryAfterMs(const Headers& headers) {
  for (const auto& [name, value] : headers) {
    if (name == "retry-after-ms") return std::atoll(value.c_str());
  }
  for (const auto& [name, value] : headers) {
    if (name == "retry-after") {
      char* end = nullptr;
      double s = std::strtod(value.c_str(), &end);
      if (end != value.c_str() && s >= 0) return static_cast<int64_t>(s * 1000);
    }
  }
  return -1;
}

}  // namespace


void FrontCall::Fail(int code, std::string_view error_code,
                     std::string_view message) {
  front->metrics_.Error(std::string(route->name), code);
  Answer a = ErrorAnswer(dialect, code, error_code, message);
  a.headers.emplace_back("content-type", "application/json");
  x->Respond(code, a.headers, a.body);
}

void FrontCall::OnReply(std::string_view line) {
  json reply = json::parse(line, nullptr, false);
  if (stage == Stage::kAcquiring) {
    Acquired(reply);
  } else if (stage == Stage::kSettling) {
    stage = Stage::kDone;
    front->Finish(this);
  }
}

void FrontCall::Acquired(const json& reply) {
  if (!reply.is_object() || !reply.value("ok", false)) {
    std::string code, message = "brake: the acquire failed";
    if (reply.is_object() && reply.contains("error") && reply["error"].is_object()) {
      code = reply["error"].value("code", "");
      message = "brake: " + reply["error"].value("message", "");
    }
    stage = Stage::kDone;
    if (!gone) {
      const int http = code == "bad_request" ? 400
                       : code == "forbidden" ? 403
                       : code == "unavailable" ? 503 : 500;
      Fail(http, code.empty() ? "internal" : code, message);
    }
    front->Finish(this);
    return;
  }
  if (!reply.value("granted", false)) {
    const std::string reason = reply.value("reason", "");
    if (reason == "reserved" && wait_ms > 0 && !gone) {
      // Room held by calls in flight comes back as they settle: wait for
      // it (once; a waiting acquire is woken by each settlement).
      acquire["wait_ms"] = std::exchange(wait_ms, 0);
      front->brake_->SendLine(channel, acquire.dump());
      return;
    }
    Refusal r = RefusalOf(reply);
    stage = Stage::kDone;
    if (!gone) {
      front->metrics_.Denial(std::string(route->name), r.reason);
      Answer a = DenialAnswer(dialect, r);
      a.headers.emplace_back("content-type", "application/json");
      x->Respond(429, a.headers, a.body);
    }
    front->Finish(this);
    return;
  }
  lease = reply.value("lease", "");
  if (gone) {  // the client left while brake decided
    stage = Stage::kSettling;
    front->brake_->SendLine(channel, json{{"op", "cancel"}, {"lease", lease}}.dump());
    return;
  }
  const int64_t tokens = plan.prompt_tokens + plan.output_tokens;
  if (auto usd = front->brake_->EstimateUsd(model_priced, tokens))
    brake_headers.emplace_back("x-brake-reserved-usd", Fixed(*usd, 6));
  if (auto rem = reply.find("remaining"); rem != reply.end() && rem->is_object()) {
    if (auto u = rem->find("usd"); u != rem->end() && u->is_number())
      brake_headers.emplace_back("x-brake-remaining-usd", Fixed(u->get<double>(), 6));
    if (auto q = rem->find("requests"); q != rem->end() && q->is_number_integer())
      brake_headers.emplace_back("x-ratelimit-remaining-requests", std::to_string(q->get<int64_t>()));
    if (auto t = rem->find("tokens"); t != rem->end() && t->is_number_integer())
      brake_headers.emplace_back("x-ratelimit-remaining-tokens", std::to_string(t->get<int64_t>()));
  }
  if (auto cap = reply.find("capacity"); cap != reply.end() && cap->is_object()) {
    for (const char* res : {"requests", "tokens"}) {
      auto c = cap->find(res);
      if (c != cap->end() && c->is_number_integer())
        brake_headers.emplace_back(std::string("x-ratelimit-limit-") + res,
                                   std::to_string(c->get<int64_t>()));
    }
  }
  brake_headers.emplace_back("x-brake-lease", lease);
  GoUpstream();
}

Refusal FrontCall::RefusalOf(const json& reply) const {
  Refusal r;
  r.reason = reply.value("reason", "");
  r.scope = reply.value("scope", "");
  r.limit = reply.value("limit", "");
  r.cause = reply.value("cause", "");
  if (auto it = reply.find("retry_after_ms"); it != reply.end() && it->is_number())
    r.retry_after_ms = it->get<int64_t>();
  auto facts = front->brake_->LimitOf(r.scope, r.limit);
  if (!facts) return r;
  r.resource = facts->resource;
  r.capacity = static_cast<double>(facts->capacity);
  auto amount = [&](const char* member) -> std::optional<double> {
    auto it = reply.find(member);
    if (it == reply.end() || !it->is_object()) return std::nullopt;
    auto v = it->find(r.resource);
    if (v == it->end() || !v->is_number()) return std::nullopt;
    return v->get<double>();
  };
  if (auto c = amount("capacity")) r.capacity = *c;
  r.remaining = amount("remaining");
  if (auto h = reply.find("held"); h != reply.end() && h->is_number())
    r.held = h->get<double>();
  const int64_t tokens = plan.prompt_tokens + plan.output_tokens;
  if (r.resource == "tokens") {
    r.would_reserve = static_cast<double>(tokens);
    r.prompt_reserve = static_cast<double>(plan.prompt_tokens);
  } else if (r.resource == "usd") {
    r.would_reserve = front->brake_->EstimateUsd(model_priced, tokens).value_or(0);
    r.prompt_reserve =
        front->brake_->EstimateUsd(model_priced, plan.prompt_tokens).value_or(0);
  } else {
    r.would_reserve = 1;
  }
  r.output_tokens = plan.output_tokens;
  r.output_defaulted = plan.set_output_max;
  return r;
}

void FrontCall::GoUpstream() {
  const Upstream& up = front->config_.upstreams.at(std::string(route->upstream));
  UpstreamCall call;
  call.url = up.base_url + std::string(x->target());
  call.method = std::string(route->method);
  for (std::string_view h : kForwarded) {
    std::string_view v = x->header(h);
    if (!v.empty()) call.headers.emplace_back(std::string(h), std::string(v));
  }
  if (x->header("content-type").empty() && call.method == "POST")
    call.headers.emplace_back("content-type", "application/json");
  auto key = front->api_keys_.find(std::string(route->upstream));
  if (route->api == Api::kMessages) {
    if (x->header("anthropic-version").empty())
      call.headers.emplace_back("anthropic-version", "2023-06-01");
    if (key != front->api_keys_.end()) call.headers.emplace_back("x-api-key", key->second);
  } else if (key != front->api_keys_.end()) {
    call.headers.emplace_back("authorization", "Bearer " + key->second);
  }
  call.body = plan.body.empty() ? std::string(x->body()) : std::move(plan.body);
  call.connect_timeout_ms = front->config_.upstream_connect_timeout_ms;
  call.timeout_ms = front->config_.upstream_timeout_ms;
  FrontCall* self = this;
  call.on_head = [self](int code, const Headers& h) { self->OnHead(code, h); };
  call.on_data = [self](std::string_view d) { self->OnData(d); };
  call.on_done = [self](const std::string& e, bool t) { self->OnDone(e, t); };
  overhead_ms = MsSince(received_ns);
  brake_headers.emplace_back("x-brake-overhead-ms", Fixed(overhead_ms, 3));
  stage = Stage::kUpstream;
  upstream_ns = uv_hrtime();
  upstream = front->upstream_->Start(std::move(call));
  if (upstream == 0) OnDone("the upstream call could not start", false);
}

void FrontCall::OnHead(int code, const Headers& headers) {
  status = code;
  upstream_headers = headers;
  if (!plan.stream || code < 200 || code >= 300 || gone) return;
  // A stream: passed on as it comes.
  streaming = true;
  tally = std::make_unique<StreamTally>(route->api, !plan.client_wants_usage);
  Headers out;
  for (const auto& [name, value] : headers)
    if (!HopByHop(name)) out.emplace_back(name, value);
  out.insert(out.end(), brake_headers.begin(), brake_headers.end());
  x->StartStream(code, out);
  FrontCall* self = this;
  x->on_drain = [self] {
    if (self->upstream != 0) self->front->upstream_->Pause(self->upstream, false);
  };
}

void FrontCall::OnData(std::string_view data) {
  if (!streaming) {
    if (answer.size() + data.size() > kMaxAnswerBytes) {
      front->upstream_->Abort(upstream);
      OnDone("the upstream's answer is larger than the front holds", false);
      return;
    }
    answer.append(data);
    return;
  }
  const bool ok = sse.Feed(data, [this](const SseEvent& e) {
    if (tally->OnEvent(e.name, e.data)) x->Send(e.raw);
  });
  if (!ok) {
    front->upstream_->Abort(upstream);
    OnDone("an event of the upstream's stream is too large", false);
    return;
  }
  if (x->queued() > Exchange::kHighWater) front->upstream_->Pause(upstream, true);
}

void FrontCall::OnDone(const std::string& error, bool timed_out) {
  if (stage != Stage::kUpstream) return;
  upstream = 0;
  const double seconds = MsSince(upstream_ns) / 1000.0;
  const int64_t latency_ms = static_cast<int64_t>(seconds * 1000);
  const std::string up(route->upstream);
  front->metrics_.Upstream(up, error.empty() ? status : 0, seconds);
  if (streaming) {
    const bool broken = !error.empty() || !tally->finished() || tally->errored();
    if (broken) {
      front->metrics_.StreamCut(up, "upstream");
      if (!tally->errored()) {
        // The SDKs raise on an error event; the stream then ends cleanly.
        const std::string message = "brake: the upstream's stream broke: " +
                                    (error.empty() ? std::string("it ended early") : error);
        json e = dialect == Dialect::kAnthropic
                     ? json{{"type", "error"}, {"error", {{"type", "api_error"}, {"message", message}}}}
                     : json{{"error", {{"message", message}, {"type", "server_error"}, {"code", "upstream_broken"}}}};
        std::string event = dialect == Dialect::kAnthropic ? "event: error\n" : "";
        event += "data: " + e.dump() + "\n\n";
        x->Send(event);
      }
    }
    x->End();
    Settle(tally->Settle(plan.prompt_tokens), broken ? "error" : "ok",
           latency_ms, -1);
    return;
  }
  if (!error.empty()) {
    // No answer: nothing came back to bill but the prompt may have been
    // read; settled at its ceiling, estimated.
    if (!gone) {
      Fail(timed_out ? 504 : 502, timed_out ? "upstream_timeout" : "upstream_unavailable",
           "brake: the " + up + " upstream failed: " + error);
    }
    Settle(Usage{status == 0 ? 0 : plan.prompt_tokens, 0, false},
           timed_out ? "timeout" : "error", latency_ms, -1);
    return;
  }
  Headers out;
  for (const auto& [name, value] : upstream_headers)
    if (!HopByHop(name)) out.emplace_back(name, value);
  out.insert(out.end(), brake_headers.begin(), brake_headers.end());
  if (!gone) x->Respond(status, out, answer);
  if (status == 429) {
    Settle(Usage{0, 0, true}, "throttled", latency_ms, RetryAfterMs(upstream_headers));
  } else if (status >= 200 && status < 300) {
    Usage u = UsageOfAnswer(route->api, answer);
    if (!u.reported) u = Usage{plan.prompt_tokens, plan.output_tokens, false};
    Settle(u, "ok", latency_ms, -1);
  } else {
    // The provider refused or failed the call: it bills nothing.
    Settle(Usage{0, 0, true}, status >= 500 ? "error" : "ok", latency_ms, -1);
  }
}

void FrontCall::ClientGone() {
  gone = true;
  if (stage != Stage::kUpstream) return;  // acquiring: cancelled when granted
  front->upstream_->Abort(upstream);
  upstream = 0;
  const std::string up(route->upstream);
  if (streaming) front->metrics_.StreamCut(up, "client");
  Usage u = tally ? tally->Settle(plan.prompt_tokens)
                  : Usage{plan.prompt_tokens, 0, false};
  Settle(u, "ok", -1, -1);
}

void FrontCall::Settle(const Usage& usage, const char* outcome,
                       int64_t latency_ms, int64_t retry_after_ms) {
  stage = Stage::kSettling;
  if (lease.empty()) {  // GET /v1/models: nothing was reserved
    stage = Stage::kDone;
    front->Finish(this);
    return;
  }
  front->metrics_.Settled(std::string(route->upstream), usage.input_tokens,
                          usage.output_tokens, usage.reported);
  json commit = {{"op", "commit"},
                 {"lease", lease},
                 {"tokens", usage.input_tokens + usage.output_tokens},
                 {"input_tokens", usage.input_tokens},
                 {"output_tokens", usage.output_tokens},
                 {"outcome", outcome},
                 {"usage", usage.reported ? "reported" : "estimated"}};
  if (latency_ms >= 0) commit["latency_ms"] = latency_ms;
  if (retry_after_ms >= 0) commit["retry_after_ms"] = retry_after_ms;
  front->brake_->SendLine(channel, commit.dump());
}

}  // namespace brake::front
