// HugePageAllocator: an allocator for large arrays read at random (a hash
// table's slots), which asks the kernel to back them with transparent huge
// pages.
//
// With 4 KiB pages, a table of a million subjects' slots (32 MiB) spans
// 8,192 pages, more than the TLB holds: nearly every lookup first walks the
// page tables, and a prefetch of its slot stalls on that walk as a load
// would. Backed by 2 MiB
// pages the same table is 16 TLB entries. Arrays under 2 MiB, and systems
// where transparent huge pages are off, get ordinary memory; the hint only
// changes speed. Either way an array starts a cache line, so that a reader
// can tell which elements share one (ScopeTable::PrefetchSlot). Only whole
// arrays are allocated here, never grown in place.
#pragma once

#include <sys/mman.h>

#include <cstddef>
#include <cstdlib>
#include <new>

#include "common/line_pool.h"

namespace brake {

template <class T>
struct HugePageAllocator {
  using value_type = T;
  static constexpr size_t kHugePage = size_t{2} << 20;
  static constexpr std::align_val_t kAlign{
      alignof(T) > LinePool::kLine ? alignof(T) : LinePool::kLine};

  HugePageAllocator() = default;
  template <class U>
  HugePageAllocator(const HugePageAllocator<U>&) {}

  T* allocate(size_t n) {
    const size_t bytes = n * sizeof(T);
    if (bytes < kHugePage) {
      return static_cast<T*>(::operator new(bytes, kAlign));
    }
    const size_t rounded = (bytes + kHugePage - 1) / kHugePage * kHugePage;
    void* p = std::aligned_alloc(kHugePage, rounded);
    if (p == nullptr) throw std::bad_alloc();
    (void)madvise(p, rounded, MADV_HUGEPAGE);  // a hint: failure is fine
    return static_cast<T*>(p);
  }
  void deallocate(T* p, size_t n) {
    if (n * sizeof(T) < kHugePage) {
      ::operator delete(p, kAlign);
    } else {
      std::free(p);
    }
  }
  template <class U>
  bool operator==(const HugePageAllocator<U>&) const {
    return true;
  }
};

}  // namespace brake
