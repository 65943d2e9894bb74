#include "budget/subject_table.h"

#include <algorithm>
#include <utility>

#include "common/line_pool.h"

namespace brake {
namespace {

constexpr std::string_view kTaskPrefix = "task:";


// Unused since before `cutoff_us`, holding no open lease and no change
// storage has not taken; never "global".
bool Evictable(const std::string& scope, const Subject& s, int64_t cutoff_us) {
  return s.leases == 0 && s.used_us < cutoff_us && !s.unsaved() &&
         scope != "global";
}

}  // namespace

bool SubjectTable::IsSubject(const std::string& scope) {
  return !(scope.size() >= 2 && scope.compare(scope.size() - 2, 2, ":*") == 0);
}

bool SubjectTable::NeedsLoad(const std::string& scope) const {
  return IsSubject(scope) && stored_.MaybeContains(scope) &&
         table_.find(scope) == nullptr;
}

SubjectEntry* SubjectTable::UseEntry(std::string_view prefix,
                                     std::string_view name, int64_t now_us) {
  auto* e = table_.find(ScopeRef{prefix, name});
  if (e == nullptr) {
    std::string scope;
    scope.reserve(prefix.size() + name.size());
    scope.append(prefix).append(name);
    e = table_.Insert(std::move(scope));
  }
  Subject& s = e->second;
  s.used_us = std::max(s.used_us, now_us);
  return e;
}

void SubjectTable::SetTaskRecord(Subject& s, TaskInfo record) {
  if (!s.has_task) ++task_count_;
  // Its user's subject when in memory (a grant has just used it; a load
  // brings it with the task), so that its first decision finds it cached.
  auto* user = table_.find(ScopeRef{"user:", record.user});
  s.owner = user != nullptr ? CachedSubject{epoch_, user} : CachedSubject{};
  s.task = std::move(record);
  s.has_task = true;
}

Resident SubjectTable::TaskSubject(std::string_view name) {
  auto* e = table_.find(ScopeRef{kTaskPrefix, name});
  if (e == nullptr || !e->second.has_task) return Resident{};
  return Resident::Of(e);
}

const TaskInfo* SubjectTable::FindTask(std::string_view name) const {
  const auto* e = table_.find(ScopeRef{kTaskPrefix, name});
  return e == nullptr ? nullptr : e->second.record();
}

Resident SubjectTable::Use(CachedSubject& cache, std::string_view prefix,
                             std::string_view name, int64_t now_us) {
  if (cache.epoch != epoch_) {
    cache.entry = UseEntry(prefix, name, now_us);
    cache.epoch = epoch_;
  } else {
    Subject& s = cache.entry->second;
    s.used_us = std::max(s.used_us, now_us);
  }
  return Resident::Of(cache.entry);
}

Status SubjectTable::UseRequestSubjects(const AcquireRequest& req,
                                        Resident task, int64_t now_us,
                                        std::vector<Resident>* out) {
  // The ancestors first, so that a tree too deep changes nothing: the
  // recorded parent chain, or for a new task the named parent, up to the
  // first task not in memory.
  std::vector<Ancestor>& ancestors = scratch_ancestors_;
  ancestors.clear();
  const std::string* parent =
      task.subject != nullptr ? &task.subject->task.parent : &req.parent;
  while (!parent->empty()) {
    if (ancestors.size() >= kMaxTaskDepth) {
      return Status::BadRequest("parent: task tree deeper than " +
                                std::to_string(kMaxTaskDepth));
    }
    Resident up = TaskSubject(*parent);
    ancestors.push_back(Ancestor{parent, up});
    if (up.subject == nullptr) break;
    parent = &up.subject->task.parent;
  }
  // A known task keeps its user's subject (every task of a request's chain
  // belongs to the request's user).
  auto touch = [now_us](Resident r) {
    r.subject->used_us = std::max(r.subject->used_us, now_us);
    return r;
  };
  out->clear();
  out->push_back(Use(global_, "", "global", now_us));
  if (task.subject != nullptr) {
    out->push_back(Use(task.subject->owner, "user:", req.user, now_us));
    out->push_back(touch(task));
  } else {
    out->push_back(Use("user:", req.user, now_us));
    out->push_back(Use(kTaskPrefix, req.task, now_us));
  }
  for (const Ancestor& a : ancestors) {
    out->push_back(a.task.subject != nullptr
                       ? touch(a.task)
                       : Use(kTaskPrefix, *a.name, now_us));
  }
  if (!req.resource.empty()) {
    out->push_back(Use("resource:", req.resource, now_us));
  }
  return Status::Ok();
}

void SubjectTable::Prefetch(std::string_view task) {
  // Each stage acts on a request announced some calls ago and reads only
  // what the stage before brought in: the slot (now), the entry (kEntry
  // calls on), its limiters and its user (kLimiters), limiters kept in a
  // heap array (kHeapLimiters); the decision comes kPrefetchAhead calls on.
  // The slot gets the longest: a large table's slot is a miss behind
  // nested page tables (docs/DESIGN.md, "Subjects in memory").
  constexpr uint32_t kEntry = kPrefetchAhead / 2;
  constexpr uint32_t kLimiters = kEntry + kPrefetchAhead / 4;
  constexpr uint32_t kHeapLimiters = kPrefetchAhead - 1;
  static_assert(kEntry < kLimiters && kLimiters < kHeapLimiters);
  const uint32_t now = prefetch_next_++;
  auto ago = [&](uint32_t calls) -> Prefetching& {
    return prefetch_ring_[(now - calls) % kPrefetchRing];
  };
  auto found = [&](const Prefetching& p) -> const Subject* {
    const auto* e = CurrentEntry(p);
    return e == nullptr ? nullptr : &e->second;
  };
  Prefetching& fresh = ago(0);
  fresh.hash = decltype(table_)::Hash(ScopeRef{kTaskPrefix, task});
  fresh.entry = nullptr;
  table_.PrefetchSlot(fresh.hash);

  Prefetching& slot_in = ago(kEntry);  // its slot is in cache: the entry
  if (auto* e = table_.Hinted(slot_in.hash)) {
    slot_in.entry = e;
    slot_in.epoch = epoch_;
    // What a decision reads: through the length of its task's parent, in
    // libstdc++ the 16th byte of the string (Subject), its second line.
    const char* p = reinterpret_cast<const char*>(e);
    const char* end =
        reinterpret_cast<const char*>(&e->second.task.parent) + 16;
    for (; p < end; p += LinePool::kLine) __builtin_prefetch(p);
  }
  // The entry is in cache: its limiters (or their array), and its user's
  // subject. A limiter starts a line (LinePool), and a token bucket is one.
  auto limiter = [](const Limiter* l) { __builtin_prefetch(l); };
  if (const Subject* s = found(ago(kLimiters))) {
    if (s->limiters.in_place()) {
      for (const auto& l : s->limiters) limiter(l.get());
    } else {
      __builtin_prefetch(s->limiters.data());
    }
    if (Current(s->owner)) {
      __builtin_prefetch(&s->owner.entry->second);
    }
  }
  const Subject* s = found(ago(kHeapLimiters));
  if (s != nullptr && !s->limiters.in_place()) {  // the limiters themselves
    for (const auto& l : s->limiters) limiter(l.get());
  }
}

Resident SubjectTable::AnnouncedTask(std::string_view name) {
  const Prefetching& p =
      prefetch_ring_[(prefetch_next_ - 1 - kPrefetchAhead) % kPrefetchRing];
  // Its entry may hold another key of the same hash: the key decides.
  auto* e = CurrentEntry(p);
  if (e != nullptr && e->second.has_task &&
      ScopeEq{}(ScopeRef{kTaskPrefix, name}, std::string_view(e->first))) {
    ++prefetched_decisions_;
    return Resident::Of(e);
  }
  return TaskSubject(name);
}

bool SubjectTable::AllResident(const AcquireRequest& req,
                         const Subject* task) const {
  if (task == nullptr || !task->has_task) return false;
  // A current cache of its owner: the user's subject is in memory.
  return Current(task->owner) && task->task.parent.empty() &&
         req.resource.empty() && OwnedBy(*task, req.user);
}

std::vector<std::string> SubjectTable::MissingFor(const AcquireRequest& req) const {
  std::vector<std::string> out;
  if (stored_.empty()) return out;  // nothing was ever stored or evicted
  // Memory first (the decision reads the same entries next), then the
  // filter: a subject in neither was never stored. No string is built
  // unless one is missing.
  auto find = [this](std::string_view prefix, std::string_view name) {
    const auto* e = table_.find(ScopeRef{prefix, name});
    return e != nullptr ? &e->second : nullptr;
  };
  auto need = [&](std::string_view prefix, const std::string& name) {
    if (stored_.MaybeContains(prefix, name)) {
      out.push_back(std::string(prefix) + name);
    }
  };
  const Subject* task = find(kTaskPrefix, req.task);
  if (AllResident(req, task)) return out;
  if (find("user:", req.user) == nullptr) need("user:", req.user);
  if (task == nullptr) need(kTaskPrefix, req.task);
  if (!req.resource.empty() && find("resource:", req.resource) == nullptr) {
    need("resource:", req.resource);
  }
  // The ancestors in memory, up to the first that is not.
  const std::string* parent =
      task != nullptr && task->has_task ? &task->task.parent : &req.parent;
  for (size_t depth = 0; !parent->empty() && depth < kMaxTaskDepth;
       ++depth) {
    const Subject* p = find(kTaskPrefix, *parent);
    if (p == nullptr || !p->has_task) {
      if (p == nullptr) need(kTaskPrefix, *parent);
      break;
    }
    parent = &p->task.parent;
  }
  return out;
}

bool SubjectTable::AddsSubjects(const AcquireRequest& req) const {
  auto absent = [this](std::string scope) {
    return table_.find(scope) == nullptr;
  };
  return absent("user:" + req.user) || absent("task:" + req.task) ||
         (!req.resource.empty() && absent("resource:" + req.resource));
}

std::vector<std::string> SubjectTable::MissingForScope(
    const std::string& scope) const {
  std::vector<std::string> out;
  if (NeedsLoad(scope)) out.push_back(scope);
  if (scope.rfind(kTaskPrefix, 0) != 0) return out;
  const TaskInfo* task =
      FindTask(std::string_view(scope).substr(kTaskPrefix.size()));
  if (task == nullptr) return out;
  const std::string* parent = &task->parent;
  for (size_t depth = 0; !parent->empty() && depth < kMaxTaskDepth;
       ++depth) {
    const TaskInfo* p = FindTask(*parent);
    if (p == nullptr) {
      if (std::string s = "task:" + *parent; NeedsLoad(s)) out.push_back(s);
      break;
    }
    parent = &p->parent;
  }
  return out;
}

void SubjectTable::Evict(const std::string& scope) {
  auto* e = table_.find(scope);
  if (e == nullptr) return;
  if (e->second.has_task) --task_count_;
  stored_.Add(scope);
  table_.erase(e);
  ++epoch_;
  ++evictions_;
}

size_t SubjectTable::EvictIdle(int64_t now_us, int64_t idle_us, size_t max_scan) {
  if (table_.empty()) return 0;
  const int64_t cutoff = now_us - idle_us;
  std::vector<std::string> victims;
  const size_t slots = table_.slot_count();
  for (size_t n = 0; n < max_scan && n < slots; ++n) {
    const auto* e = table_.At(evict_cursor_++ % slots);
    if (e != nullptr && Evictable(e->first, e->second, cutoff)) {
      victims.push_back(e->first);
    }
  }
  evict_cursor_ %= slots;
  for (const std::string& scope : victims) Evict(scope);
  return victims.size();
}

}  // namespace brake
