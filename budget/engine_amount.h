// AmountFor: how much of a limit's resource a request or settlement counts.
// Internal to the engine's files (engine.cc, engine_settle.cc).
#pragma once

#include <cstdint>

#include "budget/engine.h"

namespace brake {

inline int64_t AmountFor(Resource r, const Totals& t) {
  switch (r) {
    case Resource::kRequests: return t.requests;
    case Resource::kTokens: return t.tokens;
    case Resource::kUsd: return t.usd_nano;
  }
  return 0;
}

}  // namespace brake
