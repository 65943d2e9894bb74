// LimiterPuts: the limiter rows a storage batch upserts, their texts back
// to back in one string (a TextList) and their states in one vector.
//
// Rows are made on the loop thread (Engine::Drain, once per changed
// subject per batch) and freed on the storage thread. As a vector of
// LimiterRow, a row cost an allocation for its scope (a task's scope is
// longer than a short string holds) and one for its state, freed on the
// other thread: in strict durability, where each loop turn drains, that was
// two allocations per request at one request in flight. A batch recycled
// with its room (StorageWorker::TakeSpare) fills these without growing
// them. Rows read back as LimiterView, valid until the next change.
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/index_iterator.h"
#include "common/text_list.h"

namespace brake {

// A limiter's stored row, as built by a caller that owns its texts (the
// store's loads, tests, tools).
struct LimiterRow {
  std::string scope;  // concrete scope, e.g. "user:alice"
  std::string name;   // limit name
  std::string algorithm;
  std::vector<int64_t> state;  // Limiter::SaveState()
};

// The same row viewing texts and a state someone else owns.
struct LimiterView {
  std::string_view scope;
  std::string_view name;
  std::string_view algorithm;
  std::span<const int64_t> state;
};

inline LimiterRow RowOf(const LimiterView& v) {
  return LimiterRow{std::string(v.scope), std::string(v.name),
                    std::string(v.algorithm),
                    std::vector<int64_t>(v.state.begin(), v.state.end())};
}

class LimiterPuts {
 public:
  LimiterPuts() = default;
  LimiterPuts(std::initializer_list<LimiterRow> rows) {
    for (const LimiterRow& r : rows) push_back(r);
  }

  // Adds a row whose state `fill(std::vector<int64_t>* state)` appends
  // (Limiter::AppendState), so that no vector is made for it. The texts
  // must not view this container's.
  template <typename Fill>
  void Add(std::string_view scope, std::string_view name,
           std::string_view algorithm, Fill fill) {
    texts_.push_back(scope);
    texts_.push_back(name);
    texts_.push_back(algorithm);
    fill(&values_);
    ends_.push_back(values_.size());
  }
  // Copies `row` (which must not view this container's).
  void Copy(const LimiterView& row) {
    Add(row.scope, row.name, row.algorithm, [&](std::vector<int64_t>* out) {
      out->insert(out->end(), row.state.begin(), row.state.end());
    });
  }
  void push_back(const LimiterRow& row) {
    Copy(LimiterView{row.scope, row.name, row.algorithm, row.state});
  }

  size_t size() const { return ends_.size(); }
  bool empty() const { return ends_.empty(); }
  const LimiterView operator[](size_t i) const {
    const size_t from = i == 0 ? 0 : ends_[i - 1];
    return LimiterView{
        texts_[i * kTexts], texts_[i * kTexts + 1], texts_[i * kTexts + 2],
        std::span<const int64_t>(values_.data() + from, ends_[i] - from)};
  }

  // Drops every row and keeps the room they took (capacity_bytes).
  void clear() {
    texts_.clear();
    values_.clear();
    ends_.clear();
  }
  size_t capacity_bytes() const {
    return texts_.capacity_bytes() + values_.capacity() * sizeof(int64_t) +
           ends_.capacity() * sizeof(size_t);
  }

  using Iterator = IndexIterator<LimiterPuts>;
  Iterator begin() const { return Iterator(this, 0); }
  Iterator end() const { return Iterator(this, ends_.size()); }

  // Drops the rows `drop(view)` is true of, keeping the others' order.
  template <typename Drop>
  void EraseIf(Drop drop) {
    LimiterPuts kept;
    for (const LimiterView row : *this) {
      if (!drop(row)) kept.Copy(row);
    }
    *this = std::move(kept);
  }

  // Appends `other`'s rows after these; `other` is left empty (with the
  // room it did not hand over).
  void Append(LimiterPuts&& other) {
    if (ends_.empty()) {
      std::swap(*this, other);  // other gets our room, cleared below
    } else {
      texts_.Append(std::move(other.texts_));
      const size_t shift = values_.size();
      values_.insert(values_.end(), other.values_.begin(),
                     other.values_.end());
      for (size_t end : other.ends_) ends_.push_back(end + shift);
    }
    other.clear();  // its room stays with it
  }

 private:
  // A row's texts, kTexts of them in texts_ from row * kTexts: scope, name,
  // algorithm.
  static constexpr size_t kTexts = 3;
  TextList texts_;
  std::vector<int64_t> values_;  // the rows' states back to back
  std::vector<size_t> ends_;     // where each row's state ends in values_
};

// Every row of `puts`, each owning its texts.
inline std::vector<LimiterRow> RowsOf(const LimiterPuts& puts) {
  std::vector<LimiterRow> rows;
  rows.reserve(puts.size());
  for (const LimiterView row : puts) rows.push_back(RowOf(row));
  return rows;
}

}  // namespace brake
