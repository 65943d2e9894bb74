#include "daemon/top_tracker.h"

#include <algorithm>

#include "common/sat_math.h"
#include "budget/scope_key.h"  // HashBytes, Same

namespace brake {

SubjectCounter::SubjectCounter(size_t capacity)
    // At most 2^30: the index table (< 2^32 slots) is addressed by the
    // 32 bits of hash a slot keeps.
    : capacity_(std::clamp<size_t>(capacity, 1, size_t{1} << 30)) {}

namespace {

// A slot: the entry's hash's low 32 bits (its home, and a tag compared
// before the name) above the entry's index + 1 (0: an empty slot).
uint64_t SlotOf(uint64_t hash, uint32_t entry) {
  return hash << 32 | (uint64_t{entry} + 1);
}
uint32_t EntryOf(uint64_t slot) { return static_cast<uint32_t>(slot) - 1; }
size_t HomeOf(uint64_t slot, size_t mask) { return (slot >> 32) & mask; }

}  // namespace

uint32_t SubjectCounter::Find(std::string_view subject, uint64_t hash) const {
  if (slots_.empty()) return kNone;
  const size_t mask = slots_.size() - 1;
  const uint64_t tag = hash << 32;
  for (size_t i = hash & mask; slots_[i] != 0; i = (i + 1) & mask) {
    if ((slots_[i] & ~uint64_t{UINT32_MAX}) != tag) continue;
    const uint32_t e = EntryOf(slots_[i]);
    if (scope_key_internal::Same(entries_[e].activity.subject, subject)) {
      return e;
    }
  }
  return kNone;
}

void SubjectCounter::InsertSlot(uint32_t entry) {
  if (entries_.size() * 2 > slots_.size()) GrowSlots();
  const size_t mask = slots_.size() - 1;
  const uint64_t slot = SlotOf(entries_[entry].hash, entry);
  size_t i = HomeOf(slot, mask);
  while (slots_[i] != 0) i = (i + 1) & mask;
  slots_[i] = slot;
}

void SubjectCounter::EraseSlot(uint32_t entry) {
  const size_t mask = slots_.size() - 1;
  const uint64_t slot = SlotOf(entries_[entry].hash, entry);
  size_t i = HomeOf(slot, mask);
  while (slots_[i] != slot) i = (i + 1) & mask;
  // Backward shift: move up each later entry of the run that may sit in
  // the hole (its home is not cyclically within (hole, its place]).
  for (size_t j = (i + 1) & mask; slots_[j] != 0; j = (j + 1) & mask) {
    if (((j - HomeOf(slots_[j], mask)) & mask) >= ((j - i) & mask)) {
      slots_[i] = slots_[j];
      i = j;
    }
  }
  slots_[i] = 0;
}

void SubjectCounter::GrowSlots() {
  std::vector<uint64_t> old = std::move(slots_);
  slots_.assign(std::max<size_t>(16, old.size() * 2), 0);
  const size_t mask = slots_.size() - 1;
  for (uint64_t s : old) {
    if (s == 0) continue;
    size_t i = HomeOf(s, mask);
    while (slots_[i] != 0) i = (i + 1) & mask;
    slots_[i] = s;
  }
}

uint32_t SubjectCounter::NewBucket(int64_t rank, uint32_t lower,
                                   uint32_t higher) {
  uint32_t b = free_bucket_;
  if (b != kNone) {
    free_bucket_ = buckets_[b].higher;
  } else {
    b = static_cast<uint32_t>(buckets_.size());
    buckets_.emplace_back();
  }
  buckets_[b] = Bucket{rank, kNone, kNone, lower, higher};
  (lower != kNone ? buckets_[lower].higher : lowest_) = b;
  (higher != kNone ? buckets_[higher].lower : highest_) = b;
  return b;
}

void SubjectCounter::Append(uint32_t e, uint32_t b) {
  Entry& entry = entries_[e];
  Bucket& bucket = buckets_[b];
  entry.bucket = b;
  entry.next = kNone;
  entry.prev = bucket.tail;
  (bucket.tail != kNone ? entries_[bucket.tail].next : bucket.head) = e;
  bucket.tail = e;
}

void SubjectCounter::Unlink(uint32_t e) {
  Entry& entry = entries_[e];
  const uint32_t b = entry.bucket;
  Bucket& bucket = buckets_[b];
  (entry.prev != kNone ? entries_[entry.prev].next : bucket.head) = entry.next;
  (entry.next != kNone ? entries_[entry.next].prev : bucket.tail) = entry.prev;
  entry.bucket = kNone;
  if (bucket.head != kNone) return;
  (bucket.lower != kNone ? buckets_[bucket.lower].higher : lowest_) =
      bucket.higher;
  (bucket.higher != kNone ? buckets_[bucket.higher].lower : highest_) =
      bucket.lower;
  bucket.higher = free_bucket_;
  free_bucket_ = b;
}

void SubjectCounter::BuildBuckets() {
  std::vector<uint32_t> order(entries_.size());
  for (uint32_t e = 0; e < order.size(); ++e) order[e] = e;
  std::sort(order.begin(), order.end(), [this](uint32_t x, uint32_t y) {
    const Entry& a = entries_[x];
    const Entry& b = entries_[y];
    const int64_t ra = RankOf(a.activity), rb = RankOf(b.activity);
    return ra != rb ? ra < rb : a.since < b.since;
  });
  for (uint32_t e : order) {
    const int64_t rank = RankOf(entries_[e].activity);
    const uint32_t top = highest_;
    Append(e, top != kNone && buckets_[top].rank == rank
                  ? top
                  : NewBucket(rank, top, kNone));
  }
  ranked_ = true;
}

void SubjectCounter::Record(const std::string& subject, bool granted,
                            int64_t tokens, int64_t usd_nano) {
  const uint64_t hash = scope_key_internal::HashBytes(subject);
  uint32_t e = Find(subject, hash);
  if (e == kNone) {
    int64_t inherited = 0;
    if (entries_.size() < capacity_) {
      e = static_cast<uint32_t>(entries_.size());
      entries_.emplace_back();
    } else {
      if (!ranked_) BuildBuckets();
      // Full: the lowest rank makes room, and the newcomer inherits it (it
      // may have been as busy as that before it was seen).
      e = buckets_[lowest_].head;
      inherited = buckets_[lowest_].rank;
      Unlink(e);
      EraseSlot(e);
    }
    Entry& entry = entries_[e];
    entry.hash = hash;
    SubjectActivity& fresh = entry.activity;
    fresh.subject.assign(subject);  // into the evicted name's storage
    fresh.grants = fresh.denials = fresh.tokens = fresh.usd_nano = 0;
    fresh.uncounted_max = inherited;
    InsertSlot(e);
    if (ranked_) {
      // `inherited` is the lowest rank there is (or 0, below every other).
      const uint32_t low = lowest_;
      Append(e, low != kNone && buckets_[low].rank == inherited
                    ? low
                    : NewBucket(inherited, kNone, low));
    }
  }
  Entry& entry = entries_[e];
  SubjectActivity& a = entry.activity;
  if (granted) {
    a.grants = sat::SatAdd(a.grants, 1);
    a.tokens = sat::SatAdd(a.tokens, std::max<int64_t>(0, tokens));
    a.usd_nano = sat::SatAdd(a.usd_nano, std::max<int64_t>(0, usd_nano));
  } else {
    a.denials = sat::SatAdd(a.denials, 1);
  }
  if (!ranked_) {
    entry.since = ++records_;
    return;
  }
  const int64_t rank = RankOf(a);
  const uint32_t b = entry.bucket;
  if (rank == buckets_[b].rank) return;  // saturated
  // One up: the next bucket (ranks go up by one, so the next bucket's rank
  // is this one or higher), or a new one just after this.
  const uint32_t up = buckets_[b].higher;
  if (up != kNone && buckets_[up].rank == rank) {
    Unlink(e);
    Append(e, up);
  } else if (buckets_[b].head == e && buckets_[b].tail == e) {
    buckets_[b].rank = rank;  // alone: its bucket moves up in place
  } else {
    Unlink(e);  // `b` keeps its other entries
    Append(e, NewBucket(rank, b, up));
  }
}

std::vector<SubjectActivity> SubjectCounter::Top(
    size_t limit, const std::function<bool(const std::string&)>& keep) const {
  auto busier = [](const SubjectActivity* x, const SubjectActivity* y) {
    if (x->activity() != y->activity()) return x->activity() > y->activity();
    return x->subject < y->subject;
  };
  // Activity never exceeds rank, so walk the ranks from the top and stop
  // once no lower rank can beat the least busy of the `limit` found: a
  // query costs about `limit` steps, not the whole table (once ranked:
  // before the first eviction it scans every entry).
  std::vector<const SubjectActivity*> best;  // a heap, least busy in front
  if (limit == 0) return {};
  auto consider = [&](const SubjectActivity& a) {
    if (keep && !keep(a.subject)) return;
    if (best.size() < limit) {
      best.push_back(&a);
      std::push_heap(best.begin(), best.end(), busier);
    } else if (busier(&a, best.front())) {
      std::pop_heap(best.begin(), best.end(), busier);
      best.back() = &a;
      std::push_heap(best.begin(), best.end(), busier);
    }
  };
  if (!ranked_) {  // no buckets yet: every entry
    for (const Entry& e : entries_) consider(e.activity);
  } else {
    for (uint32_t b = highest_; b != kNone; b = buckets_[b].lower) {
      if (best.size() == limit &&
          buckets_[b].rank < best.front()->activity()) {
        break;
      }
      for (uint32_t e = buckets_[b].head; e != kNone; e = entries_[e].next) {
        consider(entries_[e].activity);
      }
    }
  }
  std::sort(best.begin(), best.end(), busier);
  std::vector<SubjectActivity> out;
  out.reserve(best.size());
  for (const SubjectActivity* a : best) out.push_back(*a);
  return out;
}

TopTracker::TopTracker(size_t capacity_per_kind)
    : users_(capacity_per_kind),
      tasks_(capacity_per_kind),
      resources_(capacity_per_kind) {}

void TopTracker::Record(const AcquireRequest& request, bool granted,
                        int64_t usd_nano) {
  const int64_t tokens = granted ? request.tokens : 0;
  if (!request.user.empty()) {
    users_.Record(request.user, granted, tokens, usd_nano);
  }
  if (!request.task.empty()) {
    tasks_.Record(request.task, granted, tokens, usd_nano);
  }
  if (!request.resource.empty()) {
    resources_.Record(request.resource, granted, tokens, usd_nano);
  }
}

const SubjectCounter& TopTracker::Of(TopKind kind) const {
  switch (kind) {
    case TopKind::kUser:
      return users_;
    case TopKind::kTask:
      return tasks_;
    case TopKind::kResource:
      break;
  }
  return resources_;
}

}  // namespace brake
