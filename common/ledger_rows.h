// LedgerRows: the ledger rows a storage batch appends, their texts back to
// back in one string.
//
// Rows are made on the loop thread (each commit, cancel-free settlement and
// expiry) and freed on the storage thread. As a vector of LedgerRow, seven
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

namespace brake {

// One settlement of a lease: a row of the usage ledger, as built by a
// caller that owns its texts (tests, tools).
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
};

inline LedgerView ViewOf(const LedgerRow& r) {
  return LedgerView{r.time_ms,  r.user,         r.task,
                    r.parent,   r.resource,     r.model,
                    r.requests, r.tokens,       r.input_tokens,
                    r.output_tokens, r.usd_nano, r.latency_ms,
                    r.outcome,  r.expired,      r.lease};
}

class LedgerRows {
 public:
  LedgerRows() = default;
  LedgerRows(std::initializer_list<LedgerRow> rows) {
    for (const LedgerRow& r : rows) push_back(r);
  }

  // Copies the row's texts (which must not view this container's).
  void push_back(const LedgerView& row) {
    Entry e;
    e.begin = text_.size();
    const std::string_view texts[kTexts] = {row.user,     row.task,
                                            row.parent,   row.resource,
                                            row.model,    row.outcome,
                                            row.lease};
    for (size_t i = 0; i < kTexts; ++i) {
      text_.append(texts[i]);
      e.end[i] = static_cast<uint32_t>(text_.size() - e.begin);
    }
    e.time_ms = row.time_ms;
    e.numbers = {row.requests,      row.tokens,   row.input_tokens,
                 row.output_tokens, row.usd_nano, row.latency_ms};
    e.expired = row.expired;
    entries_.push_back(e);
  }
  void push_back(const LedgerRow& row) { push_back(ViewOf(row)); }
  // Drops the last row (and its text).
  void pop_back() {
    text_.resize(entries_.back().begin);
    entries_.pop_back();
  }

  size_t size() const { return entries_.size(); }
  bool empty() const { return entries_.empty(); }
  // Const, so that assigning to a field of one (which would change a copy,
  // not the row) does not compile.
  const LedgerView operator[](size_t i) const { return ViewAt(entries_[i]); }
  const LedgerView back() const { return ViewAt(entries_.back()); }

  // Room for `rows` more rows of `text_bytes` in all.
  void reserve(size_t rows, size_t text_bytes) {
    entries_.reserve(entries_.size() + rows);
    text_.reserve(text_.size() + text_bytes);
  }
  size_t text_size() const { return text_.size(); }
  // Forgets the rows, keeping the room they took.
  void clear() {
    entries_.clear();
    text_.clear();
  }

  using Iterator = IndexIterator<LedgerRows>;
  Iterator begin() const { return Iterator(this, 0); }
  Iterator end() const { return Iterator(this, entries_.size()); }

  // Appends `other`'s rows after these; `other` is left empty.
  void Append(LedgerRows&& other) {
    if (entries_.empty()) {
      *this = std::move(other);
    } else {
      const size_t shift = text_.size();
      text_.append(other.text_);
      for (Entry e : other.entries_) {
        e.begin += shift;
        entries_.push_back(e);
      }
    }
    other = LedgerRows();
  }

 private:
  // The texts in order: user, task, parent, resource, model, outcome, lease.
  static constexpr size_t kTexts = 7;
  struct Entry {
    size_t begin = 0;          // the row's first text in text_
    uint32_t end[kTexts] = {};  // each text's end, from `begin`
    int64_t time_ms = 0;
    // requests, tokens, input_tokens, output_tokens, usd_nano, latency_ms
    std::array<int64_t, 6> numbers = {};
    bool expired = false;
  };
  LedgerView ViewAt(const Entry& e) const {
    const std::string_view t = std::string_view(text_).substr(e.begin);
    auto text = [&](size_t i) {
      const uint32_t from = i == 0 ? 0 : e.end[i - 1];
      return t.substr(from, e.end[i] - from);
    };
    return LedgerView{e.time_ms,      text(0),       text(1),
                      text(2),        text(3),       text(4),
                      e.numbers[0],   e.numbers[1],  e.numbers[2],
                      e.numbers[3],   e.numbers[4],  e.numbers[5],
                      text(5),        e.expired,     text(6)};
  }

  std::string text_;
  std::vector<Entry> entries_;
};

}  // namespace brake
