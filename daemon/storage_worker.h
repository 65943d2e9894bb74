// StorageWorker: the one thread that owns the Store.
//
// The loop hands it batches (Submit) and read jobs (Run); it applies every
// batch queued while the previous commit ran as ONE transaction (group
// commit), so no fsync or checkpoint ever stalls the loop, and reports back
// on the loop thread through a uv_async_t. A failed batch is reported as
// failed and kept: it is merged into the next attempt, so nothing the loop
// changed is silently dropped, and nothing is ever reported committed that is
// not. Submit, Run and Stop are for the loop thread; the callbacks run there.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include <uv.h>

#include "common/records.h"
#include "common/status.h"
#include "storage/store.h"

namespace brake {

class StorageWorker {
 public:
  struct Done {
    uint64_t seq = 0;  // every batch up to this one is settled by `status`
    Status status;
    int64_t commit_us = 0;
  };
  using OnDone = std::function<void(const Done&)>;

  // Opens a fresh Store on the same database: after a failed commit the
  // worker closes its connection and reopens it before retrying, so a disk
  // that recovers (space freed, device back) is used again without a restart.
  using Reopen = std::function<Result<std::unique_ptr<Store>>()>;

  // Turns a batch's lease rows from the form the loop drained them in into
  // the stored form (EncodeSnapshots), on the storage thread.
  using EncodeLeases = std::function<Status(const LeasePuts& drained,
                                            LeasePuts* stored)>;
  // Without `encode_leases`, lease rows are stored as drained.
  StorageWorker(uv_loop_t* loop, std::unique_ptr<Store> store, OnDone on_done,
                Reopen reopen, EncodeLeases encode_leases = nullptr);
  ~StorageWorker();
  StorageWorker(const StorageWorker&) = delete;
  StorageWorker& operator=(const StorageWorker&) = delete;

  // Queues `batch` (batch.seq increasing) for the next transaction.
  void Submit(Batch batch);
  // An empty batch to fill for the next Submit: one committed, cleared,
  // when its lists took at most kSpareBytes. Refilling their room touches
  // memory already mapped; a new batch of a megabyte or more was mapped
  // afresh by malloc each time, and every 4 KiB page of it faulted. Up to
  // kSpares are kept: in strict mode the loop seals a batch every turn, and
  // a commit takes in the batches of several turns (each merged into one
  // and handed back too), so a single spare left most turns without one.
  Batch TakeSpare();
  static constexpr size_t kSpareBytes = size_t{8} << 20;
  static constexpr size_t kSpares = 4;
  // After each commit the stock thread tops LinePool's stock up to this
  // much memory made and touched ahead (LinePool::Stock): what the loop
  // takes for open leases. A fresh 2 MiB chunk costs ~3 ms of page faults
  // on the development VM; on the storage thread, between commits, that
  // was time every strict reply waited for.
  static constexpr size_t kStockBytes = size_t{8} << 20;
  // For tests: the stock thread's rounds so far (one after a commit that
  // found the stock short), and a wait until there have been `n` (false
  // after 30 s without).
  uint64_t stock_rounds();
  bool WaitStockRounds(uint64_t n);
  // Runs `job` on the storage thread, then `then` on the loop thread.
  void Run(std::function<void(Store&)> job, std::function<void()> then);
  // True while batches are queued or committing.
  bool busy() const { return done_seq_ < submitted_seq_; }
  // Finishes what is queued, stops the thread, closes the async handle; then
  // calls `on_closed` on the loop thread.
  void Stop(std::function<void()> on_closed);

 private:
  struct Job {
    bool is_batch = false;
    Batch batch;
    std::function<void(Store&)> read;
    std::function<void()> then;
  };
  void ThreadMain();
  void StockMain();
  // Wakes the stock thread when the stock is short (storage thread).
  void WantStock();
  void StopStocking();
  // Applies `batch`, its lease rows encoded first (and `batch` left as it
  // was, drained form and all, for a retry).
  Status Apply(Batch& batch);
  static void OnAsync(uv_async_t* handle);
  // Keeps `batch` (committed and cleared) as a spare if it has room worth
  // keeping and there is a place for it (mu_ held).
  void OfferSpare(Batch&& batch);

  uv_loop_t* loop_;
  std::unique_ptr<Store> store_;
  OnDone on_done_;
  Reopen reopen_;
  EncodeLeases encode_leases_;
  uv_async_t async_;
  std::thread thread_;
  std::function<void()> on_closed_;
  uint64_t submitted_seq_ = 0;  // loop thread only
  uint64_t done_seq_ = 0;       // loop thread only

  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<Job> queue_;          // guarded by mu_
  std::vector<Job> jobs_;           // storage thread only: queue_ taken
  std::vector<Done> done_;          // guarded by mu_
  std::vector<Batch> spares_;       // guarded by mu_
  // Storage thread only: the lease rows of the batch being applied in their
  // stored form, kept (up to kSpareBytes) for the next, like spares_.
  LeasePuts encoded_;
  std::vector<std::function<void()>> thens_;  // guarded by mu_
  // Loop thread only: OnAsync's empty vectors, swapped for done_ and thens_
  // so that neither side allocates per wake-up.
  std::vector<Done> done_spare_;
  std::vector<std::function<void()>> thens_spare_;
  bool stopping_ = false;           // guarded by mu_

  std::thread stock_thread_;
  std::mutex stock_mu_;
  std::condition_variable stock_cv_;
  bool stock_wanted_ = false;    // guarded by stock_mu_
  bool stock_stopping_ = false;  // guarded by stock_mu_
  uint64_t stock_rounds_ = 0;    // guarded by stock_mu_
};

}  // namespace brake
