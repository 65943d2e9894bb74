// Settling leases: commit, cancel and expiry, what each releases, spends and
// records in the ledger, and the answers to duplicates.
#include <algorithm>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "budget/engine.h"
#include "budget/amounts.h"

namespace brake {
namespace {

// The ledger row of settling `lease` (id `id`) at `actual`: who and what
// from the lease; tokens split, latency and outcome left to the caller. Its
// texts view the lease's and `id` until LedgerRows::push_back copies them.
LedgerView LedgerRowOf(const Lease& lease, std::string_view id,
                       const Totals& actual, int64_t now_us) {
  LedgerView row;
  row.time_ms = now_us / 1000;
  row.user = lease.user();
  row.task = lease.task();
  row.parent = lease.parent();
  row.resource = lease.resource();
  row.model = lease.model();
  row.requests = actual.requests;
  row.tokens = actual.tokens;
  row.usd_nano = actual.usd_nano;
  row.lease = id;
  return row;
}

// Whether a usd limit that is not a shadow one was charged by `lease` (one
// whose limiter is unknown, after a restore, counts).
bool UnderUsdLimit(const Lease& lease) {
  for (const LeaseCharge& c : lease.charges) {
    if (c.resource != Resource::kUsd) continue;
    if (c.limiter == nullptr || !c.limiter->spec().shadow) return true;
  }
  return false;
}

}  // namespace

// Moves a lease from reserved to settled at `actual` (nullptr: cancelled,
// nothing spent) and releases what it charged.
void Engine::SettleLease(Lease& lease, const Totals& actual, int64_t now_us) {
  ++settlements_;
  ++mutations_;
  Totals reserved{lease.requests, lease.tokens, lease.usd_nano};
  for (const LeaseCharge& c : lease.charges) {
    Limiter* l = c.limiter;
    // Its subject is listed for saving below, as one of the lease's. A
    // restored lease's charge may name another (no acquire makes one):
    // listed here.
    if (l == nullptr) {  // a restored lease: look it up
      l = FindLimiter(lease.ScopeOf(c), c.limit);
      if (l == nullptr) continue;  // its policy is gone
      if (c.scope >= lease.reserved) {
        dirty_.MarkLimiters(subjects_.Use("", lease.ScopeOf(c), now_us));
      }
    }
    if (l->spec().resource == c.resource) {
      int64_t delta = AmountFor(c.resource, actual) - c.amount;
      if (delta != 0) l->Settle(delta, lease.granted_at_us, now_us);
    }
    l->Release(c.amount, lease.granted_at_us, now_us);
  }
  const bool spent = actual.requests || actual.tokens || actual.usd_nano;
  for (uint32_t i = 0; i < lease.reserved; ++i) {
    const Resident r = Resident::OfKey(lease.scopes[i]);
    Subject& subject = *r.subject;
    subject.used_us = std::max(subject.used_us, now_us);
    --subject.leases;
    AddTotals(subject.reserved, reserved, -1);
    if (!subject.limiters.empty()) dirty_.MarkLimiters(r);
    if (spent) {
      AddTotals(subject.spend, actual, 1);
      dirty_.MarkSpend(r);
    }
  }
}

// A settled lease's result answers duplicates for at least a TTL.
void Engine::ForgetDuplicatesBefore(int64_t now_us) {
  leases_.ForgetSettledBefore(sat::SatAdd(now_us, -lease_ttl_us_));
}

Result<Settlement> Engine::Commit(const CommitRequest& req, int64_t now_us) {
  Lease* open = leases_.Find(req.lease);
  if (open == nullptr) {
    const std::optional<Settlement> done = leases_.FindSettled(req.lease);
    if (!done) {
      return Status(ErrorCode::kUnknownLease, "lease: unknown lease " + req.lease);
    }
    Settlement dup = *done;
    dup.duplicate = true;
    // Nothing changes, but the answer asserts that the first settlement is
    // durable: count it as a change so the reply is gated like one.
    ++mutations_;
    return dup;
  }
  Lease& lease = *open;
  int64_t input = req.input_tokens.value_or(0);
  int64_t output = req.output_tokens.value_or(0);
  bool split = req.input_tokens.has_value() || req.output_tokens.has_value();
  Totals actual;
  actual.requests = lease.requests;
  actual.tokens = req.tokens ? *req.tokens
                  : split    ? sat::SatAdd(input, output)
                             : lease.tokens;
  // A lease granted without a model settles tokens under a usd limit at the
  // unnamed model's price, or not at all (as its acquire would have been).
  std::string_view model = lease.model();
  if (model.empty() && actual.tokens > 0 && UnderUsdLimit(lease)) {
    if (GetPrice(kUnnamedModel) == nullptr) {
      return Status::BadRequest(
          "model: lease " + req.lease +
          " was granted without a model under a usd limit, so its tokens "
          "cannot be priced; commit it with tokens 0, cancel it, or set a "
          "price for \"*\" (an unnamed model)");
    }
    model = kUnnamedModel;
  }
  if (!model.empty()) {
    // A split is priced exactly; tokens beyond the split (or all of them,
    // without one) at the dearer rate, as the reservation was.
    const Price* price = GetPrice(model);
    Price p = price ? *price : Price{};
    int64_t split_total = sat::SatAdd(input, output);
    int64_t unsplit = std::max<int64_t>(0, actual.tokens - split_total);
    actual.usd_nano = sat::SatAdd(CostUsdNano(p, input, output),
                                    EstimateUsdNano(p, unsplit));
  }
  SettleLease(lease, actual, now_us);
  LedgerView row = LedgerRowOf(lease, req.lease, actual, now_us);
  row.model = model;
  row.input_tokens = input;
  row.output_tokens = output;
  row.latency_ms = req.latency_ms;
  row.outcome = req.outcome;
  row.estimated = req.estimated;
  dirty_.ledger().push_back(row);
  Settlement s{actual.tokens, actual.usd_nano, false};
  leases_.Settle(lease, s, now_us);
  ForgetDuplicatesBefore(now_us);
  return s;
}

Result<bool> Engine::Cancel(const std::string& id, int64_t now_us) {
  Lease* lease = leases_.Find(id);
  if (lease == nullptr) {
    if (leases_.FindSettled(id)) return true;  // already settled: a duplicate
    return Status(ErrorCode::kUnknownLease, "lease: unknown lease " + id);
  }
  SettleLease(*lease, Totals{}, now_us);
  leases_.Settle(*lease, Settlement{0, 0, false}, now_us);
  return false;
}

const Lease* Engine::FindLease(const std::string& id) const {
  return leases_.Find(id);
}

int Engine::ExpireLeases(int64_t now_us, std::vector<std::string>* expired) {
  int n = 0;
  while (Lease* next = leases_.NextExpired(now_us)) {
    Lease& lease = *next;
    const std::string id = leases_.IdOf(lease);
    Totals actual{lease.requests, lease.tokens, lease.usd_nano};
    SettleLease(lease, actual, now_us);
    LedgerView row = LedgerRowOf(lease, id, actual, now_us);
    row.outcome = "expired";
    row.expired = true;
    dirty_.ledger().push_back(row);
    leases_.Settle(lease, Settlement{actual.tokens, actual.usd_nano, false},
                   now_us);
    if (expired != nullptr) expired->push_back(id);
    ++n;
  }
  ForgetDuplicatesBefore(now_us);
  return n;
}

int64_t Engine::NextExpiryUs() const {
  return leases_.NextExpiryUs();
}

}  // namespace brake
