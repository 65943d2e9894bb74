// ScopeFilter: a Bloom filter of subject scopes that may have stored state.
//
// The engine keeps recently used subjects in memory and evicts the idle ones
// (see Engine::EvictIdle); a subject not in memory has to be loaded from
// storage before it is decided on, unless it was never stored. This filter
// answers "never stored" exactly and "maybe stored" with a small false
// positive rate (a needless load, never a wrong answer), in about 2-4 bytes
// per stored subject. It grows as it fills (a scalable Bloom filter: a new
// layer twice the size of the last once that one holds its capacity), so it
// starts small and its error rate stays low however many subjects are
// evicted. Entries are never removed. Pure.
//
// Blocked: an entry's bits all lie in one 64-byte block (one cache line),
// so adding or testing a scope costs one memory access per layer, not one
// per bit; at 16 bits per entry that raises false positives from about
// 0.24% to 0.27%.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "common/huge_page_allocator.h"

namespace brake {

class ScopeFilter {
 public:
  // Sized for `expected` entries (at least 4,096) at 16 bits each, false
  // positives near 0.3% per layer.
  explicit ScopeFilter(size_t expected = 0);

  void Add(std::string_view scope);
  bool MaybeContains(std::string_view scope) const;
  // The same for the scope `prefix` + `name`, without building it.
  bool MaybeContains(std::string_view prefix, std::string_view name) const;
  size_t bytes() const;
  bool empty() const { return layers_.size() == 1 && layers_[0].count == 0; }
  size_t layers() const { return layers_.size(); }

 private:
  static constexpr uint64_t kBitsPerEntry = 16;
  struct alignas(64) Block {
    uint64_t words[8] = {};
  };
  struct Layer {
    std::vector<Block, HugePageAllocator<Block>> blocks;
    uint64_t mask = 0;      // block count - 1 (a power of two)
    uint64_t capacity = 0;  // entries before the next layer starts
    uint64_t count = 0;
  };
  static Layer MakeLayer(uint64_t entries);
  bool Test(uint64_t hash) const;

  std::vector<Layer> layers_;
};

}  // namespace brake
