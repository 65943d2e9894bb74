// Report: brake-bench's output, for people (aligned text) and for scripts
// (one JSON object). Pure functions of a finished run; no IO.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "bench/load.h"

namespace brake::bench {

struct RunReport {
  std::string target;  // "braked" or "echo"
  LoadConfig config;
  LoadResult result;
};

// Field names are documented in brake_bench.cc's usage text and docs.
nlohmann::json ReportJson(const RunReport& run);
std::string ReportText(const RunReport& run);

// Both runs plus brake/echo ratios of decisions/s, p50 and p99 (null when the
// echo figure is 0).
nlohmann::json CompareJson(const RunReport& brake, const RunReport& echo);
std::string CompareText(const RunReport& brake, const RunReport& echo);

}  // namespace brake::bench
