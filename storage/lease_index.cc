#include "storage/lease_index.h"

namespace brake::storage {
namespace {

// How far past either end of its ring a number may land and still be held
// by it (the empty slots between cost 16 bytes each).
constexpr uint64_t kMaxGap = 4096;

}  // namespace

bool LeaseIndex::Split(std::string_view id, std::string_view* prefix,
                       uint64_t* number) {
  size_t start = id.size();
  while (start > 0 && id[start - 1] >= '0' && id[start - 1] <= '9') --start;
  const size_t digits = id.size() - start;
  if (digits == 0 || digits > 18 || id[start] == '0') return false;
  uint64_t n = 0;
  for (size_t i = start; i < id.size(); ++i) n = n * 10 + (id[i] - '0');
  *prefix = id.substr(0, start);
  *number = n;
  return true;
}

LeaseIndex::Ring* LeaseIndex::RingOf(std::string_view prefix, bool create) {
  if (last_ring_ != nullptr && last_prefix_ == prefix) return last_ring_;
  auto it = rings_.find(std::string(prefix));
  if (it == rings_.end()) {
    if (!create) return nullptr;
    it = rings_.emplace(std::string(prefix), Ring{}).first;
  }
  last_prefix_.assign(prefix);
  last_ring_ = &it->second;
  return last_ring_;
}

LeasePos* LeaseIndex::Slot(Ring& ring, uint64_t number, bool grow) {
  if (ring.slots.empty()) {
    if (!grow) return nullptr;
    ring.base = number;
    ring.slots.emplace_back();
    return &ring.slots.front();
  }
  if (number < ring.base) {
    if (!grow || ring.base - number > kMaxGap) return nullptr;
    ring.slots.insert(ring.slots.begin(), ring.base - number, LeasePos{});
    ring.base = number;
    return &ring.slots.front();
  }
  const uint64_t i = number - ring.base;
  if (i >= ring.slots.size()) {
    if (!grow || i - ring.slots.size() > kMaxGap) return nullptr;
    ring.slots.resize(i + 1);
  }
  return &ring.slots[i];
}

std::optional<LeasePos> LeaseIndex::Find(std::string_view id) const {
  std::string_view prefix;
  uint64_t n = 0;
  if (Split(id, &prefix, &n)) {
    // const: RingOf only fills its cache.
    Ring* ring = const_cast<LeaseIndex*>(this)->RingOf(prefix, false);
    if (ring != nullptr) {
      if (LeasePos* p = Slot(*ring, n, false); p != nullptr && p->chunk != 0) {
        return *p;
      }
    }
  }
  if (other_.empty()) return std::nullopt;
  auto it = other_.find(std::string(id));
  if (it == other_.end()) return std::nullopt;
  return it->second;
}

void LeaseIndex::Set(std::string_view id, std::optional<LeasePos> pos) {
  std::string_view prefix;
  uint64_t n = 0;
  LeasePos* slot = nullptr;
  Ring* ring = nullptr;
  if (Split(id, &prefix, &n) && (ring = RingOf(prefix, pos.has_value()))) {
    slot = Slot(*ring, n, pos.has_value());
  }
  if (!other_.empty()) {
    if (auto it = other_.find(std::string(id)); it != other_.end()) {
      other_.erase(it);
      --size_;
    }
  }
  if (slot != nullptr && slot->chunk != 0) {
    *slot = LeasePos{};
    --size_;
  }
  if (pos) {
    if (slot != nullptr) {
      *slot = *pos;
    } else {
      other_[std::string(id)] = *pos;
    }
    ++size_;
  }
  if (ring != nullptr) {
    // Settled at either end: the ring shrinks (the front as the oldest
    // leases settle, which keeps it about as long as what is open).
    while (!ring->slots.empty() && ring->slots.front().chunk == 0) {
      ring->slots.pop_front();
      ++ring->base;
    }
    while (!ring->slots.empty() && ring->slots.back().chunk == 0) {
      ring->slots.pop_back();
    }
  }
}

void LeaseIndex::clear() {
  rings_.clear();
  last_prefix_.clear();
  last_ring_ = nullptr;
  other_.clear();
  size_ = 0;
}

}  // namespace brake::storage
