#include "cluster/shares.h"

#include <algorithm>
#include <utility>

namespace brake::cluster {

Share* Shares::Open(const std::string& key, ShareKind kind, int64_t capacity) {
  auto it = by_key_.find(key);
  if (it == by_key_.end()) {
    it = by_key_.emplace(key, std::make_unique<Share>(key, kind, capacity)).first;
  }
  it->second->Ref();
  return it->second.get();
}

void Shares::Release(Share* share) {
  share->Unref();
  if (share->closed()) NoteDue(share);
}

Share* Shares::Find(const std::string& key) {
  auto it = by_key_.find(key);
  return it == by_key_.end() ? nullptr : it->second.get();
}

void Shares::NoteShort(Share* share) {
  short_ = true;
  NoteDue(share);
}

void Shares::NoteDue(Share* share) {
  if (std::find(urgent_.begin(), urgent_.end(), share) == urgent_.end()) {
    urgent_.push_back(share);
  }
}

void Shares::Due(int64_t now_us, bool scan_all, std::vector<Share*>* due) {
  due->clear();
  if (!scan_all) {
    for (Share* s : urgent_) {
      if (s->Wants(now_us, tuning_)) due->push_back(s);
    }
    urgent_.clear();
    return;
  }
  urgent_.clear();
  for (auto it = by_key_.begin(); it != by_key_.end();) {
    Share* s = it->second.get();
    if (s->Wants(now_us, tuning_)) {
      due->push_back(s);
    } else if (s->closed() && !s->in_flight()) {
      std::erase(urgent_, s);
      it = by_key_.erase(it);
      continue;
    }
    ++it;
  }
}

}  // namespace brake::cluster
