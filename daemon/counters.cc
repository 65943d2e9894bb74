#include "daemon/counters.h"

namespace brake {

std::string_view LimitHitName(LimitHit limit) {
  switch (limit) {
    case LimitHit::kMaxLineBytes:
      return "max_line_bytes";
    case LimitHit::kMaxDepth:
      return "max_depth";
    case LimitHit::kMaxConnections:
      return "max_connections";
    case LimitHit::kMaxOutputBytes:
      return "max_output_bytes";
    case LimitHit::kPartialLineTimeoutMs:
      return "partial_line_timeout_ms";
    case LimitHit::kMaxSubjects:
      return "max_subjects";
    case LimitHit::kMaxOpenLeases:
      return "max_open_leases";
    case LimitHit::kMaxWaitersPerScope:
      break;
  }
  return "max_waiters_per_scope";
}

}  // namespace brake
