// Fuzz target: request lines through the full handler.
//
// One input is one connection's worth of bytes: framing as the server does it
// (split on '\n', a trailing '\r' stripped, blank lines skipped, a line longer
// than max_line_bytes answered line_too_long and the rest dropped), then JSON
// decoding, central validation against the ops table and the handlers, over
// an in-memory Engine behind a Decider (Dispatcher::Handle). No IO, no clock:
// time comes from the input.
//
// Input layout:
//   byte 0   peer mask: request line i comes from an admin peer (uid 0) when
//            bit (i % 8) is set, otherwise from uid 1000 (i even, mapped to
//            users alice and bob by uid_users) or uid 1001 (i odd, mapped to
//            nobody).
//   then     lines. A line is a request, except these harness directives
//            (none of them is valid JSON, so no request is lost):
//              +N  the clock moves N ms (at most 13 digits) and housekeeping
//                  runs (lease expiry), as the daemon's timer would
//              ~   the peers' connections close (their probe slots are freed)
//                  and new ones open
//              !   storage state cycles: ok -> failing (fail closed) ->
//                  failing (fail open) -> ok
//            Every request moves the clock 137 us: time never goes back.
//            BRAKE_FUZZ_TRACE=1 in the environment prints each request and
//            its reply.
//            A last line without '\n' is incomplete: the server would hold
//            it, so it is not a request.
//
// Each input starts from a fresh Dispatcher and Engine with the policies and
// prices of a fixed config, so state stays bounded and every run is
// reproducible from its input alone. What no input can change is built once
// (request_fixture.h): the parsed config (only on_storage_error, which `!`
// flips, is reset per input). The checks read requests and replies with Shallow
// (shallow_json.h), which keeps only the top-level fields they look at and
// accepts exactly what json::parse accepts, without building a DOM; a
// policy.set reply, whose policy is compared whole, is still parsed into a
// DOM. The checks' code has no coverage instrumentation (harness.ignorelist):
// it is not what is being fuzzed.
//
// Invariants checked after every request (a failure aborts, i.e. is reported
// as a crash):
//   - exactly one reply line, or none when the request was deferred (usage);
//   - the reply is a JSON object with a boolean "ok"; ok:false carries an
//     error with a known code and a non-empty message; the request's valid
//     "id" is echoed;
//   - a refused request (ok:false) changed no engine state;
//   - admin ops from a non-admin peer are refused with forbidden;
//   - with uid_users, a non-admin peer never acquires, commits, cancels, reads
//     status or usage as a user it is not mapped to;
//   - a granted acquire names an open lease; a denial names a known reason;
//   - policy.set answers the canonical policy that the engine now holds;
//   - what the daemon would persist round-trips: every lease row decodes and
//     re-encodes to the same text, every policy row re-parses to itself.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <string_view>

#include "budget/engine.h"
#include "common/records.h"
#include "daemon/config.h"
#include "daemon/dispatcher.h"
#include "daemon/ops.h"
#include "daemon/lease_codec.h"
#include "daemon/policy_codec.h"
#include "storage/store.h"
#include "tests/fuzz/fuzz_check.h"
#include "tests/fuzz/request_fixture.h"
#include "tests/fuzz/shallow_json.h"

namespace {

using brake::Config;
using brake::Dispatcher;
using brake::Engine;
using brake::Peer;
using brake::fuzz::Fixture;
using brake::fuzz::GetFixture;
using brake::fuzz::kMappedUid;
using brake::fuzz::kUnmappedUid;
using brake::fuzz::MayActAs;
using brake::fuzz::Shallow;
using brake::fuzz::Value;
using nlohmann::json;

constexpr int64_t kT0Us = 1'709'287'200'000'000;  // 2024-03-01 10:00:00 UTC
// Two centuries of run time are plenty; beyond that only overflow is found.
constexpr int64_t kMaxNowUs = kT0Us + 200LL * 366 * 86'400'000'000;
constexpr int64_t kRequestStepUs = 137;

// BRAKE_FUZZ_TRACE=1 prints every request and reply (to read what a corpus
// file does: request_fuzz_replay FILE).
bool Trace() {
  static const bool trace = std::getenv("BRAKE_FUZZ_TRACE") != nullptr;
  return trace;
}

const std::set<std::string>& ErrorCodes() {
  static const std::set<std::string> codes = {
      "bad_json",      "bad_request",   "unknown_op",
      "line_too_long", "unknown_lease", "forbidden",
      "unavailable",   "internal",      "too_many_connections"};
  return codes;
}

const std::set<std::string>& Reasons() {
  static const std::set<std::string> reasons = {
      "rate_limited", "quota_exhausted", "cost_cap", "breaker_open",
      "concurrency",  "queue_full",      "timeout",  "too_large",
      "reserved"};
  return reasons;
}

// Stands in for the storage worker's usage query: checks what reaches it.
class FakeDeferred : public brake::DeferredOps {
 public:
  explicit FakeDeferred(const Fixture& fx) : fx_(fx) {}

  void Usage(uint64_t conn, json id, brake::UsageQuery query) override {
    ++calls;
    FUZZ_CHECK(conn == asking.conn, "usage deferred for another connection");
    FUZZ_CHECK(id.is_null() || id.is_string() || id.is_number_integer(),
               id.dump());
    FUZZ_CHECK(!query.user.empty(), "usage without a user");
    FUZZ_CHECK(query.by.empty() || query.by == "task" || query.by == "model" ||
                   query.by == "day",
               "usage by " + query.by);
    FUZZ_CHECK(query.since_ms >= 0, std::to_string(query.since_ms));
    FUZZ_CHECK(
        MayActAs(fx_, asking, query.user),
        "uid " + std::to_string(asking.uid) + " read usage of " + query.user);
  }

  // Nothing is ever stored here, so no subject can need loading.
  void Load(uint64_t, json, std::vector<std::string> scopes,
            std::string) override {
    FUZZ_CHECK(false, "load of " + std::to_string(scopes.size()) +
                          " subjects with nothing stored");
  }
  void Redo(uint64_t, std::string) override {
    FUZZ_CHECK(false, "a request held with no cluster");
  }

  int calls = 0;
  Peer asking;

 private:
  const Fixture& fx_;
};

class Harness {
 public:
  explicit Harness(Fixture& fx)
      : fx_(fx),
        config_(fx.config),
        engine_("L", config_.lease_ttl_ms * 1000),
        dispatcher_(&engine_, &config_, &stats_),
        deferred_(fx) {
    config_.fail_open = fx.fail_open;  // the last input may have cycled it
    dispatcher_.set_deferred(&deferred_);
    for (const auto& [scope, policy] : config_.policies) {
      dispatcher_.decider()->SetPolicy(scope, policy, fx.breakers.at(scope));
    }
    for (const auto& [model, price] : config_.prices) {
      engine_.SetPrice(model, price);
    }
    stats_.connections = 3;
    stats_.connections_total = 3;
    // The fixture's rows were checked once, at start: drop them unread.
    engine_.Drain(&batch_, brake::AppendEncodedLease);
    dispatcher_.decider()->Drain(&batch_);
  }

  size_t max_line() const {
    return static_cast<size_t>(config_.max_line_bytes);
  }

  void Advance(int64_t ms) {
    int64_t us =
        ms > (kMaxNowUs - now_us_) / 1000 ? kMaxNowUs - now_us_ : ms * 1000;
    now_us_ += us;
    dispatcher_.decider()->ExpireLeases(now_us_);
    Persist();
  }

  void Reconnect() {
    for (uint64_t c = conn_base_; c < conn_base_ + 3; ++c) {
      dispatcher_.decider()->DropConnection(c, now_us_);
    }
    conn_base_ += 3;
    stats_.connections_total += 3;
    Persist();
  }

  void CycleStorage() {
    storage_state_ = (storage_state_ + 1) % 3;
    dispatcher_.set_storage_ok(storage_state_ == 0);
    config_.fail_open = storage_state_ == 2;  // on_storage_error is reloadable
  }

  Peer PeerFor(size_t index, uint8_t mask) const {
    if ((mask >> (index % 8)) & 1) return Peer{0, true, conn_base_};
    if (index % 2 == 0) return Peer{kMappedUid, false, conn_base_ + 1};
    return Peer{kUnmappedUid, false, conn_base_ + 2};
  }

  // The server's answer to an over-long line; the connection then closes.
  void LineTooLong() {
    std::string line = Dispatcher::ErrorLine(brake::ErrorCode::kLineTooLong,
                                             "request: line too long");
    FUZZ_CHECK(reply_.Parse(line) && reply_.is_object() &&
                   reply_[Shallow::kOk].kind == Value::kBool &&
                   !reply_[Shallow::kOk].b &&
                   reply_.error_code().str() == "line_too_long",
               line);
  }

  void Request(const Peer& peer, std::string_view line) {
    using F = Shallow;
    now_us_ = now_us_ + kRequestStepUs > kMaxNowUs ? kMaxNowUs
                                                   : now_us_ + kRequestStepUs;
    // What the request is, as far as the checks need to know.
    const Shallow& request = request_;
    request_.Parse(line);
    const std::string& op = request[F::kOp].str();
    const std::string& lease_id = request[F::kLease].str();
    std::string lease_user;  // owner of the lease a commit/cancel names
    if (const brake::Lease* l = engine_.FindLease(lease_id)) {
      lease_user = l->user();
    }
    const uint64_t mutations = engine_.mutations();
    const size_t open_leases = engine_.open_leases();
    const int usage_calls = deferred_.calls;
    deferred_.asking = peer;

    out_.clear();
    dispatcher_.Handle(peer, line, now_us_, &out_);
    // Built only when a check fails.
    auto context = [&] {
      return "request: " + std::string(line) + "\nreply: " + out_;
    };
    if (Trace()) {
      std::fprintf(stderr, "%s %u> %.*s\n< %s", peer.admin ? "admin" : "user",
                   peer.uid, static_cast<int>(line.size()), line.data(),
                   out_.empty() ? "(deferred)\n" : out_.c_str());
    }

    if (dispatcher_.TakeDeferred()) {
      FUZZ_CHECK(out_.empty(),
                 "a deferred request answered at once\n" + context());
      FUZZ_CHECK(deferred_.calls == usage_calls + 1, context());
      FUZZ_CHECK(op == "usage", context());
      Persist();
      return;
    }
    FUZZ_CHECK(deferred_.calls == usage_calls, context());
    FUZZ_CHECK(!out_.empty() && out_.back() == '\n' &&
                   out_.find('\n') == out_.size() - 1,
               "not exactly one reply line\n" + context());
    const Shallow& reply = reply_;
    reply_.Parse(out_);
    FUZZ_CHECK(reply.is_object(), context());
    FUZZ_CHECK(reply[F::kOk].kind == Value::kBool, context());
    const bool ok = reply[F::kOk].b;

    std::string code;
    if (!ok) {
      FUZZ_CHECK(reply[F::kError].kind == Value::kObject, context());
      FUZZ_CHECK(reply.error_code().is_string() &&
                     ErrorCodes().count(reply.error_code().s),
                 context());
      FUZZ_CHECK(
          reply.error_message().is_string() && !reply.error_message().s.empty(),
          context());
      code = reply.error_code().s;
      FUZZ_CHECK(engine_.mutations() == mutations &&
                     engine_.open_leases() == open_leases,
                 "a refused request changed state\n" + context());
    } else {
      FUZZ_CHECK(!reply[F::kError].present(), context());
      FUZZ_CHECK(request.is_object(), context());
    }

    if (!request.is_object()) {
      FUZZ_CHECK(!ok && (code == "bad_json" || code == "bad_request"),
                 context());
      Persist();
      return;
    }
    // The id is echoed whenever the request got as far as reading it.
    const Value& id = request[F::kId];
    const bool id_valid = id.is_string() || id.is_integer();
    if (reply[F::kId].present()) {
      FUZZ_CHECK(id_valid && reply[F::kId].SameIdAs(id), context());
    } else if (code != "bad_json") {
      FUZZ_CHECK(!id_valid, "id not echoed\n" + context());
    }
    if (code == "bad_json") {  // an object nested too deep: not read at all
      Persist();
      return;
    }

    const Dispatcher::Op* spec = brake::FindOp(op);
    if (ok) FUZZ_CHECK(spec != nullptr, context());
    if (spec != nullptr && spec->admin && !peer.admin &&
        (!id.present() || id_valid)) {
      FUZZ_CHECK(code == "forbidden",
                 "an admin op from a non-admin peer\n" + context());
    }

    if (ok && op == "acquire") {
      FUZZ_CHECK(MayActAs(fx_, peer, request[F::kUser].str()),
                 "acquired as an unmapped user\n" + context());
      FUZZ_CHECK(reply[F::kGranted].kind == Value::kBool, context());
      if (reply[F::kGranted].b) {
        FUZZ_CHECK(reply[F::kLease].is_string(), context());
        FUZZ_CHECK(engine_.FindLease(reply[F::kLease].s) != nullptr,
                   "granted lease is not open\n" + context());
        FUZZ_CHECK(engine_.open_leases() == open_leases + 1, context());
      } else {
        FUZZ_CHECK(reply[F::kReason].is_string() &&
                       Reasons().count(reply[F::kReason].s),
                   context());
        FUZZ_CHECK(engine_.open_leases() == open_leases, context());
        const Value& retry = reply[F::kRetryAfterMs];
        FUZZ_CHECK(retry.present(), context());
        FUZZ_CHECK(retry.kind == Value::kNull || retry.IsNonNegativeInt64(),
                   context());
      }
    }
    if (ok && (op == "commit" || op == "cancel") && !lease_user.empty()) {
      FUZZ_CHECK(MayActAs(fx_, peer, lease_user),
                 "settled a lease of an unmapped user\n" + context());
      FUZZ_CHECK(engine_.FindLease(lease_id) == nullptr,
                 "a settled lease is still open\n" + context());
    }
    if (ok && op == "status" && request[F::kUser].present() &&
        request[F::kUser].kind != Value::kNull) {
      FUZZ_CHECK(MayActAs(fx_, peer, request[F::kUser].str()),
                 "status of an unmapped user\n" + context());
    }
    if (ok && op == "policy.set") {
      // The policy is compared whole: this reply gets a DOM.
      const json whole = json::parse(out_, nullptr, /*allow_exceptions=*/false);
      const brake::Policy* held = engine_.GetPolicy(request[F::kScope].str());
      FUZZ_CHECK(held != nullptr, context());
      FUZZ_CHECK(
          whole.contains("policy") && whole["policy"].dump() == held->json,
          "policy.set answered another policy than it set\n" + context());
    }
    Persist();
  }

 private:
  // What the daemon would hand to storage after this loop turn must read
  // back as written.
  void Persist() {
    dispatcher_.decider()->TakeLog();
    if (!engine_.dirty() && !dispatcher_.decider()->dirty()) return;
    batch_ = brake::Batch();
    engine_.Drain(&batch_, brake::AppendEncodedLease);
    dispatcher_.decider()->Drain(&batch_);
    for (const brake::LeasePuts::Row put : batch_.leases_put) {
      const brake::LeaseRow row{std::string(put.id), std::string(put.json)};
      auto lease = brake::DecodeLease(row.id, row.json);
      FUZZ_CHECK(lease.ok(), "lease row does not decode: " + row.json);
      FUZZ_CHECK(lease->id() == row.id, row.json);
      FUZZ_CHECK(brake::EncodeLease(*lease) == row.json,
                 "lease row does not round-trip: " + row.json);
    }
    for (const brake::PolicyRow& row : batch_.policies_put) {
      auto policy = brake::ParsePolicyText(row.json);
      FUZZ_CHECK(policy.ok(), "policy row does not parse: " + row.json);
      FUZZ_CHECK(policy->json == row.json,
                 "policy row does not round-trip: " + row.json);
    }
  }

  const Fixture& fx_;
  Config& config_;  // the fixture's; only fail_open changes
  brake::ServerStats stats_;
  Engine engine_;
  Dispatcher dispatcher_;
  FakeDeferred deferred_;
  brake::Batch batch_;
  Shallow request_;
  Shallow reply_;
  std::string out_;
  int64_t now_us_ = kT0Us;
  uint64_t conn_base_ = 1;
  int storage_state_ = 0;
};

// "+N": N ms, at most 13 digits; anything after the digits is ignored.
int64_t ParseAdvanceMs(std::string_view directive) {
  int64_t ms = 0;
  for (size_t i = 1; i < directive.size() && i <= 13; ++i) {
    char c = directive[i];
    if (c < '0' || c > '9') break;
    ms = ms * 10 + (c - '0');
  }
  return ms;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  Harness harness(GetFixture());
  const uint8_t mask = data[0];
  std::string_view rest(reinterpret_cast<const char*>(data) + 1, size - 1);
  size_t index = 0;  // request lines so far
  while (!rest.empty()) {
    const size_t nl = rest.find('\n');
    const bool complete = nl != std::string_view::npos;
    std::string_view line = rest.substr(0, complete ? nl : rest.size());
    rest.remove_prefix(complete ? nl + 1 : rest.size());
    if (line.size() > harness.max_line()) {
      harness.LineTooLong();
      break;  // the server closes the connection
    }
    if (!complete) break;  // held until its '\n' arrives
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty()) continue;
    if (line[0] == '+') {
      harness.Advance(ParseAdvanceMs(line));
    } else if (line == "~") {
      harness.Reconnect();
    } else if (line == "!") {
      harness.CycleStorage();
    } else {
      harness.Request(harness.PeerFor(index, mask), line);
      ++index;
    }
  }
  return 0;
}
