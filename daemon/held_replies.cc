#include "daemon/held_replies.h"

#include <cstddef>
#include <utility>

namespace brake {

void HeldReplies::Add(uint64_t seq, bool must_commit,
                      std::string_view lines) {
  data_ += lines;
  if (!runs_.empty() && runs_.back().seq == seq &&
      runs_.back().must_commit == must_commit) {
    runs_.back().end = data_.size();
  } else {
    runs_.push_back(Run{seq, must_commit, data_.size()});
  }
}

void HeldReplies::MoveReleased(uint64_t released, std::string* out) {
  size_t end = 0;
  size_t runs = 0;
  for (; runs < runs_.size() && runs_[runs].seq <= released; ++runs) {
    end = runs_[runs].end;
  }
  runs_.erase(runs_.begin(), runs_.begin() + static_cast<ptrdiff_t>(runs));
  if (end == 0) return;
  if (runs_.empty() && out->empty()) {
    out->swap(data_);  // data_ keeps out's spare capacity
    return;
  }
  out->append(data_, 0, end);
  data_.erase(0, end);
  for (Run& run : runs_) run.end -= end;
}

void HeldReplies::Clear() {
  runs_.clear();
  data_.clear();
}

}  // namespace brake
