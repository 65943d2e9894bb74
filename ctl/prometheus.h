// A reader of the Prometheus text exposition format (version 0.0.4), for
// `brakectl top`, which learns what braked is doing from its `metrics` op.
//
// Parse() accepts what the format allows: `# HELP` / `# TYPE` and other
// comment lines (skipped), blank lines, and samples
// `name{label="value",...} value [timestamp]` with the escapes \\ \" \n in
// label values and the values NaN, +Inf, -Inf. A malformed line fails the
// whole parse with kBadRequest naming the line, because a half-read reply
// would show wrong rates. Pure; any thread.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/status.h"

namespace brake::ctl {

using MetricLabels = std::vector<std::pair<std::string, std::string>>;

struct MetricSample {
  std::string name;
  MetricLabels labels;  // in the order written
  double value = 0;
};

class MetricSet {
 public:
  // The samples of `text`.
  static Result<MetricSet> Parse(std::string_view text);

  // The sum of the samples named `name` that carry every label of `match`
  // (other labels may differ); nullopt when no sample matches, so a metric
  // the daemon does not export can be told from a zero.
  std::optional<double> Sum(std::string_view name,
                            const MetricLabels& match = {}) const;

  // The distinct values of label `label` among the samples named `name`
  // that match `match`, in order of first appearance.
  std::vector<std::string> LabelValues(std::string_view name,
                                       std::string_view label,
                                       const MetricLabels& match = {}) const;

  const std::vector<MetricSample>& samples() const { return samples_; }

 private:
  std::vector<MetricSample> samples_;
};

// The value of `label` in `labels`, or nullptr.
const std::string* FindLabel(const MetricLabels& labels,
                             std::string_view label);

}  // namespace brake::ctl
