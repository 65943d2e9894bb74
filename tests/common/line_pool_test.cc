#include "common/line_pool.h"

#include <catch2/catch.hpp>

#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <utility>
#include <vector>

#include "budget/limiter.h"
#include "budget/scope_table.h"

namespace brake {
namespace {

bool StartsLine(const void* p) {
  return reinterpret_cast<uintptr_t>(p) % LinePool::kLine == 0;
}

TEST_CASE("line pool: blocks start a line and do not overlap", "[line_pool]") {
  // Every size of every class, and some past the largest, many times over
  // (past the first chunks): each block is filled with its own byte, and
  // every block still holds its byte when all are made.
  struct Block {
    unsigned char* p;
    size_t bytes;
  };
  std::vector<Block> blocks;
  for (int round = 0; round < 40; ++round) {
    for (size_t bytes = 1; bytes <= LinePool::kMaxBytes + 130; bytes += 7) {
      auto* p = static_cast<unsigned char*>(LinePool::Allocate(bytes));
      REQUIRE(StartsLine(p));
      std::memset(p, static_cast<int>(blocks.size() % 251), bytes);
      blocks.push_back({p, bytes});
    }
  }
  for (size_t i = 0; i < blocks.size(); ++i) {
    const Block& b = blocks[i];
    for (size_t k = 0; k < b.bytes; ++k) {
      if (b.p[k] != i % 251) FAIL("block " << i << " byte " << k);
    }
  }
  for (const Block& b : blocks) LinePool::Free(b.p, b.bytes);
}

TEST_CASE("line pool: a freed block is made again for its size class",
          "[line_pool]") {
  // Sizes of one class share blocks; another class never gets them.
  void* a = LinePool::Allocate(100);  // two lines
  LinePool::Free(a, 100);
  void* b = LinePool::Allocate(65);  // two lines too
  CHECK(b == a);
  void* c = LinePool::Allocate(64);  // one line
  CHECK(c != a);
  LinePool::Free(b, 65);
  LinePool::Free(c, 64);
  LinePool::Free(nullptr, 64);  // as delete of a null pointer
}

TEST_CASE("line pool: a class's next 2 MiB chunk comes from the stock",
          "[line_pool]") {
  const size_t kChunk = size_t{2} << 20;
  const size_t start = LinePool::Stock(0);  // asks for nothing
  const size_t stocked = start + 2 * kChunk;
  CHECK(LinePool::Stock(stocked) == start + kChunk);  // a chunk a call
  CHECK(LinePool::Stock(stocked) == stocked);
  CHECK(LinePool::Stock(stocked) == stocked);  // not short any more
  // Blocks of the largest class until one comes from a new chunk past the
  // first, smaller ones (16 KiB doubling to 2 MiB): from the stock.
  std::vector<void*> blocks;
  const size_t most = 4 * kChunk / LinePool::kMaxBytes;
  while (blocks.size() < most && LinePool::Stock(0) == stocked) {
    blocks.push_back(LinePool::Allocate(LinePool::kMaxBytes));
    std::memset(blocks.back(), 0xab, LinePool::kMaxBytes);  // usable
  }
  CHECK(LinePool::Stock(0) == stocked - kChunk);
  for (void* b : blocks) LinePool::Free(b, LinePool::kMaxBytes);
}

TEST_CASE("line pool: blocks made one after another are neighbours",
          "[line_pool]") {
  // A subject's table entry (five lines) and then its first limiter (one),
  // as an acquire of a new task makes them: once no freed block of either
  // size is left, the limiter follows the entry in memory.
  constexpr size_t kEntry = 5 * LinePool::kLine;
  constexpr size_t kLimiter = LinePool::kLine;
  std::vector<std::pair<void*, size_t>> held;
  for (size_t bytes : {kEntry, kLimiter}) {
    while (LinePool::FreeBlocks(bytes) > 0) {
      held.emplace_back(LinePool::Allocate(bytes), bytes);
    }
  }
  CHECK(LinePool::FreeBlocks(kEntry) == 0);
  // Two pairs: the first may find too little left of its chunk.
  bool neighbours = false;
  for (int pair = 0; pair < 2; ++pair) {
    char* entry = static_cast<char*>(LinePool::Allocate(kEntry));
    void* limiter = LinePool::Allocate(kLimiter);
    neighbours = neighbours || limiter == entry + kEntry;
    held.emplace_back(entry, kEntry);
    held.emplace_back(limiter, kLimiter);
  }
  CHECK(neighbours);
  for (const auto& [block, bytes] : held) LinePool::Free(block, bytes);
  CHECK(LinePool::FreeBlocks(kEntry) >= 2);
}

TEST_CASE("line pool: what a decision reads starts a line",
          "[line_pool]") {
  // A token bucket is one line; a subject's table entry starts one.
  LimitSpec spec;
  spec.name = "rps";
  spec.resource = Resource::kRequests;
  spec.algorithm = Algorithm::kTokenBucket;
  spec.rate = 10;
  spec.per_ms = 1000;
  std::vector<std::unique_ptr<Limiter>> limiters;
  for (int i = 0; i < 100; ++i) {
    limiters.push_back(MakeLimiter(spec, 0));
    CHECK(StartsLine(limiters.back().get()));
  }
  ScopeTable<int64_t> table;
  for (int i = 0; i < 100; ++i) {
    CHECK(StartsLine(table.Insert("task:t" + std::to_string(i))));
  }
}

}  // namespace
}  // namespace brake
