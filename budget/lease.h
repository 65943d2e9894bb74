// Lease: the reservation a granted acquire holds until it is settled.
//
// Plain data owned by the Engine. A lease remembers exactly what it charged
// where (each limiter and each subject scope), so that settlement refunds or
// extra-charges the same places, even after a restart.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "budget/limit_spec.h"

namespace brake {

class Limiter;

struct LeaseCharge {
  std::string scope;  // concrete scope of the limiter, e.g. "user:alice"
  std::string limit;  // limit name
  Resource resource = Resource::kRequests;
  int64_t amount = 0;  // what was charged, in resource units
  // The engine's limiter, while it holds one (not stored; nullptr after a
  // restore). Valid while the lease is open: a subject with an open lease
  // is never evicted, and replacing a limiter removes its charges.
  Limiter* limiter = nullptr;
};

struct Lease {
  std::string id;
  std::string user;
  std::string task;
  std::string parent;
  std::string resource;
  std::string model;
  std::string fingerprint;
  int64_t requests = 0;  // reserved
  int64_t tokens = 0;    // reserved
  int64_t usd_nano = 0;  // reserved
  int64_t granted_at_us = 0;
  int64_t expires_at_us = 0;
  std::vector<std::string> scopes;  // subject scopes: spend and reserved
  std::vector<LeaseCharge> charges;
};

// What settling a lease charged; a duplicate commit or cancel answers the
// first settlement's again.
struct Settlement {
  int64_t charged_tokens = 0;
  int64_t charged_usd_nano = 0;
  bool duplicate = false;
};

}  // namespace brake
