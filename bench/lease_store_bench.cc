// brake-lease-store-bench: what storing open leases costs the storage
// thread (docs/performance/03-third-pass.md, "Storing open leases").
//
// Applies, through Store::Apply on a fresh database in a temporary
// directory, --batches batches of --per-batch lease puts (a braked-shaped
// lease row of about 330 bytes, ids counting up as braked's do), then as
// many batches settling them in the same order, and prints the thread CPU
// time per lease of each phase (SQLite and the fsync waits' CPU included;
// synchronous=FULL as in braked). With --settle-order random, the settling
// batches take the leases in an order drawn at random (seeded), as when
// leases are held for varying times: each batch then settles lines of many
// chunks rather than whole chunks. With --limiters N each put batch also
// upserts N limiter rows (token buckets of tasks 0 .. N-1), as strict mode's
// commits do for the tasks their acquires charged.
//
//   build/bench/brake-lease-store-bench [--batches N] [--per-batch N]
//       [--settle-order seq|random] [--limiters N]
#include <time.h>

#include <cstdio>
#include <cstdlib>
#include <algorithm>
#include <cstring>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "storage/store.h"
#include "storage/test_support.h"

namespace {

double ThreadCpuSeconds() {
  timespec t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) * 1e-9;
}

const char kRow[] =
    R"({"id":"0123456789ab-%d","user":"cmp","task":"cmp-batched-16x16-r1-3",)"
    R"("parent":"","resource":"","model":"","fingerprint":"","requests":1,)"
    R"("tokens":0,"usd_nano":0,"granted_at_us":1764495000000000,)"
    R"("expires_at_us":1764495600000000,"scopes":["global","user:cmp",)"
    R"("task:cmp-batched-16x16-r1-3"],"charges":[["task:cmp-batched-16x16-)"
    R"(r1-3","rps","requests",1]]})";

std::string Id(long n) { return "0123456789ab-" + std::to_string(n); }

}  // namespace

int main(int argc, char** argv) {
  long batches = 300;
  long per_batch = 1000;
  long limiters = 0;
  bool random_settle = false;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--batches") == 0) {
      batches = std::atol(argv[i + 1]);
    } else if (std::strcmp(argv[i], "--per-batch") == 0) {
      per_batch = std::atol(argv[i + 1]);
    } else if (std::strcmp(argv[i], "--limiters") == 0) {
      limiters = std::atol(argv[i + 1]);
    } else if (std::strcmp(argv[i], "--settle-order") == 0 &&
               (std::strcmp(argv[i + 1], "seq") == 0 ||
                std::strcmp(argv[i + 1], "random") == 0)) {
      random_settle = std::strcmp(argv[i + 1], "random") == 0;
    } else {
      std::fprintf(stderr,
                   "usage: %s [--batches N] [--per-batch N] "
                   "[--settle-order seq|random] [--limiters N]\n",
                   argv[0]);
      return 2;
    }
  }
  if (batches <= 0 || per_batch <= 0 || limiters < 0) return 2;
  brake::storage::TempDir dir;
  auto store = brake::Store::Open(dir.File("bench.db"));
  if (!store.ok()) {
    std::fprintf(stderr, "%s\n", store.status().ToString().c_str());
    return 1;
  }
  const long total = batches * per_batch;
  const double t0 = ThreadCpuSeconds();
  for (long b = 0; b < batches; ++b) {
    brake::Batch batch;
    for (long i = 0; i < per_batch; ++i) {
      const long n = b * per_batch + i + 1;
      char row[sizeof(kRow) + 24];
      std::snprintf(row, sizeof(row), kRow, static_cast<int>(n));
      batch.leases_put.Add(Id(n), row, /*fresh=*/true);
    }
    for (long k = 0; k < limiters; ++k) {
      batch.limiters_put.push_back(
          {"task:cmp-strict-16x16-r1-" + std::to_string(k), "rps",
           "token_bucket", {1764495000000000 + b * 1000 + k}});
    }
    if (brake::Status s = (*store)->Apply(batch); !s.ok()) {
      std::fprintf(stderr, "%s\n", s.ToString().c_str());
      return 1;
    }
  }
  const double t1 = ThreadCpuSeconds();
  std::vector<long> order(static_cast<size_t>(total));
  std::iota(order.begin(), order.end(), 1);
  if (random_settle) std::shuffle(order.begin(), order.end(), std::mt19937(7));
  for (long b = 0; b < batches; ++b) {
    brake::Batch batch;
    for (long i = 0; i < per_batch; ++i) {
      batch.leases_deleted.push_back(
          Id(order[static_cast<size_t>(b * per_batch + i)]));
    }
    if (brake::Status s = (*store)->Apply(batch); !s.ok()) {
      std::fprintf(stderr, "%s\n", s.ToString().c_str());
      return 1;
    }
  }
  const double t2 = ThreadCpuSeconds();
  std::printf(
      "brake-lease-store-bench: %ld batches of %ld leases and %ld limiters: "
      "put %.2f us, settle (%s order) %.2f us per lease (thread CPU)\n",
      batches, per_batch, limiters,
      (t1 - t0) * 1e6 / static_cast<double>(total),
      random_settle ? "random" : "seq",
      (t2 - t1) * 1e6 / static_cast<double>(total));
  return 0;
}
