// HugePageAllocator: arrays of any size start a cache line (ScopeTable
// tells from a slot's index which slots share one), and come back whole.
#include "common/huge_page_allocator.h"

#include <catch2/catch.hpp>

#include <cstdint>
#include <cstring>

#include "common/line_pool.h"

namespace brake {
namespace {

struct Pair {  // the size and alignment of ScopeTable's slot
  uint64_t a;
  void* b;
};

template <class T>
void CheckArray(size_t n) {
  HugePageAllocator<T> alloc;
  T* p = alloc.allocate(n);
  CHECK(reinterpret_cast<uintptr_t>(p) % LinePool::kLine == 0);
  std::memset(static_cast<void*>(p), 0xab, n * sizeof(T));  // all usable
  alloc.deallocate(p, n);
}

TEST_CASE("huge page allocator: small arrays start a cache line") {
  for (size_t n : {1, 3, 16, 100, 4096}) {
    CAPTURE(n);
    CheckArray<Pair>(n);
    CheckArray<char>(n);
  }
}

TEST_CASE("huge page allocator: arrays of huge pages start one") {
  HugePageAllocator<Pair> alloc;
  const size_t n = HugePageAllocator<Pair>::kHugePage / sizeof(Pair) + 1;
  Pair* p = alloc.allocate(n);
  CHECK(reinterpret_cast<uintptr_t>(p) % HugePageAllocator<Pair>::kHugePage ==
        0);
  p[n - 1].a = 7;  // the last element is inside the array
  CHECK(p[n - 1].a == 7);
  alloc.deallocate(p, n);
}

}  // namespace
}  // namespace brake
