// LeaseBook: the open leases, the settled ones kept for duplicate answers,
// their expiry order and their dirty marks. Owned by the Engine; loop
// thread only; pure (time is an argument).
//
// A lease of this run has the id prefix + N, N counting up from 1, and
// lives in slot N of a ring: opening one appends, finding one parses N, so
// neither hashes nor misses the cache however many are open (an
// unordered_map of open leases did both). With one lease TTL, expiry order
// is opening order, and the ring is also the expiry queue; a lease that
// expires before one opened earlier (the TTL was shortened) goes to a small
// ordered map instead. Once settled, a slot keeps only the settlement
// (48 bytes) until the front of the ring passes it, at least a TTL later.
// Leases of earlier runs (restored at startup, other prefixes) and their
// settlements live in a map beside the ring.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "budget/fifo.h"
#include "budget/lease.h"
#include "common/records.h"

namespace brake {

class LeaseBook {
 public:
  // Settled lease objects are kept for reuse, so that opening a lease
  // allocates nothing. The kept and the open together are at most the most
  // that were open at once lately (the larger peak of this span of kSpan
  // settlements and the last), or kMinPooled: a steady load, however many
  // leases it holds open, reuses them all, and what a burst left over goes
  // within two spans.
  static constexpr size_t kMinPooled = 256;
  static constexpr uint32_t kSpan = 1 << 16;

  explicit LeaseBook(std::string prefix) : prefix_(std::move(prefix)) {}

  // A new open lease with its number and expiry set and every other field
  // empty (a recycled object: its strings keep their capacity), listed for
  // the next Drain. Valid until it is settled.
  Lease& Open(int64_t expires_at_us);
  // The id of a lease of this book.
  std::string IdOf(const Lease& lease) const;
  void IdOf(const Lease& lease, std::string* out) const;
  // An earlier run's lease (its own prefix), listed for nothing: its row is
  // stored. An id that parses as one of this run's numbers moves the
  // numbering past it while no lease of this run exists yet.
  void Restore(Lease lease);

  // The open lease `id`, or nullptr.
  Lease* Find(std::string_view id);
  const Lease* Find(std::string_view id) const;
  // The settlement of a lease settled within the duplicate window, or
  // none (never settled, unknown, or forgotten).
  std::optional<Settlement> FindSettled(std::string_view id) const;
  // Ends the open lease `lease` (of this book) with `s`; it answers
  // duplicates from now on. `lease` is gone afterwards.
  void Settle(Lease& lease, const Settlement& s, int64_t now_us);
  // The same for the lease `id`, if it is open.
  void Settle(std::string_view id, const Settlement& s, int64_t now_us);
  // Lists an open lease for the next Drain (its row changed).
  void MarkChanged(const Lease& lease);
  // Drops the settlements of leases settled before `cutoff_us` (those of
  // this run only once every slot before them is settled too). A stored row
  // not yet deleted by a Drain still is, by the next one.
  void ForgetSettledBefore(int64_t cutoff_us);

  // The open lease that expires first if it expires at or before now_us,
  // else nullptr.
  Lease* NextExpired(int64_t now_us);
  // The earliest expiry of an open lease, or kNever.
  int64_t NextExpiryUs() const;

  size_t open() const { return open_; }
  // Settled lease objects kept for reuse.
  size_t pooled() const { return pool_.size(); }
  // Calls f(Lease&) for every open lease.
  void ForEachOpen(const std::function<void(Lease&)>& f);

  bool dirty() const {
    return !dirty_own_.empty() || !dirty_other_.empty() || !gone_.empty();
  }
  // Puts listed open leases (encoded, each with its id) and deletes the
  // stored rows of listed settled ones into `batch`; a lease opened and
  // settled between two drains was never stored and needs neither. True
  // when it added a row.
  bool Drain(Batch* batch, const LeaseEncoder& encode);

 private:
  // 32 bytes: a ring slot outlives its lease by a TTL (duplicate answers),
  // so under a steady acquire + commit load the ring holds a TTL's worth of
  // settled slots (at 10,000 leases/s and the default TTL, six million).
  // Open, a slot owns its lease; settled, it keeps what settling charged
  // in the same word.
  struct Slot {
    Slot() : lease(nullptr) {}
    Slot(Slot&& o) noexcept : lease(nullptr) { *this = std::move(o); }
    Slot& operator=(Slot&& o) noexcept {
      if (this == &o) return *this;
      if (!settled) delete lease;
      if (o.settled) {
        charged_tokens = o.charged_tokens;
      } else {
        lease = o.lease;
      }
      charged_usd_nano = o.charged_usd_nano;
      settled_at_us = o.settled_at_us;
      settled = o.settled;
      listed = o.listed;
      stored = o.stored;
      late = o.late;
      o.settled = false;
      o.lease = nullptr;
      return *this;
    }
    Slot(const Slot&) = delete;
    Slot& operator=(const Slot&) = delete;
    ~Slot() {
      if (!settled) delete lease;
    }
    Settlement result() const {
      Settlement s;
      s.charged_tokens = charged_tokens;
      s.charged_usd_nano = charged_usd_nano;
      return s;
    }

    union {
      Lease* lease;            // while open (owned; null in a spare slot)
      int64_t charged_tokens;  // once settled
    };
    int64_t charged_usd_nano = 0;  // once settled
    int64_t settled_at_us = 0;
    bool settled = false;
    bool listed = false;  // in a dirty list
    bool stored = false;  // a Drain put its row while it was open
    bool late = false;    // its expiry is in late_
  };
  static_assert(sizeof(Slot) <= 32);

  // This run's number of `id`, or 0 when it is not one of this run's ids.
  uint64_t OwnNumber(std::string_view id) const;
  const Slot* OwnSlot(std::string_view id) const;
  // Sets `out` to the id of this run's lease `number`: prefix + number.
  void SpellOwn(uint64_t number, std::string* out) const;
  // This run's slot of `id`, else an earlier run's; nullptr when neither.
  Slot* SlotOf(std::string_view id);
  const Slot* SlotOf(std::string_view id) const;
  // The slot of `lease`, an open lease of this book.
  Slot* SlotOf(const Lease& lease);
  void List(Slot& slot, uint64_t number, std::string_view id);
  void Recycle(std::unique_ptr<Lease> lease);
  // Moves expiry_cursor_ to the first open in-order slot.
  void AdvanceCursor() const;

  std::string prefix_;
  uint64_t base_ = 1;  // the number of ring_[0]
  // The number of the lease opened last (0: none yet) and its id, which the
  // next Open counts up in place.
  uint64_t newest_ = 0;
  std::string newest_id_;
  Fifo<Slot> ring_;
  size_t open_ = 0;
  int64_t last_expiry_us_ = INT64_MIN;  // of the last in-order lease opened
  mutable size_t expiry_cursor_ = 0;    // index into ring_
  std::multimap<int64_t, std::string> late_;  // out-of-order and restored
  std::unordered_map<std::string, Slot> other_;  // earlier runs' leases
  std::multimap<int64_t, std::string> other_settled_;  // settled_at -> id
  std::vector<uint64_t> dirty_own_;
  std::vector<std::string> dirty_other_;
  std::vector<std::string> gone_;  // forgotten before Drain deleted their rows
  // The rows the last Drain put and their bytes (ids and text), for the
  // next one's reserve.
  size_t last_rows_ = 0;
  size_t last_bytes_ = 0;
  // Drain's spelling of the ids it puts, kept so that its room stays (an
  // id is longer than a short string holds: strict mode drains each turn).
  std::string drain_id_;
  // Settled lease objects kept for reuse (kMinPooled says how many).
  std::vector<std::unique_ptr<Lease>> pool_;
  size_t peak_open_ = 0;       // in this span
  size_t last_peak_open_ = 0;  // in the span before
  uint32_t span_settled_ = 0;
};

}  // namespace brake
