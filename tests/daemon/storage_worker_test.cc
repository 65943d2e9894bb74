// StorageWorker (daemon/storage_worker.h) on a real loop and Store: the
// committed batch it hands back for the next to fill, and the memory it
// makes ahead for the loop.
#include <uv.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "common/line_pool.h"
#include "daemon/storage_worker.h"
#include "storage/store.h"
#include "storage/test_support.h"

namespace brake {
namespace {

using storage::TempDir;

class WorkerHarness {
 public:
  explicit WorkerHarness(const std::string& path) {
    uv_loop_init(&loop_);
    auto store = Store::Open(path);
    REQUIRE(store.ok());
    worker_ = std::make_unique<StorageWorker>(
        &loop_, std::move(*store),
        [this](const StorageWorker::Done& d) { done_.push_back(d); },
        nullptr);
  }
  ~WorkerHarness() {
    worker_->Stop([] {});
    uv_run(&loop_, UV_RUN_DEFAULT);
    worker_.reset();
    uv_loop_close(&loop_);
  }

  // Submits `batch` and runs the loop until its commit is reported.
  StorageWorker::Done Commit(Batch batch) {
    Queue(std::move(batch));
    return WaitDone();
  }
  // Submits `batch` without waiting.
  void Queue(Batch batch) {
    batch.seq = ++seq_;
    worker_->Submit(std::move(batch));
  }
  // Runs the loop until every batch submitted is reported.
  StorageWorker::Done WaitDone() {
    while (done_.empty() || done_.back().seq < seq_) {
      uv_run(&loop_, UV_RUN_ONCE);
    }
    return done_.back();
  }
  // Runs the loop until a job queued now has run: what the storage thread
  // did after the commits before it is done.
  void Sync() {
    bool ran = false;
    worker_->Run([](Store&) {}, [&ran] { ran = true; });
    while (!ran) uv_run(&loop_, UV_RUN_ONCE);
  }
  StorageWorker& worker() { return *worker_; }

 private:
  uv_loop_t loop_;
  std::unique_ptr<StorageWorker> worker_;
  std::vector<StorageWorker::Done> done_;
  uint64_t seq_ = 0;
};

// What a batch that never grew holds (its strings' own room).
const size_t kNoRoom = Batch().capacity_bytes();

Batch WithLeases(const std::string& prefix, size_t n, size_t json_bytes) {
  Batch b;
  const std::string json(json_bytes, 'x');
  for (size_t i = 0; i < n; ++i) {
    b.leases_put.Add(prefix + std::to_string(i), json);
  }
  b.ledger_append.push_back(LedgerRow{});
  return b;
}

TEST_CASE("storage worker: a committed batch comes back empty with its room",
          "[daemon]") {
  TempDir dir;
  WorkerHarness h(dir.File("brake.db"));
  CHECK(h.worker().TakeSpare().capacity_bytes() == kNoRoom);  // none yet

  // The stock short (it is the process's: earlier tests filled it) ...
  std::vector<void*> taken;
  while (LinePool::Stock(0) >= StorageWorker::kStockBytes) {
    taken.push_back(LinePool::AllocateChunk());
  }
  const uint64_t rounds = h.worker().stock_rounds();
  REQUIRE(h.Commit(WithLeases("A", 100, 50)).status.ok());
  // ... the commit has the stock thread make memory for open leases ahead,
  // up to kStockBytes.
  CHECK(h.worker().WaitStockRounds(rounds + 1));
  CHECK(LinePool::Stock(0) >= StorageWorker::kStockBytes);
  for (void* chunk : taken) LinePool::FreeChunk(chunk);
  Batch spare = h.worker().TakeSpare();
  CHECK(spare.empty());
  CHECK(spare.seq == 0);
  CHECK(spare.capacity_bytes() >= 100 * 50);
  CHECK(h.worker().TakeSpare().capacity_bytes() == kNoRoom);  // taken

  // Filled again, it carries only the new rows.
  spare.leases_put.Add("B1", "{}");
  REQUIRE(h.Commit(std::move(spare)).status.ok());
  auto store = Store::Open(dir.File("brake.db"));
  REQUIRE(store.ok());
  auto snapshot = (*store)->Load();
  REQUIRE(snapshot.ok());
  CHECK(snapshot->leases.size() == 101);
}

TEST_CASE("storage worker: batches merged into one commit all come back",
          "[daemon]") {
  TempDir dir;
  WorkerHarness h(dir.File("brake.db"));
  // Two batches queued behind a job that holds the storage thread are
  // merged into one transaction; each comes back with its own room.
  std::mutex mu;
  std::condition_variable cv;
  bool held = false;
  bool go = false;
  h.worker().Run(
      [&](Store&) {
        std::unique_lock<std::mutex> lock(mu);
        held = true;
        cv.notify_all();
        cv.wait(lock, [&] { return go; });
      },
      [] {});
  {
    std::unique_lock<std::mutex> lock(mu);
    cv.wait(lock, [&] { return held; });
  }
  h.Queue(WithLeases("A", 100, 50));
  h.Queue(WithLeases("B", 100, 50));
  {
    std::lock_guard<std::mutex> lock(mu);
    go = true;
  }
  cv.notify_all();
  REQUIRE(h.WaitDone().status.ok());
  std::vector<size_t> rooms;
  for (int i = 0; i < 3; ++i) {
    rooms.push_back(h.worker().TakeSpare().capacity_bytes());
  }
  std::sort(rooms.rbegin(), rooms.rend());
  CHECK(rooms[0] >= 100 * 50);
  CHECK(rooms[1] >= 100 * 50);
  CHECK(rooms[2] == kNoRoom);  // there were two
}

TEST_CASE("storage worker: a batch past kSpareBytes is not kept",
          "[daemon]") {
  TempDir dir;
  WorkerHarness h(dir.File("brake.db"));
  const size_t json = 1000;
  const size_t n = StorageWorker::kSpareBytes / json + 1;
  REQUIRE(h.Commit(WithLeases("A", n, json)).status.ok());
  CHECK(h.worker().TakeSpare().capacity_bytes() == kNoRoom);
  REQUIRE(h.Commit(WithLeases("B", 10, json)).status.ok());
  CHECK(h.worker().TakeSpare().capacity_bytes() > kNoRoom);
}

}  // namespace
}  // namespace brake
