#include "common/line_pool.h"

#include <sanitizer/asan_interface.h>

#include <algorithm>
#include <atomic>
#include <mutex>
#include <new>
#include <thread>
#include <vector>

#include "common/huge_page_allocator.h"

namespace brake {
namespace {

constexpr size_t kLine = LinePool::kLine;
constexpr size_t kClasses = LinePool::kMaxBytes / kLine;
constexpr size_t kFirstChunk = size_t{16} << 10;

// A chunk's unit: HugePageAllocator<Line> gives line-aligned memory, and from
// 2 MiB up asks for it on huge pages.
struct alignas(kLine) Line {
  char bytes[kLine];
};
constexpr size_t kHugePage = HugePageAllocator<Line>::kHugePage;
static_assert(kHugePage == LinePool::kChunkBytes);

struct FreeBlock {
  FreeBlock* next;
};

// The blocks of one size that were freed.
struct SizeClass {
  FreeBlock* free = nullptr;
};

// The rest of the newest chunk, whence every class takes a block when it
// has none freed: blocks made one after another are neighbours whatever
// their sizes. A new subject's table entry and its first limiter are made
// in the same acquire, so that they share a 4 KiB page; at a million
// subjects asked about at random, a decision then reads the entry and the
// limiter with one TLB miss, not two (on the development VM, whose host
// maps the guest's huge pages with 4 KiB ones, each a page walk).
struct Fresh {
  char* cursor = nullptr;
  char* end = nullptr;
  size_t next_chunk = kFirstChunk;  // doubles up to kHugePage
};

// A lock for a few dozen instructions at a time, taken by one thread nearly
// always: an atomic exchange, not a pthread mutex's two calls per block.
class SpinLock {
 public:
  void lock() {
    while (held_.test_and_set(std::memory_order_acquire)) {
      std::this_thread::yield();
    }
  }
  void unlock() { held_.clear(std::memory_order_release); }

 private:
  std::atomic_flag held_ = ATOMIC_FLAG_INIT;
};

struct Pool {
  SpinLock mu;
  SizeClass classes[kClasses];
  Fresh fresh;
  std::vector<void*> chunks;  // kept: a chunk's blocks may be used to exit
  std::vector<void*> stock;   // 2 MiB chunks touched, not yet used (Stock)
};

Pool& ThePool() {
  // Never destroyed: objects of static lifetime may be freed after it would.
  static Pool* const pool = new Pool;
  return *pool;
}

// The size class of `bytes` (1 to kMaxBytes): its index and block size.
size_t ClassOf(size_t bytes) { return (bytes - 1) / kLine; }
size_t BlockSize(size_t cls) { return (cls + 1) * kLine; }

bool Pooled(size_t bytes) { return bytes != 0 && bytes <= LinePool::kMaxBytes; }

// Room for one more chunk in both lists (the lock held): the stock's for
// every chunk made, so that FreeChunk never allocates.
void ReserveChunk(Pool& pool) {
  pool.chunks.reserve(pool.chunks.size() + 1);
  pool.stock.reserve(pool.chunks.size() + 1);
}

// A chunk of `bytes` (the lock held): a stocked one when it is 2 MiB and
// the stock has one, else a new one noted in pool.chunks.
void* TakeChunk(Pool& pool, size_t bytes) {
  if (bytes == kHugePage && !pool.stock.empty()) {
    void* p = pool.stock.back();  // in chunks already
    pool.stock.pop_back();
    return p;
  }
  ReserveChunk(pool);  // first, so that nothing throws once allocated
  void* p = HugePageAllocator<Line>().allocate(bytes / kLine);
  pool.chunks.push_back(p);
  return p;
}

// The lock held. What the old chunk has left (less than a block of the
// class that asked) goes to the free lists, the largest blocks first.
void NewChunk(Pool& pool) {
  Fresh& f = pool.fresh;
  for (size_t cls = kClasses; cls-- > 0;) {
    while (static_cast<size_t>(f.end - f.cursor) >= BlockSize(cls)) {
      auto* block = reinterpret_cast<FreeBlock*>(f.cursor);
      ASAN_UNPOISON_MEMORY_REGION(block, sizeof(FreeBlock));
      block->next = pool.classes[cls].free;
      pool.classes[cls].free = block;
      ASAN_POISON_MEMORY_REGION(block, BlockSize(cls));
      f.cursor += BlockSize(cls);
    }
  }
  const size_t bytes = f.next_chunk;
  void* p = TakeChunk(pool, bytes);
  ASAN_POISON_MEMORY_REGION(p, bytes);
  f.cursor = static_cast<char*>(p);
  f.end = f.cursor + bytes;
  f.next_chunk = std::min(bytes * 2, kHugePage);
}

}  // namespace

void* LinePool::Allocate(size_t bytes) {
  if (!Pooled(bytes)) return ::operator new(bytes, std::align_val_t{kLine});
  Pool& pool = ThePool();
  const size_t cls = ClassOf(bytes);
  const size_t size = BlockSize(cls);
  std::lock_guard<SpinLock> lock(pool.mu);
  SizeClass& c = pool.classes[cls];
  void* block;
  if (c.free != nullptr) {
    block = c.free;
    ASAN_UNPOISON_MEMORY_REGION(block, sizeof(FreeBlock));
    c.free = c.free->next;
  } else {
    Fresh& f = pool.fresh;
    if (static_cast<size_t>(f.end - f.cursor) < size) NewChunk(pool);
    block = f.cursor;
    f.cursor += size;
  }
  ASAN_UNPOISON_MEMORY_REGION(block, size);
  return block;
}

void LinePool::Free(void* block, size_t bytes) {
  if (block == nullptr) return;
  if (!Pooled(bytes)) {
    ::operator delete(block, std::align_val_t{kLine});
    return;
  }
  Pool& pool = ThePool();
  const size_t cls = ClassOf(bytes);
  std::lock_guard<SpinLock> lock(pool.mu);
  SizeClass& c = pool.classes[cls];
  // A block freed twice is poisoned here already: ASan reports this write.
  auto* f = static_cast<FreeBlock*>(block);
  f->next = c.free;
  c.free = f;
  ASAN_POISON_MEMORY_REGION(block, BlockSize(cls));
}

size_t LinePool::FreeBlocks(size_t bytes) {
  if (!Pooled(bytes)) return 0;
  Pool& pool = ThePool();
  std::lock_guard<SpinLock> lock(pool.mu);
  size_t n = 0;
  for (FreeBlock* f = pool.classes[ClassOf(bytes)].free; f != nullptr;) {
    ASAN_UNPOISON_MEMORY_REGION(f, sizeof(FreeBlock));
    FreeBlock* next = f->next;
    ASAN_POISON_MEMORY_REGION(f, sizeof(FreeBlock));
    f = next;
    ++n;
  }
  return n;
}

size_t LinePool::Stock(size_t bytes) {
  Pool& pool = ThePool();
  {
    std::lock_guard<SpinLock> lock(pool.mu);
    const size_t stocked = pool.stock.size() * kHugePage;
    if (stocked >= bytes) return stocked;
  }
  void* p;
  try {
    p = HugePageAllocator<Line>().allocate(kHugePage / kLine);
  } catch (const std::bad_alloc&) {
    return 0;  // the allocating thread will report it, if it runs out
  }
  // One write per 4 KiB page makes the kernel back it (with one huge page
  // where it can); the rest of each page is zero already.
  auto* bytes_of = static_cast<volatile char*>(p);
  for (size_t at = 0; at < kHugePage; at += 4096) bytes_of[at] = 0;
  ASAN_POISON_MEMORY_REGION(p, kHugePage);
  std::lock_guard<SpinLock> lock(pool.mu);
  try {
    ReserveChunk(pool);
  } catch (const std::bad_alloc&) {
    HugePageAllocator<Line>().deallocate(static_cast<Line*>(p),
                                         kHugePage / kLine);
    return 0;
  }
  pool.chunks.push_back(p);
  pool.stock.push_back(p);
  return pool.stock.size() * kHugePage;
}

void* LinePool::AllocateChunk() {
  Pool& pool = ThePool();
  void* p;
  {
    std::lock_guard<SpinLock> lock(pool.mu);
    p = TakeChunk(pool, kHugePage);
  }
  ASAN_UNPOISON_MEMORY_REGION(p, kHugePage);
  return p;
}

void LinePool::FreeChunk(void* chunk) {
  if (chunk == nullptr) return;
  ASAN_POISON_MEMORY_REGION(chunk, kHugePage);
  Pool& pool = ThePool();
  std::lock_guard<SpinLock> lock(pool.mu);
  pool.stock.push_back(chunk);  // room reserved when it was made
}

}  // namespace brake
