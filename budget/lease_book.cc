#include "budget/lease_book.h"

#include <algorithm>
#include <charconv>
#include <utility>

#include "budget/limiter.h"
#include "common/decimal.h"

namespace brake {
namespace {

void EraseLate(std::multimap<int64_t, std::string>& late, int64_t at_us,
               const std::string& id) {
  auto range = late.equal_range(at_us);
  for (auto it = range.first; it != range.second; ++it) {
    if (it->second == id) {
      late.erase(it);
      return;
    }
  }
}

}  // namespace

uint64_t LeaseBook::OwnNumber(std::string_view id) const {
  if (id.size() <= prefix_.size() || id.size() > prefix_.size() + 19 ||
      id.compare(0, prefix_.size(), prefix_) != 0) {
    return 0;
  }
  std::string_view digits = id.substr(prefix_.size());
  if (digits[0] == '0') return 0;  // not how Open writes a number
  uint64_t n = 0;
  auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), n);
  if (ec != std::errc() || end != digits.data() + digits.size()) return 0;
  return n;
}

const LeaseBook::Slot* LeaseBook::OwnSlot(std::string_view id) const {
  uint64_t n = OwnNumber(id);
  if (n < base_ || n - base_ >= ring_.size()) return nullptr;
  return &ring_[n - base_];
}

LeaseBook::Slot* LeaseBook::SlotOf(std::string_view id) {
  return const_cast<Slot*>(std::as_const(*this).SlotOf(id));
}

const LeaseBook::Slot* LeaseBook::SlotOf(std::string_view id) const {
  if (const Slot* s = OwnSlot(id)) return s;
  if (other_.empty()) return nullptr;
  auto it = other_.find(std::string(id));
  return it == other_.end() ? nullptr : &it->second;
}

Lease& LeaseBook::Open(int64_t expires_at_us) {
  const uint64_t number = base_ + ring_.size();
  if (number == newest_ + 1 && newest_ != 0) {
    IncrementDecimal(&newest_id_, prefix_.size());
  } else {  // the first, or after a restore moved the numbering
    SpellOwn(number, &newest_id_);
  }
  newest_ = number;
  Slot& slot = ring_.emplace_back();
  if (pool_.empty()) {
    slot.lease = new Lease();
  } else {
    slot.lease = pool_.back().release();
    pool_.pop_back();
  }
  Lease& lease = *slot.lease;
  lease.number = number;
  lease.SetText({});
  lease.expires_at_us = expires_at_us;
  lease.names.reset();  // a recycled restored lease's
  if (expires_at_us >= last_expiry_us_) {
    last_expiry_us_ = expires_at_us;
  } else {
    slot.late = true;
    late_.emplace(expires_at_us, IdOf(lease));
  }
  ++open_;
  peak_open_ = std::max(peak_open_, open_);
  List(slot, number, "");
  return lease;
}

void LeaseBook::IdOf(const Lease& lease, std::string* out) const {
  if (lease.number == 0) {
    out->assign(lease.id());
    return;
  }
  if (lease.number == newest_) {  // a grant's: spelled by Open
    out->assign(newest_id_);
    return;
  }
  SpellOwn(lease.number, out);
}

void LeaseBook::SpellOwn(uint64_t number, std::string* out) const {
  char digits[24];
  out->assign(prefix_).append(digits, WriteDecimal(digits, number));
}

std::string LeaseBook::IdOf(const Lease& lease) const {
  std::string id;
  IdOf(lease, &id);
  return id;
}

void LeaseBook::Restore(Lease lease) {
  lease.number = 0;  // its id is its own
  std::string id(lease.id());
  if (uint64_t n = OwnNumber(id); n != 0 && ring_.empty() && n >= base_) {
    base_ = n + 1;
  }
  if (other_.count(id) != 0) return;  // restored twice: the first stays
  late_.emplace(lease.expires_at_us, id);
  Slot slot;
  slot.lease = new Lease(std::move(lease));
  slot.stored = true;
  slot.late = true;
  other_.emplace(std::move(id), std::move(slot));
  ++open_;
}

Lease* LeaseBook::Find(std::string_view id) {
  return const_cast<Lease*>(std::as_const(*this).Find(id));
}

const Lease* LeaseBook::Find(std::string_view id) const {
  const Slot* s = SlotOf(id);
  return s != nullptr && !s->settled ? s->lease : nullptr;
}

std::optional<Settlement> LeaseBook::FindSettled(std::string_view id) const {
  const Slot* s = SlotOf(id);
  if (s == nullptr || !s->settled) return std::nullopt;
  return s->result();
}

void LeaseBook::List(Slot& slot, uint64_t number, std::string_view id) {
  if (slot.listed) return;
  slot.listed = true;
  if (number != 0) {
    dirty_own_.push_back(number);
  } else {
    dirty_other_.emplace_back(id);
  }
}

LeaseBook::Slot* LeaseBook::SlotOf(const Lease& lease) {
  if (lease.number == 0) return SlotOf(lease.id());
  if (lease.number < base_ || lease.number - base_ >= ring_.size()) {
    return nullptr;
  }
  return &ring_[lease.number - base_];
}

void LeaseBook::MarkChanged(const Lease& lease) {
  Slot* slot = SlotOf(lease);
  if (slot != nullptr && !slot->settled) List(*slot, lease.number, lease.id());
}

void LeaseBook::Recycle(std::unique_ptr<Lease> lease) {
  const size_t cap = std::max({kMinPooled, peak_open_, last_peak_open_});
  if (pool_.size() + open_ < cap) pool_.push_back(std::move(lease));
  if (++span_settled_ < kSpan) return;
  span_settled_ = 0;
  last_peak_open_ = peak_open_;
  peak_open_ = open_;
  const size_t keep = std::max(kMinPooled, last_peak_open_);
  if (pool_.size() + open_ > keep) {
    pool_.resize(keep > open_ ? keep - open_ : 0);
  }
}

void LeaseBook::Settle(std::string_view id, const Settlement& s,
                       int64_t now_us) {
  if (Lease* lease = Find(id)) Settle(*lease, s, now_us);
}

void LeaseBook::Settle(Lease& lease, const Settlement& s, int64_t now_us) {
  Slot* slot = SlotOf(lease);
  if (slot == nullptr || slot->settled) return;
  // An earlier run's lease may have this run's spelling (below base_).
  const uint64_t number = lease.number;
  // Its id, spelled only when a list keeps it.
  std::string id;
  if (number == 0 || slot->late) IdOf(lease, &id);
  if (slot->late) EraseLate(late_, lease.expires_at_us, id);
  std::unique_ptr<Lease> object(slot->lease);
  slot->charged_tokens = s.charged_tokens;
  slot->charged_usd_nano = s.charged_usd_nano;
  slot->settled = true;
  slot->settled_at_us = now_us;
  --open_;
  Recycle(std::move(object));
  if (slot->stored) List(*slot, number, id);  // its row goes
  if (number == 0) other_settled_.emplace(now_us, std::move(id));
}

void LeaseBook::ForgetSettledBefore(int64_t cutoff_us) {
  while (!ring_.empty() && ring_.front().settled &&
         ring_.front().settled_at_us < cutoff_us) {
    if (ring_.front().listed && ring_.front().stored) {
      // Not drained yet: its row still has to go.
      SpellOwn(base_, &gone_.emplace_back());
    }
    ring_.pop_front();
    ++base_;
    if (expiry_cursor_ > 0) --expiry_cursor_;
  }
  while (!other_settled_.empty() &&
         other_settled_.begin()->first < cutoff_us) {
    auto it = other_.find(other_settled_.begin()->second);
    if (it != other_.end()) {
      if (it->second.listed && it->second.stored) gone_.push_back(it->first);
      other_.erase(it);
    }
    other_settled_.erase(other_settled_.begin());
  }
}

void LeaseBook::AdvanceCursor() const {
  while (expiry_cursor_ < ring_.size() &&
         (ring_[expiry_cursor_].settled || ring_[expiry_cursor_].late)) {
    ++expiry_cursor_;
  }
}

Lease* LeaseBook::NextExpired(int64_t now_us) {
  AdvanceCursor();
  Lease* first = nullptr;
  if (expiry_cursor_ < ring_.size()) first = ring_[expiry_cursor_].lease;
  if (!late_.empty() &&
      (first == nullptr || late_.begin()->first < first->expires_at_us)) {
    first = Find(late_.begin()->second);
  }
  return first != nullptr && first->expires_at_us <= now_us ? first : nullptr;
}

int64_t LeaseBook::NextExpiryUs() const {
  AdvanceCursor();
  int64_t next = kNever;
  if (expiry_cursor_ < ring_.size()) {
    next = ring_[expiry_cursor_].lease->expires_at_us;
  }
  if (!late_.empty() && (next == kNever || late_.begin()->first < next)) {
    next = late_.begin()->first;
  }
  return next;
}

void LeaseBook::ForEachOpen(const std::function<void(Lease&)>& f) {
  for (Slot& slot : ring_) {
    if (!slot.settled) f(*slot.lease);
  }
  for (auto& [id, slot] : other_) {
    if (!slot.settled) f(*slot.lease);
  }
}

bool LeaseBook::Drain(Batch* batch, const LeaseEncoder& encode) {
  bool any = false;
  auto drain = [&](Slot& slot, const std::string& id) {
    slot.listed = false;
    if (!slot.settled) {
      batch->leases_put.AddEncoded(id, /*fresh=*/!slot.stored,
                                   [&](std::string* text) {
                                     encode(*slot.lease, text);
                                   });
      slot.stored = true;
      any = true;
    } else if (slot.stored) {
      batch->leases_deleted.push_back(id);
      slot.stored = false;
      any = true;
    }
  };
  // Room for as many rows as the last drain put, and an eighth more: most
  // leases listed under a load that settles them are settled by now and
  // put nothing.
  LeasePuts& puts = batch->leases_put;
  const size_t rows_before = puts.size();
  const size_t text_before = puts.text_size();
  puts.reserve(last_rows_ + last_rows_ / 8, last_bytes_ + last_bytes_ / 8);
  std::string& id = drain_id_;
  uint64_t spelled = 0;  // the number `id` spells (0: none yet)
  for (uint64_t number : dirty_own_) {
    if (number < base_ || number - base_ >= ring_.size()) continue;  // gone_
    Slot& slot = ring_[number - base_];
    // Listed in the order they were opened, mostly one apart: the next
    // id is the last one counted up in place.
    if (spelled != 0 && number == spelled + 1) {
      IncrementDecimal(&id, prefix_.size());
    } else {
      SpellOwn(number, &id);
    }
    spelled = number;
    drain(slot, id);
  }
  for (const std::string& other : dirty_other_) {
    if (auto it = other_.find(other); it != other_.end()) drain(it->second, other);
  }
  for (const std::string& gone : gone_) {
    batch->leases_deleted.push_back(gone);
    any = true;
  }
  last_rows_ = puts.size() - rows_before;
  last_bytes_ = puts.text_size() - text_before;
  dirty_own_.clear();
  dirty_other_.clear();
  gone_.clear();
  return any;
}

}  // namespace brake
