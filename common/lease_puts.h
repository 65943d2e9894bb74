// LeasePuts: the open leases a storage batch puts, each an id and its
// encoded row, back to back in one string.
//
// A batch is filled on the loop thread and freed on the storage thread. As a
// vector of two strings per lease it cost two allocations per open lease on
// the loop thread (an id of a run's prefix and number is longer than a short
// string holds), each freed on the other thread; one string grows once per
// batch. Rows are views, valid until the next change.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/index_iterator.h"

namespace brake {

class LeasePuts {
 public:
  struct Row {
    std::string_view id;
    std::string_view json;  // the daemon's serialized lease
    // Never put before: the store need not look for an earlier row of it.
    bool fresh = false;
  };

  // Adds a row whose text `encode(std::string* text)` appends to `text`.
  template <typename Encode>
  void AddEncoded(std::string_view id, bool fresh, Encode&& encode) {
    Entry e;
    e.begin = text_.size();
    text_.append(id);
    e.json = text_.size();
    encode(&text_);
    e.end = text_.size();
    e.fresh = fresh;
    entries_.push_back(e);
  }
  void Add(std::string_view id, std::string_view json, bool fresh = false) {
    AddEncoded(id, fresh, [&](std::string* text) { text->append(json); });
  }

  size_t size() const { return entries_.size(); }
  bool empty() const { return entries_.empty(); }
  Row operator[](size_t i) const { return RowOf(entries_[i]); }
  // Room for `rows` more rows of `text_bytes` in all, so that a drain's
  // rows do not copy the text each time it doubles.
  void reserve(size_t rows, size_t text_bytes) {
    entries_.reserve(entries_.size() + rows);
    text_.reserve(text_.size() + text_bytes);
  }
  size_t text_size() const { return text_.size(); }
  // Drops every row and keeps the room they took (capacity_bytes).
  void clear() {
    text_.clear();
    entries_.clear();
  }
  size_t capacity_bytes() const {
    return text_.capacity() + entries_.capacity() * sizeof(Entry);
  }

  using Iterator = IndexIterator<LeasePuts>;
  Iterator begin() const { return Iterator(this, 0); }
  Iterator end() const { return Iterator(this, entries_.size()); }

  // Drops the rows `drop(row)` is true for (their text stays until the
  // puts are freed).
  template <typename Drop>
  void EraseIf(Drop drop) {
    std::erase_if(entries_, [&](const Entry& e) { return drop(RowOf(e)); });
  }

  // Marks every row as possibly put before: for a batch retried after a
  // commit of it that may have reached the file after all, so that the
  // store looks for (and replaces) a row it finds rather than adding a
  // second.
  void ForgetFresh() {
    for (Entry& e : entries_) e.fresh = false;
  }

  // Appends `other`'s rows after these; `other` is left empty (with the
  // room it did not hand over).
  void Append(LeasePuts&& other) {
    if (entries_.empty()) {
      std::swap(*this, other);  // other gets our room, cleared below
    } else {
      const size_t shift = text_.size();
      text_.append(other.text_);
      for (Entry e : other.entries_) {
        e.begin += shift;
        e.json += shift;
        e.end += shift;
        entries_.push_back(e);
      }
    }
    other.clear();  // its room stays with it
  }

 private:
  struct Entry {
    size_t begin = 0;  // the id
    size_t json = 0;   // the row, up to `end`
    size_t end = 0;
    bool fresh = false;
  };
  Row RowOf(const Entry& e) const {
    const std::string_view t = text_;
    return Row{t.substr(e.begin, e.json - e.begin),
               t.substr(e.json, e.end - e.json), e.fresh};
  }

  std::string text_;
  std::vector<Entry> entries_;
};

}  // namespace brake
