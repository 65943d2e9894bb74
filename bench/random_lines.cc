// brake-random-lines: this machine's floor for reading memory at random, to
// set brake-decide-bench's figures at a million subjects against.
//
// For each working-set size, reads 20 million spots chosen at random, each
// of LINES adjacent cache lines, every load independent of the others (as
// Engine::Prefetch makes a decision's loads), and prints ns per spot and per
// line. A decision at a million subjects reads ~4 lines from memory at 3
// spots (a slot; an entry's two lines; a limiter's line), so its memory
// floor is ~3 spots' worth here however its work is arranged.
//
// usage: brake-random-lines [MIB...]   (default 8 32 128 256 512 1024)
// Exit codes: 0 ok, 2 usage.
#include <sys/mman.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace {

constexpr size_t kLine = 64;
constexpr size_t kHugePage = size_t{2} << 20;
constexpr int kSpots = 20'000'000;

// ns per spot of `lines` adjacent lines in `bytes`, on huge pages.
double NsPerSpot(char* memory, size_t bytes, int lines) {
  const size_t spots = bytes / kLine - static_cast<size_t>(lines);
  uint64_t x = 88172645463325252ull;  // xorshift64
  uint64_t sum = 0;
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < kSpots; ++i) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    const char* p = memory + (x % spots) * kLine;
    for (int k = 0; k < lines; ++k) sum += static_cast<uint64_t>(p[k * kLine]);
  }
  const auto t1 = std::chrono::steady_clock::now();
  if (sum == 42) std::puts("");  // keeps the loads
  return std::chrono::duration<double, std::nano>(t1 - t0).count() / kSpots;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<size_t> sizes_mib;
  for (int i = 1; i < argc; ++i) {
    const long v = std::atol(argv[i]);
    if (v < 1) {
      std::fprintf(stderr, "usage: brake-random-lines [MIB...]\n");
      return 2;
    }
    sizes_mib.push_back(static_cast<size_t>(v));
  }
  if (sizes_mib.empty()) sizes_mib = {8, 32, 128, 256, 512, 1024};
  std::printf("%8s  %13s  %13s  %13s\n", "MiB", "1 line ns", "2 lines ns",
              "4 lines ns");
  for (size_t mib : sizes_mib) {
    const size_t bytes = mib << 20;
    auto* memory = static_cast<char*>(std::aligned_alloc(kHugePage, bytes));
    if (memory == nullptr) return 1;
    (void)madvise(memory, bytes, MADV_HUGEPAGE);
    std::memset(memory, 1, bytes);
    std::printf("%8zu", mib);
    for (int lines : {1, 2, 4}) {
      std::printf("  %13.1f", NsPerSpot(memory, bytes, lines));
    }
    std::printf("\n");
    std::free(memory);
  }
  return 0;
}
