// Shares: every Share this daemon holds, by Redis key.
//
// SharedLimiter (shared_limiter.h) opens a share for each shared limit of a
// subject and closes it when the limiter goes; a closed share gives back
// what it holds and is then forgotten. The cluster link asks Due() which
// shares want a script call now. A decision that found a slice short marks
// the registry (TakeShort), so that the daemon holds the request until the
// call answers instead of refusing it. Pure; loop thread only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "cluster/share.h"

namespace brake::cluster {

class Shares {
 public:
  explicit Shares(ShareTuning tuning = {}) : tuning_(tuning) {}

  // The share under `key`, made when new, with one more user (Ref).
  // Stable until it is forgotten, which only Due() does, for a closed one.
  Share* Open(const std::string& key, ShareKind kind, int64_t capacity);
  // One user fewer: a share with none gives back what it holds.
  void Release(Share* share);
  // The share under `key`, or nullptr.
  Share* Find(const std::string& key);

  // A decision found `share` short: the daemon holds the request.
  void NoteShort(Share* share);
  // `share` wants a call soon (a debt to report), without holding anyone.
  void NoteDue(Share* share);
  // Whether a decision found a share short since the last call; clears it.
  bool TakeShort() {
    bool s = short_;
    short_ = false;
    return s;
  }
  // Shares marked short since the last Due.
  bool urgent() const { return !urgent_.empty(); }

  // The shares that want a call now (Share::Wants), into `due`. With
  // `scan_all` every share is looked at (renewals, give-backs once idle);
  // otherwise only those marked short. Forgets closed shares that hold
  // nothing and have no call in flight.
  void Due(int64_t now_us, bool scan_all, std::vector<Share*>* due);

  const ShareTuning& tuning() const { return tuning_; }
  size_t size() const { return by_key_.size(); }
  template <typename Fn>
  void ForEach(Fn fn) const {
    for (const auto& [key, share] : by_key_) fn(static_cast<const Share&>(*share));
  }
  template <typename Fn>
  void ForEachMutable(Fn fn) {
    for (auto& [key, share] : by_key_) fn(*share);
  }

 private:
  ShareTuning tuning_;
  std::unordered_map<std::string, std::unique_ptr<Share>> by_key_;
  std::vector<Share*> urgent_;
  bool short_ = false;
};

}  // namespace brake::cluster
