// LeaseChunks: how open leases are stored, many to a row.
//
// A lease row per lease cost two B-tree operations per granted call (an
// insert, and a delete once settled), the bulk of the storage thread's work
// under load. Instead, the leases put by one batch go into one row of
// `lease_chunks` ("ID\tJSON" lines; a few rows, of about kChunkBytes each,
// when they are many); the lines of a chunk since settled are
// a bitmap in its row of `lease_settled`, a table of its own because SQLite
// rewrites a whole record to change any column of it (the bitmap beside the
// lines rewrote them all at every settlement). Settling a lease sets its
// bit, and a chunk whose every line is settled is deleted, with its bitmap.
// A batch thus writes one new row plus one small row per chunk it settles
// leases in, however many leases it carries. A lease put again (its row
// changed) settles its old line and takes a new one.
//
// Where each open lease lives (chunk, line) is kept in memory (LeaseIndex),
// read from the table on first use. A write changes it at once and keeps
// what it replaced: Commit forgets that, Abandon (the transaction rolled
// back) puts it back. Storage thread only, like the Store.
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/records.h"
#include "common/status.h"
#include "storage/lease_index.h"
#include "storage/sqlite_util.h"

namespace brake::storage {

class LeaseChunks {
 public:
  // Prepares its statements on `db`, which must outlive it.
  Status Prepare(sqlite3* db);

  // Every open lease stored, in id order; rebuilds the index from the table.
  Status Load(std::vector<LeaseRow>* out);

  // Inside the caller's write transaction: settles `deleted` (unknown ids
  // are no-ops), then stores `put` in a new chunk. Undone by Abandon.
  // `deleted` and `put` must outlive the Commit or Abandon that ends the
  // write: what it keeps for the undo views their ids.
  Status Write(const TextList& deleted,
               const LeasePuts& put);
  // The transaction committed: the write's changes stay.
  void Commit();
  // It rolled back: the index is put back as it was before the write.
  void Abandon();

  // A write's lines go into chunks of about this many bytes: SQLite copies
  // a row into a buffer of its own, which malloc maps afresh (page faults
  // on every 4 KiB) when it is a megabyte or more, as braked's mmap
  // threshold is set; a smaller one is taken from memory freed before.
  static constexpr size_t kChunkBytes = size_t{256} << 10;

  // Open leases in the index, and chunk rows it knows (for tests).
  size_t open_leases() const { return index_.size(); }
  size_t chunks() const { return chunks_.size(); }

 private:
  struct Chunk {
    uint32_t lines = 0;
    uint32_t open = 0;
    std::vector<uint64_t> settled;  // bit per line
  };

  Status Rebuild(std::vector<LeaseRow>* out);
  // Chunk `id` for changing (made when new), its old state kept for undo.
  Chunk& Change(int64_t id);
  // Moves `id` from `old` (its position now) to `pos`, noting `old`.
  void SetPos(std::string_view id, std::optional<LeasePos> old,
              std::optional<LeasePos> pos);
  void Settle(std::string_view id);

  sqlite3* db_ = nullptr;
  Statement insert_;          // a new chunk's lines
  Statement settle_;          // a chunk's bitmap
  Statement delete_;          // a chunk whose every line is settled
  Statement delete_settled_;  // and its bitmap
  bool loaded_ = false;
  LeaseIndex index_;
  std::map<int64_t, Chunk> chunks_;
  int64_t next_id_ = 1;
  // What the write in progress replaced, for Abandon: positions in order,
  // and each chunk touched as it was (nullopt: it did not exist).
  // The ids are views into the write's arguments.
  std::vector<std::pair<std::string_view, std::optional<LeasePos>>> undo_pos_;
  std::map<int64_t, std::optional<Chunk>> undo_chunks_;
  // The ids of the write's fresh lines (in no chunk before it), as offset
  // and size in text_.
  std::vector<std::pair<size_t, size_t>> fresh_ids_;
  int64_t undo_next_id_ = 1;
  std::string text_;  // reused: the new chunks' lines
  // Reused: where each new chunk's lines start in text_, and its end.
  std::vector<size_t> starts_;
  std::string bits_;  // reused: a bitmap as hex
};

}  // namespace brake::storage
