#include "daemon/top_tracker.h"

#include <algorithm>

#include "budget/pricing.h"  // SaturatingAdd

namespace brake {

SubjectCounter::SubjectCounter(size_t capacity)
    : capacity_(std::max<size_t>(1, capacity)) {}

void SubjectCounter::Link(Entry* e, int64_t rank, Buckets::iterator hint) {
  Buckets::iterator b = hint != buckets_.end() && hint->first == rank
                            ? hint
                            : buckets_.emplace_hint(hint, rank, Bucket{});
  e->bucket = b;
  e->next = nullptr;
  e->prev = b->second.tail;
  if (e->prev != nullptr) {
    e->prev->next = e;
  } else {
    b->second.head = e;
  }
  b->second.tail = e;
}

void SubjectCounter::Unlink(Entry* e) {
  Bucket& b = e->bucket->second;
  (e->prev != nullptr ? e->prev->next : b.head) = e->next;
  (e->next != nullptr ? e->next->prev : b.tail) = e->prev;
  if (b.head == nullptr) buckets_.erase(e->bucket);
}

void SubjectCounter::Record(const std::string& subject, bool granted,
                            int64_t tokens, int64_t usd_nano) {
  auto it = by_subject_.find(subject);
  if (it == by_subject_.end()) {
    int64_t inherited = 0;
    if (by_subject_.size() >= capacity_) {
      // Full: the lowest rank makes room, and the newcomer inherits it (it
      // may have been as busy as that before it was seen).
      Entry* gone = buckets_.begin()->second.head;
      inherited = buckets_.begin()->first;
      Unlink(gone);
      by_subject_.erase(by_subject_.find(gone->activity.subject));
    }
    it = by_subject_.emplace(subject, Entry{}).first;
    it->second.activity.subject = subject;
    it->second.activity.uncounted_max = inherited;
    Link(&it->second, inherited, buckets_.lower_bound(inherited));
  }
  Entry& e = it->second;
  SubjectActivity& a = e.activity;
  if (granted) {
    a.grants = SaturatingAdd(a.grants, 1);
    a.tokens = SaturatingAdd(a.tokens, std::max<int64_t>(0, tokens));
    a.usd_nano = SaturatingAdd(a.usd_nano, std::max<int64_t>(0, usd_nano));
  } else {
    a.denials = SaturatingAdd(a.denials, 1);
  }
  const int64_t rank = RankOf(a);
  if (rank == e.bucket->first) return;  // saturated
  // One up: the next bucket, or a new one just after this.
  Buckets::iterator next = std::next(e.bucket);
  if (e.bucket->second.head == &e && e.bucket->second.tail == &e &&
      (next == buckets_.end() || next->first > rank)) {
    // Alone in its bucket, and no bucket has the new rank: the bucket
    // takes the new rank (its node moved, nothing allocated), staying in
    // order between its neighbours.
    auto node = buckets_.extract(e.bucket);
    node.key() = rank;
    e.bucket = buckets_.insert(next, std::move(node));
    return;
  }
  Unlink(&e);
  Link(&e, rank, next);
}

std::vector<SubjectActivity> SubjectCounter::Top(
    size_t limit, const std::function<bool(const std::string&)>& keep) const {
  auto busier = [](const SubjectActivity* x, const SubjectActivity* y) {
    if (x->activity() != y->activity()) return x->activity() > y->activity();
    return x->subject < y->subject;
  };
  // Activity never exceeds rank, so walk the ranks from the top and stop
  // once no lower rank can beat the least busy of the `limit` found: a
  // query costs about `limit` steps, not the whole table.
  std::vector<const SubjectActivity*> best;  // a heap, least busy in front
  if (limit == 0) return {};
  for (auto r = buckets_.rbegin(); r != buckets_.rend(); ++r) {
    if (best.size() == limit && r->first < best.front()->activity()) break;
    for (const Entry* e = r->second.head; e != nullptr; e = e->next) {
      const SubjectActivity& a = e->activity;
      if (keep && !keep(a.subject)) continue;
      if (best.size() < limit) {
        best.push_back(&a);
        std::push_heap(best.begin(), best.end(), busier);
      } else if (busier(&a, best.front())) {
        std::pop_heap(best.begin(), best.end(), busier);
        best.back() = &a;
        std::push_heap(best.begin(), best.end(), busier);
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
