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
#include <map>
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
  // Space-saving's stream summary: subjects in buckets of equal rank, the
  // buckets ordered by rank. A Record moves its subject one bucket up, next
  // to where it was, so it costs one hash lookup and no string compares.
  struct Entry;
  struct Bucket {
    Entry* head = nullptr;  // the longest in this bucket: evicted first
    Entry* tail = nullptr;
  };
  using Buckets = std::map<int64_t, Bucket>;  // by rank, lowest first
  struct Entry {
    SubjectActivity activity;
    Buckets::iterator bucket;
    Entry* prev = nullptr;
    Entry* next = nullptr;
  };
  static int64_t RankOf(const SubjectActivity& a) {
    return a.uncounted_max + a.activity();
  }
  // Appends `e` to the bucket of `rank` (made when missing; `hint` is
  // where it would go).
  void Link(Entry* e, int64_t rank, Buckets::iterator hint);
  // Takes `e` out of its bucket, dropping the bucket when it empties.
  void Unlink(Entry* e);

  size_t capacity_;
  std::unordered_map<std::string, Entry> by_subject_;
  Buckets buckets_;
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
