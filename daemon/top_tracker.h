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
#include <string>
#include <string_view>
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

  size_t size() const { return entries_.size(); }
  size_t capacity() const { return capacity_; }

 private:
  // Space-saving's stream summary: subjects in buckets of equal rank, the
  // buckets in a list by rank. A Record moves its subject one bucket up,
  // next to where it was, so it costs one hash probe and no string
  // compares but the key's. Entries and buckets are pools addressed by
  // index: a newcomer reuses the evicted entry (and its name's storage),
  // so a stream of new subjects allocates nothing once the pools are full.
  //
  // The buckets only matter once an entry must be evicted: until the
  // counter is first full, a Record only counts (and notes when, `since`),
  // and the first eviction builds the buckets from the ranks, each bucket
  // in the order its entries reached their rank, as moving them one by one
  // would have left them (BuildBuckets). Until then Top scans every entry.
  static constexpr uint32_t kNone = UINT32_MAX;
  struct Entry {
    SubjectActivity activity;
    uint64_t hash = 0;
    uint64_t since = 0;  // the Record that last counted it (before ranked_)
    uint32_t bucket = kNone;
    uint32_t prev = kNone;  // towards the bucket's head (evicted first)
    uint32_t next = kNone;
  };
  struct Bucket {
    int64_t rank = 0;
    uint32_t head = kNone;
    uint32_t tail = kNone;
    uint32_t lower = kNone;   // the next lower rank's bucket
    uint32_t higher = kNone;  // the next higher rank's bucket
  };
  static int64_t RankOf(const SubjectActivity& a) {
    return a.uncounted_max + a.activity();
  }
  // The entry holding `subject` (whose hash is `hash`), or kNone.
  uint32_t Find(std::string_view subject, uint64_t hash) const;
  // Index slots: open addressing, linear probing, at most half full; a
  // slot holds part of an entry's hash and its index (0: empty).
  void InsertSlot(uint32_t entry);
  void EraseSlot(uint32_t entry);
  void GrowSlots();
  // A bucket of `rank` placed between `lower` and `higher` (either kNone).
  uint32_t NewBucket(int64_t rank, uint32_t lower, uint32_t higher);
  // Appends entry `e` to bucket `b`.
  void Append(uint32_t e, uint32_t b);
  // Takes entry `e` out of its bucket, freeing the bucket when it empties.
  void Unlink(uint32_t e);
  // Puts every entry into its bucket (ranked_ from then on).
  void BuildBuckets();

  size_t capacity_;
  std::vector<Entry> entries_;
  std::vector<Bucket> buckets_;
  uint32_t free_bucket_ = kNone;  // freed buckets, chained through `higher`
  uint32_t lowest_ = kNone;
  uint32_t highest_ = kNone;
  std::vector<uint64_t> slots_;
  bool ranked_ = false;  // the buckets are kept (since the first eviction)
  uint64_t records_ = 0;  // Records counted before ranked_
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
