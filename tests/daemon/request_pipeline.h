// What the request tests share (request_test.cc, request_generated_test.cc):
// a dispatcher set up so that every kind of answer is likely, and the check
// that both decoders of a line read the same request and that every reply is
// nlohmann's own spelling of itself.
#pragma once

#include <catch2/catch.hpp>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "daemon/config.h"
#include "daemon/dispatcher.h"
#include "daemon/fast_request.h"
#include "daemon/ops.h"
#include "daemon/request.h"
#include "tests/daemon/dispatcher_harness.h"

namespace brake {

// Policies that make every kind of answer likely: denials by a small task
// bucket, usd remaining from a user quota, a shadow limit, a loop breaker
// (breaker_open with a cause), a concurrency cap, a priced model.
inline const char* const kSetup[] = {
    R"({"op":"policy.set","scope":"task:*","limits":[
        {"name":"tb","resource":"requests","algorithm":"token_bucket","rate":5,"per_ms":1000,"burst":5},
        {"name":"sh","resource":"requests","algorithm":"fixed_window","limit":2,"window_ms":60000,"shadow":true}],
        "breaker":{"loop":{"repeats":3,"window_ms":60000},"open_ms":500}})",
    R"({"op":"policy.set","scope":"user:*","limits":[
        {"name":"daily","resource":"usd","algorithm":"quota","limit":0.5,"period":"day"},
        {"name":"tpm","resource":"tokens","algorithm":"sliding_log","limit":200000,"window_ms":60000}]})",
    R"({"op":"policy.set","scope":"resource:openai","limits":[
        {"name":"inflight","resource":"requests","algorithm":"concurrency","limit":3}]})",
    R"({"op":"prices.set","model":"gpt-4o","input_usd_per_mtok":2.5,"output_usd_per_mtok":10})",
    R"({"op":"prices.set","model":"m\u00e9","input_usd_per_mtok":0.3,"output_usd_per_mtok":1.7})",
};

// Decodes `line` with both decoders; true when the scanner took it, after
// checking that nlohmann read the same request from it.
inline bool DecodersAgree(const std::string& line) {
  Request scanned;
  Request parsed;
  const bool took = scanned.Scan(line);
  const Status parse = parsed.Parse(line);
  if (!took) return false;
  INFO("request: " << line);
  REQUIRE(parse.ok());
  CHECK(scanned.op() == parsed.op());
  CHECK(scanned.IdJson() == parsed.IdJson());
  const Dispatcher::Op* op = FindOp(scanned.op());
  REQUIRE(op != nullptr);
  const Status a = ValidateFields(*op, scanned);
  const Status b = ValidateFields(*op, parsed);
  CHECK(a.code() == b.code());
  CHECK(a.message() == b.message());
  for (size_t k = 0; k < kFastKeys; ++k) {
    const FastKey key = static_cast<FastKey>(k);
    INFO("member " << FastKeyName(key));
    CHECK(scanned.Text(key) == parsed.Text(key));
    CHECK(scanned.OptInt(key) == parsed.OptInt(key));
  }
  return true;
}

// One dispatcher; Send checks both decoders on each line and that the reply
// is nlohmann's own spelling of itself.
class Pipeline {
 public:
  explicit Pipeline(Config config = Config()) : harness_(config) {
    for (const char* line : kSetup) {
      std::string compact = nlohmann::json::parse(line).dump();
      REQUIRE(Send(compact, kAdmin).find("\"ok\":true") != std::string::npos);
    }
  }

  std::string Send(const std::string& line, const Peer& peer) {
    scanned_ += DecodersAgree(line);
    std::string reply;
    harness_.dispatcher().Handle(peer, line, now_us_, &reply);
    harness_.dispatcher().TakeDeferred();
    INFO("request: " << line);
    REQUIRE(!reply.empty());
    REQUIRE(reply.back() == '\n');
    nlohmann::json r = nlohmann::json::parse(reply, nullptr, false);
    REQUIRE(r.is_object());
    CHECK(r.dump(-1, ' ', false,
                 nlohmann::json::error_handler_t::replace) + "\n" == reply);
    now_us_ += 37'000;
    return reply;
  }
  void SetStorageOk(bool ok) { harness_.dispatcher().set_storage_ok(ok); }
  // Lines the scanner took.
  int scanned() const { return scanned_; }

 private:
  Harness harness_;
  int64_t now_us_ = kT0;
  int scanned_ = 0;
};

inline std::string LeaseOf(const std::string& reply) {
  nlohmann::json r = nlohmann::json::parse(reply);
  return r.contains("lease") ? r["lease"].get<std::string>() : "";
}

}  // namespace brake
