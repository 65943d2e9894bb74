// TopTracker: the busiest users, tasks and resources since braked started,
// in bounded memory, for the `top` op and the per-user metrics.
//
// SubjectCounter counts, per subject (a user name, a task name, ...), the
// acquires granted and refused and the tokens and usd the grants reserved.
// It tracks at most `capacity` subjects: a new subject arriving when it is
// full replaces the one with the lowest rank, where rank is the activity
// (grants + denials) counted plus the rank the subject inherited when it was
// admitted (Metwally et al.'s space-saving counter). So every subject with
// more than 1/capacity of all the acquires counted is sure to be tracked,
// however many occasional subjects come and go; its counts are exact from
// the moment it was admitted, and `uncounted_max` bounds what it may have
// done before (0: the counts are exact since start).
// TopTracker holds one SubjectCounter per kind. Loop thread only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "budget/engine.h"

namespace brake {

struct SubjectActivity {
  std::string subject;
  int64_t grants = 0;
  int64_t denials = 0;
  int64_t tokens = 0;    // reserved by the grants (their estimates)
  int64_t usd_nano = 0;  // reserved by the grants
  // At most this many acquires of the subject went uncounted (it was
  // admitted into a full tracker in place of one of this rank).
  int64_t uncounted_max = 0;

  int64_t activity() const { return grants + denials; }
};

class SubjectCounter {
 public:
  // `capacity` >= 1 subjects are tracked at most.
  explicit SubjectCounter(size_t capacity);

  // One acquire answer of `subject` (non-empty): granted with the tokens and
  // usd it reserved, or refused (tokens and usd ignored).
  void Record(const std::string& subject, bool granted, int64_t tokens,
              int64_t usd_nano);

  // The tracked subjects that `keep` accepts (all when it is empty), busiest
  // first (activity descending, then subject ascending), at most `limit`.
  std::vector<SubjectActivity> Top(
      size_t limit,
      const std::function<bool(const std::string&)>& keep = nullptr) const;

  size_t size() const { return by_subject_.size(); }
  size_t capacity() const { return capacity_; }

 private:
  using Rank = std::pair<int64_t, std::string_view>;  // view of the map's key
  static int64_t RankOf(const SubjectActivity& a) {
    return a.uncounted_max + a.activity();
  }

  size_t capacity_;
  std::unordered_map<std::string, SubjectActivity> by_subject_;
  std::set<Rank> by_rank_;  // lowest first: the next to go
};

enum class TopKind { kUser, kTask, kResource };

class TopTracker {
 public:
  // Each kind tracks at most `capacity_per_kind` subjects.
  explicit TopTracker(size_t capacity_per_kind);

  // Counts an answer under its user, its task and (when it names one) its
  // resource.
  void Record(const AcquireRequest& request, bool granted, int64_t usd_nano);

  const SubjectCounter& Of(TopKind kind) const;

 private:
  SubjectCounter users_;
  SubjectCounter tasks_;
  SubjectCounter resources_;
};

}  // namespace brake
