// Amounts: how much of a limit's resource a request or settlement counts
// (AmountFor), and totals added or taken away without overflow (AddTotals).
#pragma once

#include <cstdint>

#include "budget/engine_types.h"
#include "common/sat_math.h"

namespace brake {

inline int64_t AmountFor(Resource r, const Totals& t) {
  switch (r) {
    case Resource::kRequests: return t.requests;
    case Resource::kTokens: return t.tokens;
    case Resource::kUsd: return t.usd_nano;
  }
  return 0;
}

// dst += sign * t, each field saturating; `sign` is 1 or -1.
inline void AddTotals(Totals& dst, const Totals& t, int sign) {
  dst.requests = sat::SatAdd(dst.requests, sign * t.requests);
  dst.tokens = sat::SatAdd(dst.tokens, sign * t.tokens);
  dst.usd_nano = sat::SatAdd(dst.usd_nano, sign * t.usd_nano);
}

}  // namespace brake
