// HeldReplies: one connection's replies that wait for the storage batch
// their answers depend on (strict durability, or batched mode behind an
// old batch), in the order they were answered.
//
// The lines are kept in one buffer, cut into runs that wait for the same
// batch, so holding a reply costs an append, not an allocation, and
// releasing every held reply hands the buffer over whole. Loop thread only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace brake {

class HeldReplies {
 public:
  bool empty() const { return runs_.empty(); }
  size_t bytes() const { return data_.size(); }

  // Holds `lines` (whole reply lines) until batch `seq` commits.
  // `must_commit`: their requests changed state, so they fail if it fails.
  void Add(uint64_t seq, bool must_commit, std::string_view lines);
  // Whether the oldest run waits for a batch <= `released`.
  bool Releasable(uint64_t released) const {
    return !runs_.empty() && runs_.front().seq <= released;
  }
  // Appends to *out the lines of every run, oldest first, up to the first
  // that waits for a batch > `released`.
  void MoveReleased(uint64_t released, std::string* out);
  // Batches up to `failed` failed: the lines of their runs that must
  // commit become rewrite(lines), and all their runs are released at once
  // (they wait for batch 0).
  template <class Rewrite>
  void Fail(uint64_t failed, Rewrite rewrite);
  void Clear();

 private:
  struct Run {
    uint64_t seq;      // the batch these replies wait for
    bool must_commit;  // their requests changed state: fail if it fails
    size_t end;        // where their lines end in data_
  };
  // A vector, not a deque: a deque allocates a block and frees one every
  // few runs as it moves along, even when it holds one run at a time.
  std::vector<Run> runs_;
  std::string data_;
};

template <class Rewrite>
void HeldReplies::Fail(uint64_t failed, Rewrite rewrite) {
  std::string data;
  size_t begin = 0;
  for (Run& run : runs_) {
    std::string lines = data_.substr(begin, run.end - begin);
    begin = run.end;
    if (run.seq <= failed) {
      if (run.must_commit) lines = rewrite(lines);
      run.seq = 0;
    }
    data += lines;
    run.end = data.size();
  }
  data_.swap(data);
}

}  // namespace brake
