#include "budget/scope_filter.h"

#include <algorithm>
#include <bit>

namespace brake {
namespace {

constexpr uint64_t kFnvBasis = 1469598103934665603ull;

// FNV-1a over `s`, continuing from `h`.
uint64_t Fnv(uint64_t h, std::string_view s) {
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

// A 64-bit finalizer: two independent halves for double hashing.
uint64_t Finish(uint64_t h) {
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdull;
  h ^= h >> 33;
  h *= 0xc4ceb9fe1a85ec53ull;
  h ^= h >> 33;
  return h;
}

uint64_t Hash(std::string_view s) { return Finish(Fnv(kFnvBasis, s)); }

}  // namespace

ScopeFilter::ScopeFilter(size_t expected) {
  uint64_t bits = std::bit_ceil(std::max<uint64_t>(uint64_t{1} << 20,
                                                   uint64_t{expected} * 16));
  bits_.assign(bits / 64, 0);
  mask_ = bits - 1;
}

void ScopeFilter::Add(std::string_view scope) {
  uint64_t h = Hash(scope);
  uint64_t h1 = h, h2 = (h >> 32) | 1;
  for (int i = 0; i < kHashes; ++i) {
    uint64_t bit = (h1 + i * h2) & mask_;
    bits_[bit / 64] |= uint64_t{1} << (bit % 64);
  }
}

bool ScopeFilter::MaybeContains(std::string_view scope) const {
  return Test(Hash(scope));
}

bool ScopeFilter::MaybeContains(std::string_view prefix,
                                std::string_view name) const {
  return Test(Finish(Fnv(Fnv(kFnvBasis, prefix), name)));
}

bool ScopeFilter::Test(uint64_t h) const {
  uint64_t h1 = h, h2 = (h >> 32) | 1;
  for (int i = 0; i < kHashes; ++i) {
    uint64_t bit = (h1 + i * h2) & mask_;
    if ((bits_[bit / 64] & (uint64_t{1} << (bit % 64))) == 0) return false;
  }
  return true;
}

}  // namespace brake
