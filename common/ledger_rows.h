// LedgerRows: the ledger rows a storage batch appends, their texts back to
// back in one string (a TextList).
//
// Rows are made on the loop thread (each commit and each lease expiry) and
// freed on the storage thread. As a vector of LedgerRow, seven
// strings a row, a settlement cost an allocation for its lease id (a run's
// prefix and number is longer than a short string holds) and one for each
// name past 15 bytes (a task named by a UUID), each freed on the other
// thread; one string grows a few times per batch (LeasePuts does the same
// for open leases). Rows read back as LedgerView, valid until the next
// change.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/index_iterator.h"
#include "common/text_list.h"

namespace brake {

// One settlement of a lease: a row of the usage ledger, as built by a
// caller that owns its texts.
struct LedgerRow {
  int64_t time_ms = 0;  // wall clock, ms since the epoch
  std::string user;
  std::string task;
  std::string parent;    // "" when none
  std::string resource;  // "" when none
  std::string model;     // "" when none
  int64_t requests = 0;
  int64_t tokens = 0;
  int64_t input_tokens = 0;
  int64_t output_tokens = 0;
  int64_t usd_nano = 0;
  int64_t latency_ms = -1;  // -1 when not reported
  std::string outcome;      // ok | error | timeout | throttled | cancelled
  bool expired = false;     // settled by lease expiry, at its estimate
  // The settling client said its figures are its own estimate, not what
  // the downstream reported (the HTTP front's streams cut short).
  bool estimated = false;
  // The settled lease. With the user and the time, the row's key: a row
  // sent again (a batch retried after a failed commit) is dropped.
  std::string lease;
};

// The same row viewing texts someone else owns.
struct LedgerView {
  int64_t time_ms = 0;
  std::string_view user;
  std::string_view task;
  std::string_view parent;
  std::string_view resource;
  std::string_view model;
  int64_t requests = 0;
  int64_t tokens = 0;
  int64_t input_tokens = 0;
  int64_t output_tokens = 0;
  int64_t usd_nano = 0;
  int64_t latency_ms = -1;
  std::string_view outcome;
  bool expired = false;
  std::string_view lease;
  bool estimated = false;
};

inline LedgerView ViewOf(const LedgerRow& r) {
  return LedgerView{r.time_ms,  r.user,         r.task,
                    r.parent,   r.resource,     r.model,
                    r.requests, r.tokens,       r.input_tokens,
                    r.output_tokens, r.usd_nano, r.latency_ms,
                    r.outcome,  r.expired,      r.lease,
                    r.estimated};
}

class LedgerRows {
 public:
  LedgerRows() = default;
  LedgerRows(std::initializer_list<LedgerRow> rows) {
    for (const LedgerRow& r : rows) push_back(r);
  }

  // Copies the row's texts (which must not view this container's).
  void push_back(const LedgerView& row) {
    for (std::string_view t : {row.user, row.task, row.parent, row.resource,
                               row.model, row.outcome, row.lease}) {
      texts_.push_back(t);
    }
    rows_.push_back(Numbers{row.time_ms,
                            {row.requests, row.tokens, row.input_tokens,
                             row.output_tokens, row.usd_nano, row.latency_ms},
                            row.expired, row.estimated});
  }
  void push_back(const LedgerRow& row) { push_back(ViewOf(row)); }
  // Drops the last row (and its texts).
  void pop_back() {
    texts_.Truncate(texts_.size() - kTexts);
    rows_.pop_back();
  }

  size_t size() const { return rows_.size(); }
  bool empty() const { return rows_.empty(); }
  // Const, so that assigning to a field of one (which would change a copy,
  // not the row) does not compile.
  const LedgerView operator[](size_t i) const {
    const Numbers& n = rows_[i];
    auto text = [&](size_t k) { return texts_[i * kTexts + k]; };
    return LedgerView{n.time_ms,   text(0),     text(1),     text(2),
                      text(3),     text(4),     n.values[0], n.values[1],
                      n.values[2], n.values[3], n.values[4], n.values[5],
                      text(5),     n.expired,   text(6),
                      n.estimated};
  }
  const LedgerView back() const { return (*this)[rows_.size() - 1]; }

  // Room for `rows` more rows of `text_bytes` in all.
  void reserve(size_t rows, size_t text_bytes) {
    rows_.reserve(rows_.size() + rows);
    texts_.reserve(rows * kTexts, text_bytes);
  }
  size_t text_size() const { return texts_.text_size(); }
  // Drops every row and keeps the room they took (capacity_bytes).
  void clear() {
    texts_.clear();
    rows_.clear();
  }
  size_t capacity_bytes() const {
    return texts_.capacity_bytes() + rows_.capacity() * sizeof(Numbers);
  }

  using Iterator = IndexIterator<LedgerRows>;
  Iterator begin() const { return Iterator(this, 0); }
  Iterator end() const { return Iterator(this, rows_.size()); }

  // Appends `other`'s rows after these; `other` is left empty (with the
  // room it did not hand over).
  void Append(LedgerRows&& other) {
    texts_.Append(std::move(other.texts_));
    if (rows_.empty()) {
      std::swap(rows_, other.rows_);  // other gets our room, cleared below
    } else {
      rows_.insert(rows_.end(), other.rows_.begin(), other.rows_.end());
    }
    other.clear();  // its room stays with it
  }

 private:
  // A row's texts, kTexts of them in texts_ from row * kTexts: user, task,
  // parent, resource, model, outcome, lease.
  static constexpr size_t kTexts = 7;
  struct Numbers {
    int64_t time_ms = 0;
    // requests, tokens, input_tokens, output_tokens, usd_nano, latency_ms
    std::array<int64_t, 6> values = {};
    bool expired = false;
    bool estimated = false;
  };

  TextList texts_;
  std::vector<Numbers> rows_;
};

}  // namespace brake
