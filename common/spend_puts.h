// SpendPuts: the spend rows a storage batch upserts, their scopes back to
// back in one string (a TextList).
//
// Rows are made on the loop thread (Engine::Drain, once per subject whose
// settled spend changed) and freed on the storage thread. As a vector of
// SpendRow, a row cost an allocation for its scope (a task's is longer than
// a short string holds), freed on the other thread: in strict durability,
// where each loop turn drains, one per settlement at one request in flight.
// Rows read back as SpendView, valid until the next change.
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

// Settled totals of one subject scope since it first appeared (absolute
// values, not deltas: a put replaces the row).
struct SpendRow {
  std::string scope;
  int64_t requests = 0;
  int64_t tokens = 0;
  int64_t usd_nano = 0;  // 1 usd = 1e9
};

// The same row viewing a scope someone else owns.
struct SpendView {
  std::string_view scope;
  int64_t requests = 0;
  int64_t tokens = 0;
  int64_t usd_nano = 0;
};

inline SpendRow RowOf(const SpendView& v) {
  return SpendRow{std::string(v.scope), v.requests, v.tokens, v.usd_nano};
}

class SpendPuts {
 public:
  SpendPuts() = default;
  SpendPuts(std::initializer_list<SpendRow> rows) {
    for (const SpendRow& r : rows) push_back(r);
  }

  // Copies `row` (whose scope must not view this container's).
  void Copy(const SpendView& row) {
    scopes_.push_back(row.scope);
    numbers_.push_back({row.requests, row.tokens, row.usd_nano});
  }
  void push_back(const SpendRow& row) {
    Copy(SpendView{row.scope, row.requests, row.tokens, row.usd_nano});
  }

  size_t size() const { return numbers_.size(); }
  bool empty() const { return numbers_.empty(); }
  const SpendView operator[](size_t i) const {
    const std::array<int64_t, 3>& n = numbers_[i];
    return SpendView{scopes_[i], n[0], n[1], n[2]};
  }
  const SpendView front() const { return (*this)[0]; }

  // Drops every row and keeps the room they took (capacity_bytes).
  void clear() {
    scopes_.clear();
    numbers_.clear();
  }
  size_t capacity_bytes() const {
    return scopes_.capacity_bytes() +
           numbers_.capacity() * sizeof(std::array<int64_t, 3>);
  }

  using Iterator = IndexIterator<SpendPuts>;
  Iterator begin() const { return Iterator(this, 0); }
  Iterator end() const { return Iterator(this, numbers_.size()); }

  // Drops the rows `drop(view)` is true of, keeping the others' order.
  template <typename Drop>
  void EraseIf(Drop drop) {
    SpendPuts kept;
    for (const SpendView row : *this) {
      if (!drop(row)) kept.Copy(row);
    }
    *this = std::move(kept);
  }

  // Appends `other`'s rows after these; `other` is left empty (with the
  // room it did not hand over).
  void Append(SpendPuts&& other) {
    scopes_.Append(std::move(other.scopes_));
    if (numbers_.empty()) {
      std::swap(numbers_, other.numbers_);  // other gets our room
    } else {
      numbers_.insert(numbers_.end(), other.numbers_.begin(),
                      other.numbers_.end());
    }
    other.clear();  // its room stays with it
  }

 private:
  TextList scopes_;
  std::vector<std::array<int64_t, 3>> numbers_;  // requests, tokens, usd_nano
};

// Every row of `puts`, each owning its scope.
inline std::vector<SpendRow> RowsOf(const SpendPuts& puts) {
  std::vector<SpendRow> rows;
  rows.reserve(puts.size());
  for (const SpendView row : puts) rows.push_back(RowOf(row));
  return rows;
}

}  // namespace brake
