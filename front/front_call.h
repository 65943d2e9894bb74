// FrontCall: one call through the HTTP front, from its request to its
// settlement: the acquire (again with wait_ms while the cap is only held),
// the call upstream, the answer passed back as it comes, and the commit of
// the usage the provider reported. Front::OnRequest makes one per request
// and Front::Finish forgets it. Internal to front/; loop thread only.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "front/answers.h"
#include "front/call.h"
#include "front/front.h"
#include "front/sse.h"
#include "front/usage.h"

namespace brake::front {

// One call through the front, from its request to its settlement.
struct FrontCall {
  Front* front;
  std::shared_ptr<Exchange> x;
  const Route* route;
  Dialect dialect;
  CallPlan plan;
  std::string user, task, resource, model_priced;
  uint64_t channel = 0;
  uint64_t upstream = 0;
  std::string lease;
  nlohmann::json acquire;          // as sent, to send again with wait_ms
  int64_t wait_ms = 0;   // how long to wait for room held by calls in flight
  enum class Stage { kAcquiring, kUpstream, kSettling, kDone } stage = Stage::kAcquiring;
  bool gone = false;     // the client left
  uint64_t received_ns = 0;  // the whole request arrived
  uint64_t upstream_ns = 0;  // the call went upstream
  double overhead_ms = 0;
  Headers brake_headers;  // x-brake-* and x-ratelimit-* for the answer
  int status = 0;
  Headers upstream_headers;
  bool streaming = false;  // the client's stream has begun
  std::string answer;      // a whole answer, held for its usage
  SseReader sse;
  std::unique_ptr<StreamTally> tally;

  void Acquired(const nlohmann::json& reply);
  // What a refusing acquire's `reply` says, with what this call asked.
  Refusal RefusalOf(const nlohmann::json& reply) const;
  void GoUpstream();
  void OnHead(int code, const Headers& headers);
  void OnData(std::string_view data);
  void OnDone(const std::string& error, bool timed_out);
  void ClientGone();
  void Settle(const Usage& usage, const char* outcome, int64_t latency_ms,
              int64_t retry_after_ms);
  void Fail(int code, std::string_view error_code, std::string_view message);
  void OnReply(std::string_view line);
};

}  // namespace brake::front
