// Leases for the lease codec's and the drain snapshot's tests.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "budget/lease.h"

namespace brake::lease_samples {

struct NamedCharge {
  std::string scope;
  std::string limit;
  Resource resource;
  int64_t amount;
};

// Gives `l` the reserved scopes `reserved` and the charges `charges`, a
// charge's scope by name (added after the reserved ones when none of them).
inline void SetScopes(Lease* l, std::vector<std::string> reserved,
               const std::vector<NamedCharge>& charges) {
  const auto n = static_cast<uint32_t>(reserved.size());
  std::vector<uint32_t> at;
  for (const NamedCharge& c : charges) {
    auto it = std::find(reserved.begin(), reserved.end(), c.scope);
    at.push_back(static_cast<uint32_t>(it - reserved.begin()));
    if (it == reserved.end()) reserved.push_back(c.scope);
  }
  l->OwnScopes(std::move(reserved), n);
  l->charges.clear();
  for (size_t i = 0; i < charges.size(); ++i) {
    LeaseCharge c;
    c.scope = at[i];
    c.limit.assign(charges[i].limit);
    c.resource = charges[i].resource;
    c.amount = charges[i].amount;
    l->charges.push_back(c);
  }
}

inline std::vector<std::string> ReservedOf(const Lease& l) {
  std::vector<std::string> out;
  for (uint32_t i = 0; i < l.reserved; ++i) out.push_back(*l.scopes[i]);
  return out;
}

inline std::vector<NamedCharge> ChargesOf(const Lease& l) {
  std::vector<NamedCharge> out;
  for (const LeaseCharge& c : l.charges) {
    out.push_back({l.ScopeOf(c), std::string(c.limit), c.resource, c.amount});
  }
  return out;
}

inline Lease SampleLease() {
  Lease l;
  l.SetText({"abc-17", "alice", "t-42", "t-7", "openai", "gpt-4o", "9f2c"});
  l.requests = 1;
  l.tokens = 1200;
  l.usd_nano = 12'000'000;
  l.granted_at_us = 1'700'000'000'000'000;
  l.expires_at_us = 1'700'000'600'000'000;
  SetScopes(&l,
            {"global", "user:alice", "task:t-42", "task:t-7",
             "resource:openai"},
            {{"user:alice", "daily", Resource::kUsd, 12'000'000},
             {"task:t-42", "inflight", Resource::kRequests, 1},
             {"resource:openai", "tpm", Resource::kTokens, 1200}});
  return l;
}

}  // namespace brake::lease_samples
