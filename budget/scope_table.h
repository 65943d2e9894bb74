// ScopeTable: the engine's subjects by scope, an open-addressing hash table
// whose lookups can be prefetched.
//
// Each entry (its scope and its value) is allocated on its own, from
// LinePool (so it starts a cache line), and never moves while it is in the
// table: the engine and open leases hold pointers to them. The table itself
// is an array of slots, each the entry's full hash beside a pointer to it,
// probed linearly; a probe compares hashes before it touches an entry, so
// finding one reads one slot's cache line (now and then the next) and the
// entry. Erasing shifts the following slots back (no tombstones).
//
// Why not std::unordered_map: its bucket holds the node *before* the first
// of the bucket, so a lookup reads three unrelated cache lines, and where a
// bucket's line is cannot be known without reading the map's internals, so
// it cannot be prefetched. With a million subjects each of those lines is a
// miss (docs/DESIGN.md, "Subjects in memory").
//
// Keys are found by anything ScopeHash and ScopeEq take (a scope, or a
// ScopeRef of kind and name). Not thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "budget/scope_key.h"
#include "common/huge_page_allocator.h"
#include "common/line_pool.h"

namespace brake {

template <class V>
class ScopeTable {
 public:
  struct Entry : LinePooled {  // starts a cache line
    const std::string first;  // the scope
    V second;
  };

  // The entry whose scope `key` is: `key` must be the address of an
  // entry's `first` (as a Resident's scope is), no lookup.
  static Entry* EntryOfKey(const std::string* key) {
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Winvalid-offsetof"
    constexpr size_t kKeyAt = offsetof(Entry, first);
#pragma GCC diagnostic pop
    return reinterpret_cast<Entry*>(
        reinterpret_cast<char*>(const_cast<std::string*>(key)) - kKeyAt);
  }

  ScopeTable() = default;
  ~ScopeTable() { clear(); }
  ScopeTable(const ScopeTable&) = delete;
  ScopeTable& operator=(const ScopeTable&) = delete;

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  // Slots, for a scan that resumes where it stopped (At).
  size_t slot_count() const { return slots_.size(); }
  Entry* At(size_t slot) const { return slots_[slot].entry; }

  template <class K>
  static uint64_t Hash(const K& key) {
    return ScopeHash{}(key);
  }

  // The entry of `key`, or nullptr.
  template <class K>
  Entry* find(const K& key) const {
    return FindHashed(key, Hash(key));
  }
  template <class K>
  Entry* FindHashed(const K& key, uint64_t hash) const {
    if (slots_.empty()) return nullptr;
    for (size_t i = hash & mask_;; i = (i + 1) & mask_) {
      const Slot& s = slots_[i];
      if (s.entry == nullptr) return nullptr;
      if (s.hash == hash && ScopeEq{}(key, std::string_view(s.entry->first)))
        return s.entry;
    }
  }
  template <class K>
  size_t count(const K& key) const {
    return find(key) != nullptr;
  }

  // For prefetching: starts loading the slot where the key of `hash` is
  // probed from; and (once that slot is in cache) the first entry whose
  // hash is `hash`, unchecked (it may hold another key), or nullptr.
  //
  // PrefetchSlot loads the next line of slots as well: at a load of about
  // half, one lookup in ten runs past its home slot's line, and Hinted
  // would wait there for a line nobody asked for (a miss on the decision's
  // path). With both lines in, one in a hundred does.
  void PrefetchSlot(uint64_t hash) const {
    if (slots_.empty()) return;
    const size_t i = hash & mask_;
    __builtin_prefetch(&slots_[i]);
    __builtin_prefetch(&slots_[((i | (kSlotsPerLine - 1)) + 1) & mask_]);
  }
  Entry* Hinted(uint64_t hash) const {
    if (slots_.empty()) return nullptr;
    for (size_t i = hash & mask_;; i = (i + 1) & mask_) {
      const Slot& s = slots_[i];
      if (s.entry == nullptr || s.hash == hash) return s.entry;
    }
  }

  // Adds `scope`, which must not be in the table, with a default value.
  Entry* Insert(std::string scope) {
    if ((size_ + 1) * 2 > slots_.size()) Grow();
    const uint64_t hash = Hash(scope);
    auto* e = new Entry{{}, std::move(scope), V{}};
    Place(Slot{hash, e});
    ++size_;
    return e;
  }
  // The value of `scope`, added when absent.
  V& operator[](const std::string& scope) {
    if (Entry* e = find(scope)) return e->second;
    return Insert(scope)->second;
  }

  // Removes and frees `e`, an entry of this table.
  void erase(Entry* e) {
    size_t i = Hash(e->first) & mask_;
    while (slots_[i].entry != e) i = (i + 1) & mask_;
    delete e;
    --size_;
    // Backward shift: move up each following entry that may sit at i.
    for (size_t j = (i + 1) & mask_; slots_[j].entry != nullptr;
         j = (j + 1) & mask_) {
      const size_t home = slots_[j].hash & mask_;
      // j's entry may move to i when its home is not in (i, j] (cyclic).
      const bool stays = i <= j ? (i < home && home <= j)
                                : (i < home || home <= j);
      if (stays) continue;
      slots_[i] = slots_[j];
      i = j;
    }
    slots_[i] = Slot{};
  }

  void clear() {
    for (Slot& s : slots_) {
      delete s.entry;
      s = Slot{};
    }
    size_ = 0;
  }

  // Every entry, in slot order (unspecified); no insert or erase meanwhile.
  class iterator {
   public:
    iterator(const ScopeTable* t, size_t i) : t_(t), i_(i) { Skip(); }
    Entry& operator*() const { return *t_->slots_[i_].entry; }
    Entry* operator->() const { return t_->slots_[i_].entry; }
    iterator& operator++() {
      ++i_;
      Skip();
      return *this;
    }
    bool operator!=(const iterator& o) const { return i_ != o.i_; }
    bool operator==(const iterator& o) const { return i_ == o.i_; }

   private:
    void Skip() {
      while (i_ < t_->slots_.size() && t_->slots_[i_].entry == nullptr) ++i_;
    }
    const ScopeTable* t_;
    size_t i_;
  };
  iterator begin() const { return iterator(this, 0); }
  iterator end() const { return iterator(this, slots_.size()); }

 private:
  struct Slot {
    uint64_t hash = 0;
    Entry* entry = nullptr;  // nullptr: empty
  };
  // Slots start a line (HugePageAllocator), so these share one.
  static constexpr size_t kSlotsPerLine = LinePool::kLine / sizeof(Slot);
  static_assert(LinePool::kLine % sizeof(Slot) == 0);

  void Place(Slot s) {
    size_t i = s.hash & mask_;
    while (slots_[i].entry != nullptr) i = (i + 1) & mask_;
    slots_[i] = s;
  }
  void Grow() {
    Slots old = std::move(slots_);
    slots_.assign(old.empty() ? 16 : old.size() * 2, Slot{});
    mask_ = slots_.size() - 1;
    for (const Slot& s : old) {
      if (s.entry != nullptr) Place(s);
    }
  }

  // A power of two, at most half full; on huge pages once it is large.
  using Slots = std::vector<Slot, HugePageAllocator<Slot>>;
  Slots slots_;
  size_t mask_ = 0;
  size_t size_ = 0;
};

}  // namespace brake
