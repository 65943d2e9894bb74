// TextList: a list of short texts (a batch's settled lease ids) back to
// back in one string.
//
// A batch is filled on the loop thread and freed on the storage thread; a
// vector of strings cost an allocation per lease id there (a run's prefix
// and number is longer than a short string holds), freed on the other
// thread. Texts read back as string_views, valid until the next change.
#pragma once

#include <cstddef>
#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/index_iterator.h"

namespace brake {

class TextList {
 public:
  TextList() = default;
  TextList(std::initializer_list<std::string_view> texts) {
    for (std::string_view t : texts) push_back(t);
  }

  // Copies `text` (which must not view this list's).
  void push_back(std::string_view text) {
    text_.append(text);
    ends_.push_back(text_.size());
  }
  // Keeps the first `n` texts (the room the rest took stays).
  void Truncate(size_t n) {
    ends_.resize(n);
    text_.resize(n == 0 ? 0 : ends_[n - 1]);
  }
  // Room for `texts` more texts of `bytes` in all.
  void reserve(size_t texts, size_t bytes) {
    ends_.reserve(ends_.size() + texts);
    text_.reserve(text_.size() + bytes);
  }
  size_t text_size() const { return text_.size(); }
  // Drops every text and keeps the room they took (capacity_bytes).
  void clear() {
    text_.clear();
    ends_.clear();
  }
  size_t capacity_bytes() const {
    return text_.capacity() + ends_.capacity() * sizeof(size_t);
  }
  size_t size() const { return ends_.size(); }
  bool empty() const { return ends_.empty(); }
  std::string_view operator[](size_t i) const {
    const size_t from = i == 0 ? 0 : ends_[i - 1];
    return std::string_view(text_).substr(from, ends_[i] - from);
  }

  using Iterator = IndexIterator<TextList>;
  Iterator begin() const { return Iterator(this, 0); }
  Iterator end() const { return Iterator(this, ends_.size()); }

  // Appends `other`'s texts after these; `other` is left empty (with the
  // room it did not hand over).
  void Append(TextList&& other) {
    if (ends_.empty()) {
      std::swap(*this, other);  // other gets our room, cleared below
    } else {
      const size_t shift = text_.size();
      text_.append(other.text_);
      for (size_t end : other.ends_) ends_.push_back(end + shift);
    }
    other.clear();  // its room stays with it
  }

  friend bool operator==(const TextList& a, const TextList& b) {
    return a.text_ == b.text_ && a.ends_ == b.ends_;
  }

 private:
  std::string text_;
  std::vector<size_t> ends_;
};

}  // namespace brake
