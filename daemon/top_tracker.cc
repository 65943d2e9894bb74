#include "daemon/top_tracker.h"

#include <algorithm>

#include "budget/pricing.h"  // SaturatingAdd

namespace brake {

SubjectCounter::SubjectCounter(size_t capacity)
    : capacity_(std::max<size_t>(1, capacity)) {}

void SubjectCounter::Record(const std::string& subject, bool granted,
                            int64_t tokens, int64_t usd_nano) {
  auto it = by_subject_.find(subject);
  if (it == by_subject_.end()) {
    int64_t inherited = 0;
    if (by_subject_.size() >= capacity_) {
      // Full: the lowest rank makes room, and the newcomer inherits it (it
      // may have been as busy as that before it was seen).
      auto lowest = by_rank_.begin();
      inherited = lowest->first;
      std::string gone(lowest->second);
      by_rank_.erase(lowest);
      by_subject_.erase(gone);
    }
    it = by_subject_.emplace(subject, SubjectActivity{}).first;
    it->second.subject = subject;
    it->second.uncounted_max = inherited;
    by_rank_.emplace(RankOf(it->second), it->first);
  }
  SubjectActivity& a = it->second;
  // Re-key the rank in place: extract and reinsert the same node, so a
  // known subject costs no allocation.
  auto node = by_rank_.extract(Rank{RankOf(a), it->first});
  if (granted) {
    a.grants = SaturatingAdd(a.grants, 1);
    a.tokens = SaturatingAdd(a.tokens, std::max<int64_t>(0, tokens));
    a.usd_nano = SaturatingAdd(a.usd_nano, std::max<int64_t>(0, usd_nano));
  } else {
    a.denials = SaturatingAdd(a.denials, 1);
  }
  node.value().first = RankOf(a);
  by_rank_.insert(std::move(node));
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
  for (auto r = by_rank_.rbegin(); r != by_rank_.rend(); ++r) {
    if (best.size() == limit && r->first < best.front()->activity()) break;
    const SubjectActivity& a = by_subject_.at(std::string(r->second));
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
