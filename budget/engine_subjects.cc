// Engine residency: which subjects are in memory, evicting the idle ones and
// installing those loaded back on demand. Split from engine.cc; same class.
#include <algorithm>
#include <unordered_set>

#include "budget/engine.h"

namespace brake {
namespace {

constexpr std::string_view kTaskPrefix = "task:";
constexpr size_t kMaxAncestorWalk = 32;

// "global" and concrete scopes; not the "KIND:*" defaults.
bool IsSubject(const std::string& scope) {
  return !(scope.size() >= 2 && scope.compare(scope.size() - 2, 2, ":*") == 0);
}

}  // namespace

bool Engine::NeedsLoad(const std::string& scope) const {
  return IsSubject(scope) && stored_.MaybeContains(scope) &&
         subjects_.find(scope) == subjects_.end();
}

Engine::Resident Engine::Use(std::string_view prefix, std::string_view name,
                             int64_t now_us) {
  auto it = subjects_.find(ScopeRef{prefix, name});
  if (it == subjects_.end()) {
    std::string scope;
    scope.reserve(prefix.size() + name.size());
    scope.append(prefix).append(name);
    it = subjects_.emplace(std::move(scope), Subject{}).first;
  }
  Subject& s = it->second;
  s.used_us = std::max(s.used_us, now_us);
  return Resident{&it->first, &s};
}

Engine::Resident Engine::Use(CachedSubject& cache, std::string_view prefix,
                             std::string_view name, int64_t now_us) {
  if (cache.epoch != subject_epoch_) {
    cache.resident = Use(prefix, name, now_us);
    cache.epoch = subject_epoch_;
    return cache.resident;
  }
  Subject& s = *cache.resident.subject;
  s.used_us = std::max(s.used_us, now_us);
  return cache.resident;
}

Status Engine::UseSubjects(const AcquireRequest& req, TaskInfo* task,
                           int64_t now_us, std::vector<Resident>* out) {
  // The ancestors first, so that a tree too deep changes nothing: the
  // recorded parent chain, or for a new task the named parent, up to the
  // first task not in memory.
  std::vector<Ancestor>& ancestors = scratch_ancestors_;
  ancestors.clear();
  const std::string* parent = task != nullptr ? &task->parent : &req.parent;
  while (!parent->empty()) {
    if (ancestors.size() >= kMaxAncestorWalk) {
      return Status::BadRequest("parent: task tree deeper than " +
                                std::to_string(kMaxAncestorWalk));
    }
    auto it = tasks_.find(*parent);
    ancestors.push_back(
        Ancestor{parent, it == tasks_.end() ? nullptr : &it->second});
    if (it == tasks_.end()) break;
    parent = &it->second.parent;
  }
  // A known task keeps its own subject and its user's (every task of a
  // request's chain belongs to the request's user).
  out->clear();
  out->push_back(Use(global_, "", "global", now_us));
  if (task != nullptr) {
    out->push_back(Use(task->owner, "user:", req.user, now_us));
    out->push_back(Use(task->self, kTaskPrefix, req.task, now_us));
  } else {
    out->push_back(Use("user:", req.user, now_us));
    out->push_back(Use(kTaskPrefix, req.task, now_us));
  }
  for (const Ancestor& a : ancestors) {
    out->push_back(a.info != nullptr
                       ? Use(a.info->self, kTaskPrefix, *a.name, now_us)
                       : Use(kTaskPrefix, *a.name, now_us));
  }
  if (!req.resource.empty()) {
    out->push_back(Use("resource:", req.resource, now_us));
  }
  return Status::Ok();
}

std::vector<std::string> Engine::MissingFor(const AcquireRequest& req) const {
  std::vector<std::string> out;
  if (stored_.empty()) return out;  // nothing was ever stored or evicted
  // The filter first: most subjects were never stored, and asking it needs
  // no string built.
  auto need = [&](std::string_view prefix, const std::string& name) {
    if (!stored_.MaybeContains(prefix, name)) return;
    std::string scope = std::string(prefix) + name;
    if (subjects_.find(scope) == subjects_.end()) {
      out.push_back(std::move(scope));
    }
  };
  need("user:", req.user);
  need("task:", req.task);
  if (!req.resource.empty()) need("resource:", req.resource);
  // The ancestors in memory, up to the first that is not.
  auto it = tasks_.find(req.task);
  const std::string* parent =
      it != tasks_.end() ? &it->second.parent : &req.parent;
  for (size_t depth = 0; !parent->empty() && depth < kMaxAncestorWalk;
       ++depth) {
    auto p = tasks_.find(*parent);
    if (p == tasks_.end()) {
      need("task:", *parent);
      break;
    }
    parent = &p->second.parent;
  }
  return out;
}

bool Engine::AddsSubjects(const AcquireRequest& req) const {
  auto absent = [this](std::string scope) {
    return subjects_.find(scope) == subjects_.end();
  };
  return absent("user:" + req.user) || absent("task:" + req.task) ||
         (!req.resource.empty() && absent("resource:" + req.resource));
}

std::vector<std::string> Engine::MissingForScope(
    const std::string& scope) const {
  std::vector<std::string> out;
  if (NeedsLoad(scope)) out.push_back(scope);
  if (scope.rfind(kTaskPrefix, 0) != 0) return out;
  auto it = tasks_.find(scope.substr(kTaskPrefix.size()));
  if (it == tasks_.end()) return out;
  std::string parent = it->second.parent;
  for (size_t depth = 0; !parent.empty() && depth < kMaxAncestorWalk;
       ++depth) {
    auto p = tasks_.find(parent);
    if (p == tasks_.end()) {
      if (std::string s = "task:" + parent; NeedsLoad(s)) out.push_back(s);
      break;
    }
    parent = p->second.parent;
  }
  return out;
}

void Engine::RestoreSubjects(const SubjectRows& rows, int64_t now_us) {
  // Only subjects not in memory take the stored rows: the others have
  // changed since and are newer.
  std::unordered_set<std::string> fresh;
  for (const std::string& scope : rows.scopes) {
    if (!IsSubject(scope) || subjects_.count(scope)) continue;
    fresh.insert(scope);
    Use("", scope, now_us);
  }
  for (const TaskRow& row : rows.tasks) {
    if (fresh.count(std::string(kTaskPrefix) + row.task)) RestoreTask(row);
  }
  for (const LimiterRow& row : rows.limiters) {
    if (fresh.count(row.scope)) RestoreLimiter(row, now_us);
  }
  for (const SpendRow& row : rows.spend) {
    if (fresh.count(row.scope)) RestoreSpend(row);
  }
}

bool Engine::Evictable(const std::string& scope, const Subject& s,
                       int64_t cutoff_us) const {
  if (s.leases > 0 || s.used_us >= cutoff_us || scope == "global") {
    return false;
  }
  if (s.spend_unsaved || s.limiters_unsaved) return false;
  return !(scope.rfind(kTaskPrefix, 0) == 0 &&
           dirty_tasks_.count(scope.substr(kTaskPrefix.size())));
}

void Engine::Evict(const std::string& scope) {
  if (scope.rfind(kTaskPrefix, 0) == 0) {
    tasks_.erase(scope.substr(kTaskPrefix.size()));
  }
  stored_.Add(scope);
  subjects_.erase(scope);
  ++subject_epoch_;
  ++evictions_;
}

size_t Engine::EvictIdle(int64_t now_us, int64_t idle_us, size_t max_scan) {
  if (subjects_.empty()) return 0;
  const int64_t cutoff = now_us - idle_us;
  std::vector<std::string> victims;
  const size_t buckets = subjects_.bucket_count();
  for (size_t n = 0; n < max_scan && n < buckets; ++n) {
    const size_t b = evict_cursor_++ % buckets;
    for (auto it = subjects_.begin(b); it != subjects_.end(b); ++it) {
      if (Evictable(it->first, it->second, cutoff)) {
        victims.push_back(it->first);
      }
    }
  }
  evict_cursor_ %= buckets;
  for (const std::string& scope : victims) Evict(scope);
  return victims.size();
}

}  // namespace brake
