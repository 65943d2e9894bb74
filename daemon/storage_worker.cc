#include "daemon/storage_worker.h"

#include <algorithm>
#include <chrono>
#include <utility>

#include "common/line_pool.h"

namespace brake {
namespace {

// What an empty batch that never grew holds (its strings' own room).
const size_t kEmptyBatchBytes = Batch().capacity_bytes();

}  // namespace

StorageWorker::StorageWorker(uv_loop_t* loop, std::unique_ptr<Store> store,
                             OnDone on_done, Reopen reopen,
                             EncodeLeases encode_leases)
    : loop_(loop),
      store_(std::move(store)),
      on_done_(std::move(on_done)),
      reopen_(std::move(reopen)),
      encode_leases_(std::move(encode_leases)) {
  uv_async_init(loop_, &async_, &StorageWorker::OnAsync);
  async_.data = this;
  thread_ = std::thread([this] { ThreadMain(); });
  stock_thread_ = std::thread([this] { StockMain(); });
}

StorageWorker::~StorageWorker() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  StopStocking();
}

void StorageWorker::StopStocking() {
  {
    std::lock_guard<std::mutex> lock(stock_mu_);
    stock_stopping_ = true;
  }
  stock_cv_.notify_all();
  if (stock_thread_.joinable()) stock_thread_.join();
}

void StorageWorker::StockMain() {
  std::unique_lock<std::mutex> lock(stock_mu_);
  for (;;) {
    stock_cv_.wait(lock, [this] { return stock_stopping_ || stock_wanted_; });
    if (stock_stopping_) return;
    stock_wanted_ = false;
    lock.unlock();
    while (LinePool::Stock(kStockBytes) < kStockBytes) {
      std::lock_guard<std::mutex> stop(stock_mu_);
      if (stock_stopping_) break;
    }
    lock.lock();
    ++stock_rounds_;
    stock_cv_.notify_all();  // WaitStockRounds
  }
}

void StorageWorker::WantStock() {
  if (LinePool::Stock(0) >= kStockBytes) return;  // asks for nothing
  {
    std::lock_guard<std::mutex> lock(stock_mu_);
    stock_wanted_ = true;
  }
  stock_cv_.notify_one();
}

uint64_t StorageWorker::stock_rounds() {
  std::lock_guard<std::mutex> lock(stock_mu_);
  return stock_rounds_;
}

bool StorageWorker::WaitStockRounds(uint64_t n) {
  std::unique_lock<std::mutex> lock(stock_mu_);
  return stock_cv_.wait_for(lock, std::chrono::seconds(30),
                            [&] { return stock_rounds_ >= n; });
}

void StorageWorker::Submit(Batch batch) {
  submitted_seq_ = batch.seq;
  {
    std::lock_guard<std::mutex> lock(mu_);
    Job job;
    job.is_batch = true;
    job.batch = std::move(batch);
    queue_.push_back(std::move(job));
  }
  cv_.notify_one();
}

Batch StorageWorker::TakeSpare() {
  std::lock_guard<std::mutex> lock(mu_);
  if (spares_.empty()) return Batch();
  Batch spare = std::move(spares_.back());
  spares_.pop_back();
  return spare;
}

void StorageWorker::OfferSpare(Batch&& batch) {
  const size_t room = batch.capacity_bytes();
  if (room <= kEmptyBatchBytes || room > kSpareBytes) return;
  if (spares_.size() < kSpares) {
    spares_.push_back(std::move(batch));
    return;
  }
  // Full: keep the roomiest.
  auto least = std::min_element(
      spares_.begin(), spares_.end(), [](const Batch& a, const Batch& b) {
        return a.capacity_bytes() < b.capacity_bytes();
      });
  if (least->capacity_bytes() < room) *least = std::move(batch);
}

void StorageWorker::Run(std::function<void(Store&)> job,
                        std::function<void()> then) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    Job j;
    j.read = std::move(job);
    j.then = std::move(then);
    queue_.push_back(std::move(j));
  }
  cv_.notify_one();
}

void StorageWorker::ThreadMain() {
  Batch failed;  // a batch that failed to commit, retried with the next
  bool have_failed = false;
  for (;;) {
    std::vector<Job>& jobs = jobs_;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stopping and drained
      jobs.swap(queue_);  // queue_ keeps the capacity jobs had
    }
    // Group commit: every batch queued meanwhile goes into one transaction.
    Batch merged;
    bool any_batch = false;
    if (have_failed) {
      merged = std::move(failed);
      failed = Batch();
      have_failed = false;
      any_batch = true;
    }
    uint64_t seq = 0;
    for (Job& job : jobs) {
      if (!job.is_batch) continue;
      seq = std::max(seq, job.batch.seq);
      merged.Append(std::move(job.batch));
      any_batch = true;
    }
    Done done;
    if (any_batch && store_ == nullptr) {
      // The last commit failed: start again from a fresh connection. The
      // retried batch is idempotent (upserts, ledger rows keyed by lease,
      // its leases looked up: ForgetFresh), so frames of the failed commit
      // that reached the WAL anyway do no harm.
      auto reopened = reopen_ ? reopen_()
                              : Result<std::unique_ptr<Store>>(
                                    Status::Unavailable("storage: closed"));
      if (reopened.ok()) {
        // Frames of the failed commit may sit in the WAL, read back from a
        // page cache that a failed fsync marked clean: the new connection
        // would see them as committed and the idempotent retry would write
        // (and sync) nothing. A checkpoint copies them into the database
        // and syncs it, so "committed" is true again before we say so.
        Status synced = (*reopened)->Checkpoint();
        if (synced.ok()) {
          store_ = std::move(*reopened);
        } else {
          done.status = synced;
        }
      } else {
        done.status = reopened.status();
      }
    }
    if (any_batch && store_ != nullptr) {
      auto start = std::chrono::steady_clock::now();
      done.status = Apply(merged);
      done.commit_us = std::chrono::duration_cast<std::chrono::microseconds>(
                           std::chrono::steady_clock::now() - start)
                           .count();
      if (!done.status.ok()) store_.reset();
    }
    if (any_batch) {
      done.seq = seq;
      if (!done.status.ok()) {
        failed = std::move(merged);
        // Its frames may have reached the WAL all the same (see above):
        // leases the store would take as new could be stored already.
        failed.leases_put.ForgetFresh();
        have_failed = true;
      } else {
        merged.Clear();
      }
    }
    // Reads run after the batches queued with them, so they see every
    // change the loop made before asking.
    for (Job& job : jobs) {
      if (job.is_batch) continue;
      if (store_ != nullptr) job.read(*store_);  // else `then` reports it
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (any_batch && seq > 0) done_.push_back(std::move(done));
      // Committed, merged and the batches merged into it are empty now
      // (a failed merge was moved to `failed`, and keeps no room).
      OfferSpare(std::move(merged));
      for (Job& job : jobs) {
        if (job.is_batch) {
          OfferSpare(std::move(job.batch));
        } else {
          thens_.push_back(std::move(job.then));
        }
      }
    }
    jobs.clear();
    uv_async_send(&async_);
    if (any_batch) WantStock();
  }
}

Status StorageWorker::Apply(Batch& batch) {
  if (!encode_leases_ || batch.leases_put.empty()) return store_->Apply(batch);
  encoded_.clear();
  Status s = encode_leases_(batch.leases_put, &encoded_);
  if (s.ok()) {
    std::swap(batch.leases_put, encoded_);
    s = store_->Apply(batch);
    std::swap(batch.leases_put, encoded_);
  }
  if (encoded_.capacity_bytes() > kSpareBytes) encoded_ = LeasePuts();
  return s;
}

void StorageWorker::OnAsync(uv_async_t* handle) {
  auto* self = static_cast<StorageWorker*>(handle->data);
  // Locals, not the spares themselves: a `then` may stop the worker, which
  // calls this again.
  std::vector<Done> done;
  std::vector<std::function<void()>> thens;
  done.swap(self->done_spare_);
  thens.swap(self->thens_spare_);
  {
    std::lock_guard<std::mutex> lock(self->mu_);
    done.swap(self->done_);
    thens.swap(self->thens_);
  }
  for (const Done& d : done) {
    self->done_seq_ = d.seq;  // a Done settles every batch up to its seq
    self->on_done_(d);
  }
  for (auto& t : thens) t();
  done.clear();
  thens.clear();
  if (self->done_spare_.capacity() == 0) self->done_spare_.swap(done);
  if (self->thens_spare_.capacity() == 0) self->thens_spare_.swap(thens);
}

void StorageWorker::Stop(std::function<void()> on_closed) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  StopStocking();
  OnAsync(&async_);  // deliver what finished after the last wake-up
  on_closed_ = std::move(on_closed);
  uv_close(reinterpret_cast<uv_handle_t*>(&async_), [](uv_handle_t* h) {
    auto* self = static_cast<StorageWorker*>(h->data);
    if (self->on_closed_) self->on_closed_();
  });
}

}  // namespace brake
