#include "storage/lease_chunks.h"

#include <algorithm>
#include <string_view>
#include <utility>

namespace brake::storage {
namespace {

bool Bit(const std::vector<uint64_t>& bits, uint32_t i) {
  return i / 64 < bits.size() && (bits[i / 64] >> (i % 64) & 1) != 0;
}

void SetBit(std::vector<uint64_t>* bits, uint32_t i) {
  if (i / 64 >= bits->size()) bits->resize(i / 64 + 1, 0);
  (*bits)[i / 64] |= uint64_t{1} << (i % 64);
}

// The bitmap as hex digits, bit i in digit i / 4 (value 1 << i % 4); digits
// after the last set bit are left out, so "" is "none settled". A digit is
// a nibble of a word: a batch that settles leases of many chunks encodes
// each one's bitmap, and bit by bit that was most of the thread's time in
// LeaseChunks::Write.
void EncodeBits(const std::vector<uint64_t>& bits, std::string* out) {
  static const char kHex[] = "0123456789abcdef";
  out->clear();
  size_t words = bits.size();
  while (words > 0 && bits[words - 1] == 0) --words;
  if (words == 0) return;
  const size_t top =
      (words - 1) * 64 + 63 - static_cast<size_t>(__builtin_clzll(bits[words - 1]));
  out->resize(top / 4 + 1);
  for (size_t d = 0; d < out->size(); ++d) {
    (*out)[d] = kHex[bits[d / 16] >> (d % 16 * 4) & 15];
  }
}

bool DecodeBits(std::string_view hex, std::vector<uint64_t>* bits) {
  bits->clear();
  for (uint32_t d = 0; d < hex.size(); ++d) {
    char c = hex[d];
    unsigned v = c >= '0' && c <= '9'   ? c - '0'
                 : c >= 'a' && c <= 'f' ? c - 'a' + 10
                                        : 16;
    if (v == 16) return false;
    for (uint32_t b = 0; b < 4; ++b) {
      if (v >> b & 1) SetBit(bits, d * 4 + b);
    }
  }
  return true;
}

Status Malformed(int64_t chunk) {
  return Status::Unavailable("storage: malformed lease_chunks row " +
                             std::to_string(chunk));
}

}  // namespace

Status LeaseChunks::Prepare(sqlite3* db) {
  db_ = db;
  const std::pair<Statement*, const char*> table[] = {
      {&insert_,
       "INSERT INTO lease_chunks(id, leases) VALUES(?1, ?2) "
       "ON CONFLICT(id) DO UPDATE SET leases = excluded.leases"},
      {&settle_,
       "INSERT INTO lease_settled(chunk, settled) VALUES(?1, ?2) "
       "ON CONFLICT(chunk) DO UPDATE SET settled = excluded.settled"},
      {&delete_, "DELETE FROM lease_chunks WHERE id = ?1"},
      {&delete_settled_, "DELETE FROM lease_settled WHERE chunk = ?1"},
  };
  for (const auto& [stmt, sql] : table) {
    Result<Statement> prepared = Statement::Prepare(db, sql);
    if (!prepared.ok()) return prepared.status();
    *stmt = std::move(*prepared);
  }
  return Status::Ok();
}

Status LeaseChunks::Load(std::vector<LeaseRow>* out) {
  out->clear();
  Status s = Rebuild(out);
  std::sort(out->begin(), out->end(),
            [](const LeaseRow& a, const LeaseRow& b) { return a.id < b.id; });
  return s;
}

Status LeaseChunks::Rebuild(std::vector<LeaseRow>* out) {
  index_.clear();
  chunks_.clear();
  undo_pos_.clear();
  undo_chunks_.clear();
  next_id_ = 1;
  loaded_ = false;
  // A bitmap without its chunk (none is written) is ignored, and new
  // chunks are numbered past it so that none inherits it.
  Result<int64_t> last_settled = QueryInt(
      db_, "SELECT coalesce(max(chunk), 0) FROM lease_settled",
      "load leases");
  if (!last_settled.ok()) return last_settled.status();
  next_id_ = *last_settled + 1;
  Result<Statement> select = Statement::Prepare(
      db_,
      "SELECT c.id, c.leases, coalesce(s.settled, '') FROM lease_chunks c "
      "LEFT JOIN lease_settled s ON s.chunk = c.id ORDER BY c.id");
  if (!select.ok()) return select.status();
  Status s = select->ForEachRow("load leases", [&](const Statement& row) {
    const int64_t id = row.ColumnInt(0);
    if (id <= 0) return Malformed(id);
    const std::string text = row.ColumnText(1);
    Chunk chunk;
    if (!DecodeBits(row.ColumnText(2), &chunk.settled)) return Malformed(id);
    std::string_view rest = text;
    while (!rest.empty()) {
      size_t end = rest.find('\n');
      std::string_view line = rest.substr(0, end);
      rest = end == std::string_view::npos ? "" : rest.substr(end + 1);
      size_t tab = line.find('\t');
      if (tab == std::string_view::npos) return Malformed(id);
      const uint32_t n = chunk.lines++;
      if (Bit(chunk.settled, n)) continue;
      ++chunk.open;
      index_.Set(line.substr(0, tab), LeasePos{id, n});
      if (out != nullptr) {
        out->push_back(LeaseRow{std::string(line.substr(0, tab)),
                                std::string(line.substr(tab + 1))});
      }
    }
    chunks_[id] = std::move(chunk);
    next_id_ = std::max(next_id_, id + 1);
    return Status::Ok();
  });
  if (!s.ok()) {
    index_.clear();
    chunks_.clear();
    return s;
  }
  loaded_ = true;
  return Status::Ok();
}

LeaseChunks::Chunk& LeaseChunks::Change(int64_t id) {
  auto it = chunks_.find(id);
  if (!undo_chunks_.count(id)) {
    undo_chunks_[id] = it != chunks_.end() ? std::optional<Chunk>(it->second)
                                           : std::nullopt;
  }
  return it != chunks_.end() ? it->second : chunks_[id];
}

void LeaseChunks::SetPos(std::string_view id, std::optional<LeasePos> old,
                         std::optional<LeasePos> pos) {
  undo_pos_.emplace_back(id, old);
  index_.Set(id, pos);
}

void LeaseChunks::Settle(std::string_view id) {
  std::optional<LeasePos> p = index_.Find(id);
  if (!p) return;  // not stored, or settled already
  Chunk& c = Change(p->chunk);
  if (!Bit(c.settled, p->line) && c.open > 0) {
    SetBit(&c.settled, p->line);
    --c.open;
  }
  SetPos(id, p, std::nullopt);
}

Status LeaseChunks::Write(const TextList& deleted,
                          const LeasePuts& put) {
  Commit();  // nothing of an earlier write is pending any more
  if (deleted.empty() && put.empty()) return Status::Ok();
  for (const LeasePuts::Row row : put) {
    // Lines are "ID\tJSON": neither may break them (braked's ids and its
    // lease encoding never do). The id byte by byte: find_first_of looked
    // each of its bytes up in "\t\n" with a call.
    const bool id_breaks = std::any_of(row.id.begin(), row.id.end(), [](char c) {
      return c == '\t' || c == '\n';
    });
    if (id_breaks || row.json.find('\n') != std::string::npos) {
      return Status::Unavailable("storage: put lease (" + std::string(row.id) +
                                 ") failed: a tab or newline in its row");
    }
  }
  if (!loaded_) {
    if (Status s = Rebuild(nullptr); !s.ok()) return s;
  }
  undo_next_id_ = next_id_;
  for (const std::string_view id : deleted) Settle(id);
  if (!put.empty()) {
    text_.clear();
    text_.reserve(put.text_size() + 2 * put.size());
    // The new chunks take ids from next_id_ on, chunk k's lines from
    // starts_[k] in text_.
    const int64_t first = next_id_;
    starts_.clear();
    Chunk* c = nullptr;
    for (const LeasePuts::Row row : put) {
      if (c == nullptr || text_.size() - starts_.back() >= kChunkBytes) {
        // Made before its lines (a line put twice settles here); std::map
        // keeps it where it is while Settle adds other chunks.
        starts_.push_back(text_.size());
        c = &Change(next_id_++);
      }
      const LeasePos pos{next_id_ - 1, c->lines++};
      ++c->open;
      if (row.fresh) {
        // Never stored, so in no chunk: undone by dropping it (Abandon
        // finds its id in text_), not by a copy of its id and position.
        fresh_ids_.emplace_back(text_.size(), row.id.size());
        index_.Set(row.id, pos);
      } else {
        Settle(row.id);  // its earlier line, if any: now it has none
        SetPos(row.id, std::nullopt, pos);
      }
      text_.append(row.id).push_back('\t');
      text_.append(row.json).push_back('\n');
    }
    starts_.push_back(text_.size());
    const std::string_view text = text_;
    for (size_t k = 0; k + 1 < starts_.size(); ++k) {
      // Lines are separated, not terminated: up to the last one's newline.
      const size_t end = starts_[k + 1] - 1;
      insert_.BindInt(1, first + static_cast<int64_t>(k));
      insert_.BindText(2, text.substr(starts_[k], end - starts_[k]));
      if (Status s = insert_.Run("put lease chunk"); !s.ok()) return s;
    }
  }
  // Every chunk whose lines this write settled, the new ones included (a
  // lease put twice in the write settles its first line).
  for (const auto& [id, before] : undo_chunks_) {
    Chunk& c = chunks_[id];
    const bool settled_any = before ? before->settled != c.settled
                                    : !c.settled.empty();
    if (!settled_any) continue;
    Status s;
    if (c.open == 0) {
      delete_.BindInt(1, id);
      s = delete_.Run("delete lease chunk");
      if (s.ok()) {
        delete_settled_.BindInt(1, id);
        s = delete_settled_.Run("delete settled bitmap");
      }
    } else {
      EncodeBits(c.settled, &bits_);
      settle_.BindInt(1, id);
      settle_.BindText(2, bits_);
      s = settle_.Run("settle leases in chunk");
    }
    if (!s.ok()) return s;
  }
  return Status::Ok();
}

void LeaseChunks::Commit() {
  for (const auto& [id, before] : undo_chunks_) {
    auto it = chunks_.find(id);
    if (it != chunks_.end() && it->second.open == 0) chunks_.erase(it);
  }
  undo_pos_.clear();
  undo_chunks_.clear();
  fresh_ids_.clear();
  undo_next_id_ = next_id_;
}

void LeaseChunks::Abandon() {
  for (auto it = undo_pos_.rbegin(); it != undo_pos_.rend(); ++it) {
    index_.Set(it->first, it->second);
  }
  // Last: a fresh id put twice in the write has an undo entry for its
  // second line, which restored its first.
  for (const auto& [at, size] : fresh_ids_) {
    index_.Set(std::string_view(text_).substr(at, size), std::nullopt);
  }
  for (auto& [id, before] : undo_chunks_) {
    if (before) {
      chunks_[id] = std::move(*before);
    } else {
      chunks_.erase(id);
    }
  }
  next_id_ = undo_next_id_;
  undo_pos_.clear();
  undo_chunks_.clear();
  fresh_ids_.clear();
}

}  // namespace brake::storage
