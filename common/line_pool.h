// LinePool: memory for the small objects a decision reads at random among
// millions (a subject's table entry, its limiters), in whole cache lines.
//
// From malloc such an object starts 16 bytes into a line three times in
// four, so a 64-byte token bucket spans two lines and a subject's hot
// 128 bytes three: at a million subjects, where every line is a miss and
// the misses a core can have in flight are what bounds a decision, that is
// a third more misses per decision (docs/DESIGN.md, "Subjects in memory").
// Here every block starts a line and is a whole number of lines, with no
// header between blocks; blocks come from chunks that grow to 2 MiB and are
// then backed by transparent huge pages where the system allows
// (HugePageAllocator). Freed blocks are kept for reuse, per size; chunks are
// never returned to the system.
//
// Thread-safe (a spin lock, taken when an object is made or freed, never on
// a decision). Under AddressSanitizer a free block is poisoned, so a use
// after free is still reported.
#pragma once

#include <cstddef>
#include <string>

namespace brake {

class LinePool {
 public:
  static constexpr size_t kLine = 64;
  static constexpr size_t kMaxBytes = 8 * kLine;  // larger: operator new

  // A block of at least `bytes`, starting a cache line. Never null (throws
  // std::bad_alloc).
  static void* Allocate(size_t bytes);
  // Returns a block from Allocate(`bytes`), the same `bytes`.
  static void Free(void* block, size_t bytes);
  // How many blocks of `bytes` are kept for reuse (a walk of their list,
  // for tests): Allocate(`bytes`) takes one of them while there are any,
  // else the block after the one made last, of whatever size.
  static size_t FreeBlocks(size_t bytes);

  // Stocks 2 MiB chunks made and touched ahead of need: the next size
  // class to run out takes one instead of a new chunk. A fresh page costs
  // its first writer the kernel's zeroing (and, on a VM, the host's fault:
  // ~3 ms per 2 MiB on the development VM), so a thread with time to spare
  // calls this, not the one that allocates (braked's stock thread, woken
  // after a commit: StorageWorker). Adds one chunk when the stock holds less than
  // `bytes` (so that a caller can stop between chunks); returns the bytes
  // stocked. Thread-safe; the lock is not held while pages are touched.
  static size_t Stock(size_t bytes);

  // A whole chunk of kChunkBytes, from the stock when it has one, for an
  // array that grows a chunk at a time (the lease book's ring, Fifo). Never
  // null (throws std::bad_alloc). FreeChunk puts it in the stock.
  static constexpr size_t kChunkBytes = size_t{2} << 20;
  static void* AllocateChunk();
  static void FreeChunk(void* chunk);
};

// For a class whose objects should come from the pool: a base, or members
// copied into it (operator delete gets the dynamic size from a virtual
// destructor).
struct LinePooled {
  static void* operator new(size_t bytes) { return LinePool::Allocate(bytes); }
  static void operator delete(void* p, size_t bytes) {
    LinePool::Free(p, bytes);
  }
};

// An allocator of LinePool blocks, for a container that belongs to a
// pooled object: a lease's text past the string's 15 inline bytes (a task
// named by a UUID) came from malloc, a block of fresh heap per open lease on
// the request's path, and 4 KiB pages faulted in there one by one.
template <class T>
struct LinePoolAllocator {
  using value_type = T;
  LinePoolAllocator() = default;
  template <class U>
  LinePoolAllocator(const LinePoolAllocator<U>&) {}  // NOLINT: conversion
  T* allocate(size_t n) {
    return static_cast<T*>(LinePool::Allocate(n * sizeof(T)));
  }
  void deallocate(T* p, size_t n) { LinePool::Free(p, n * sizeof(T)); }
  template <class U>
  bool operator==(const LinePoolAllocator<U>&) const {
    return true;
  }
};

// A string whose text, once past the inline bytes, is in LinePool.
using LinePoolString =
    std::basic_string<char, std::char_traits<char>, LinePoolAllocator<char>>;

}  // namespace brake
