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

// The four bits an entry of hash `h` sets in its block: nine bits of the
// hash's top 36 each (the low 28 bits pick the block).
template <typename F>
void ForEachBit(uint64_t h, F&& f) {
  for (int i = 0; i < 4; ++i) {
    const unsigned bit = (h >> (28 + 9 * i)) & 511;
    f(bit / 64, uint64_t{1} << (bit % 64));
  }
}

}  // namespace

ScopeFilter::Layer ScopeFilter::MakeLayer(uint64_t entries) {
  Layer layer;
  const uint64_t bits =
      std::bit_ceil(std::max<uint64_t>(512, entries * kBitsPerEntry));
  layer.blocks.resize(bits / 512);
  layer.mask = bits / 512 - 1;
  layer.capacity = bits / kBitsPerEntry;
  return layer;
}

ScopeFilter::ScopeFilter(size_t expected) {
  layers_.push_back(MakeLayer(std::max<uint64_t>(4096, expected)));
}

size_t ScopeFilter::bytes() const {
  size_t total = 0;
  for (const Layer& layer : layers_) total += layer.blocks.size() * 64;
  return total;
}

void ScopeFilter::Add(std::string_view scope) {
  const uint64_t h = Hash(scope);
  if (Test(h)) return;  // already (maybe) there: do not fill a layer for it
  if (layers_.back().count >= layers_.back().capacity) {
    layers_.push_back(MakeLayer(layers_.back().capacity * 2));
  }
  Layer& layer = layers_.back();
  Block& block = layer.blocks[h & layer.mask];
  ForEachBit(h, [&](unsigned word, uint64_t bit) { block.words[word] |= bit; });
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
  for (const Layer& layer : layers_) {
    const Block& block = layer.blocks[h & layer.mask];
    bool all = true;
    ForEachBit(h, [&](unsigned word, uint64_t bit) {
      all &= (block.words[word] & bit) != 0;
    });
    if (all) return true;
  }
  return false;
}

}  // namespace brake
