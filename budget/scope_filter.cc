#include "budget/scope_filter.h"

#include <algorithm>
#include <bit>

#include "budget/scope_key.h"

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

// Finalized, two independent halves for double hashing.
uint64_t Finish(uint64_t h) { return scope_key_internal::Fmix64(h); }

uint64_t Hash(std::string_view s) { return Finish(Fnv(kFnvBasis, s)); }

}  // namespace

ScopeFilter::Layer ScopeFilter::MakeLayer(uint64_t entries) {
  Layer layer;
  const uint64_t bits = std::bit_ceil(entries * kBitsPerEntry);
  layer.bits.assign(bits / 64, 0);
  layer.mask = bits - 1;
  layer.capacity = bits / kBitsPerEntry;
  return layer;
}

ScopeFilter::ScopeFilter(size_t expected) {
  layers_.push_back(MakeLayer(std::max<uint64_t>(4096, expected)));
}

size_t ScopeFilter::bytes() const {
  size_t total = 0;
  for (const Layer& layer : layers_) total += layer.bits.size() * 8;
  return total;
}

void ScopeFilter::Add(std::string_view scope) {
  const uint64_t h = Hash(scope);
  if (Test(h)) return;  // already (maybe) there: do not fill a layer for it
  if (layers_.back().count >= layers_.back().capacity) {
    layers_.push_back(MakeLayer(layers_.back().capacity * 2));
  }
  Layer& layer = layers_.back();
  const uint64_t h1 = h, h2 = (h >> 32) | 1;
  for (int i = 0; i < kHashes; ++i) {
    const uint64_t bit = (h1 + i * h2) & layer.mask;
    layer.bits[bit / 64] |= uint64_t{1} << (bit % 64);
  }
  ++layer.count;
}

bool ScopeFilter::MaybeContains(std::string_view scope) const {
  return !empty() && Test(Hash(scope));
}

bool ScopeFilter::MaybeContains(std::string_view prefix,
                                std::string_view name) const {
  return !empty() && Test(Finish(Fnv(Fnv(kFnvBasis, prefix), name)));
}

bool ScopeFilter::Test(uint64_t h) const {
  const uint64_t h1 = h, h2 = (h >> 32) | 1;
  for (const Layer& layer : layers_) {
    bool all = true;
    for (int i = 0; i < kHashes && all; ++i) {
      const uint64_t bit = (h1 + i * h2) & layer.mask;
      all = (layer.bits[bit / 64] & (uint64_t{1} << (bit % 64))) != 0;
    }
    if (all) return true;
  }
  return false;
}

}  // namespace brake
