// ScopeFilter: a Bloom filter of subject scopes that may have stored state.
//
// The engine keeps recently used subjects in memory and evicts the idle ones
// (see Engine::EvictIdle); a subject not in memory has to be loaded from
// storage before it is decided on, unless it was never stored. This filter
// answers "never stored" exactly and "maybe stored" with a small false
// positive rate (a needless load, never a wrong answer), in about 2 bytes
// per stored subject. Entries are never removed. Pure.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

namespace brake {

class ScopeFilter {
 public:
  // Sized for `expected` entries at about 16 bits each (false positives
  // near 0.2%); never smaller than 2^20 bits.
  explicit ScopeFilter(size_t expected = 0);

  void Add(std::string_view scope);
  bool MaybeContains(std::string_view scope) const;
  // The same for the scope `prefix` + `name`, without building it.
  bool MaybeContains(std::string_view prefix, std::string_view name) const;
  size_t bytes() const { return bits_.size() * sizeof(uint64_t); }

 private:
  static constexpr int kHashes = 4;
  bool Test(uint64_t hash) const;
  std::vector<uint64_t> bits_;
  uint64_t mask_ = 0;  // bit count - 1 (a power of two)
};

}  // namespace brake
