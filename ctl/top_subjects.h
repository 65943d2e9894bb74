// The busiest users and tasks in `brakectl top`, from braked's `top` op.
//
// Each frame asks `top` for users and for tasks (kTopSubjectRows each);
// ParseSubjects() reads a reply's rows, RateSubjects() gives each row its
// grant and denial rates from the same subject's counts in the previous
// frame (a subject that was not listed then has no rate yet), and
// RenderSubjects() / SubjectsJson() show them. An older braked without the
// op leaves the section out. Pure functions; any thread.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"

namespace brake::ctl {

constexpr int64_t kTopSubjectRows = 5;

// One row of a `top` reply: counts since braked started.
struct SubjectRow {
  std::string subject;
  double grants = 0;
  double denials = 0;
  double tokens = 0;
  double usd = 0;
};

// A row with its rates over the last interval (nullopt: not known yet).
struct RatedSubject {
  SubjectRow row;
  std::optional<double> grants_per_s;
  std::optional<double> denials_per_s;
};

// The rows of a successful `top` reply; kUnavailable when it has none or a
// row is malformed.
Result<std::vector<SubjectRow>> ParseSubjects(const nlohmann::json& reply);

// `current` in order, rated against `previous` (nullptr on the first frame)
// over `interval_ms`.
std::vector<RatedSubject> RateSubjects(const std::vector<SubjectRow>* previous,
                                       const std::vector<SubjectRow>& current,
                                       int64_t interval_ms);

// A table headed `title` ("BUSIEST USERS"), appended to `lines`, followed by
// a blank line; nothing when there are no rows.
void RenderSubjects(const std::string& title,
                    const std::vector<RatedSubject>& rows,
                    std::vector<std::string>* lines);

// [{"subject","grants":{"total","per_s"},"denials":{...},"tokens","usd"}].
nlohmann::json SubjectsJson(const std::vector<RatedSubject>& rows);

}  // namespace brake::ctl
