#include "daemon/lease_snapshot.h"

#include <array>
#include <cstdint>
#include <cstring>
#include <vector>

#include "daemon/lease_writer.h"

namespace brake {
namespace {

// The layout, every integer in this process's byte order:
//
//   u32 ends[kFields]  where each text field ends in the text
//   text               the text fields back to back
//   i64 numbers[kLeaseNumbers]  LeaseNumbers(lease)
//   u32 scopes, u32 reserved, then per scope: u32 size, bytes
//   u32 charges, then per charge: u32 scope, u32 resource code,
//                      i64 amount, u32 size of the limit's name, bytes
class Writer {
 public:
  explicit Writer(char* p) : p_(p) {}
  void U32(uint32_t v) { Bytes(&v, sizeof v); }
  void I64(int64_t v) { Bytes(&v, sizeof v); }
  void Bytes(const void* data, size_t size) {
    std::memcpy(p_, data, size);
    p_ += size;
  }
  void Sized(std::string_view s) {
    U32(static_cast<uint32_t>(s.size()));
    Bytes(s.data(), s.size());
  }

 private:
  char* p_;
};

// Reads a snapshot; every read is bounds-checked, and a failed one leaves
// the reader failed.
class Reader {
 public:
  explicit Reader(std::string_view s) : rest_(s) {}
  bool ok() const { return ok_; }
  bool done() const { return ok_ && rest_.empty(); }
  uint32_t U32() {
    uint32_t v = 0;
    Copy(&v, sizeof v);
    return v;
  }
  int64_t I64() {
    int64_t v = 0;
    Copy(&v, sizeof v);
    return v;
  }
  std::string_view Bytes(size_t size) {
    if (!ok_ || rest_.size() < size) {
      ok_ = false;
      return {};
    }
    std::string_view out = rest_.substr(0, size);
    rest_.remove_prefix(size);
    return out;
  }
  std::string_view Sized() { return Bytes(U32()); }

 private:
  void Copy(void* out, size_t size) {
    std::string_view b = Bytes(size);
    if (ok_) std::memcpy(out, b.data(), size);
  }

  std::string_view rest_;
  bool ok_ = true;
};

// A snapshot as WriteStoredLease reads it: views into the snapshot.
class SnapshotSource {
 public:
  // False when `s` is not a whole snapshot.
  bool Read(std::string_view s) {
    Reader r(s);
    uint32_t ends[Lease::kFields];
    for (uint32_t& e : ends) e = r.U32();
    if (!r.ok()) return false;
    for (int f = 1; f < Lease::kFields; ++f) {
      if (ends[f] < ends[f - 1]) return false;
    }
    const std::string_view text = r.Bytes(ends[Lease::kFields - 1]);
    if (!r.ok()) return false;
    for (int f = 0; f < Lease::kFields; ++f) {
      const uint32_t begin = f == 0 ? 0 : ends[f - 1];
      text_[f] = text.substr(begin, ends[f] - begin);
    }
    for (int64_t& n : numbers_) n = r.I64();
    const uint32_t scopes = r.U32();
    reserved_ = r.U32();
    if (!r.ok() || reserved_ > scopes || scopes > s.size()) return false;
    scopes_.clear();
    for (uint32_t i = 0; i < scopes && r.ok(); ++i) {
      scopes_.push_back(r.Sized());
    }
    const uint32_t charges = r.U32();
    if (!r.ok() || charges > s.size()) return false;
    charges_.clear();
    for (uint32_t i = 0; i < charges && r.ok(); ++i) {
      LeaseChargeView c;
      c.scope = r.U32();
      const uint32_t code = r.U32();
      c.amount = r.I64();
      c.limit = r.Sized();
      if (!r.ok() || c.scope >= scopes || !ResourceOfCode(code, &c.resource)) {
        return false;
      }
      charges_.push_back(c);
    }
    return r.done();
  }

  std::string_view Text(Lease::Field f) const { return text_[f]; }
  int64_t Number(int i) const { return numbers_[i]; }
  uint32_t Reserved() const { return reserved_; }
  uint32_t Scopes() const { return static_cast<uint32_t>(scopes_.size()); }
  std::string_view Scope(uint32_t i) const { return scopes_[i]; }
  size_t Charges() const { return charges_.size(); }
  LeaseChargeView Charge(size_t i) const { return charges_[i]; }

 private:
  std::string_view text_[Lease::kFields];
  int64_t numbers_[kLeaseNumbers] = {};
  uint32_t reserved_ = 0;
  // Reused from row to row: their capacity stays.
  std::vector<std::string_view> scopes_;
  std::vector<LeaseChargeView> charges_;
};

}  // namespace

void AppendLeaseSnapshot(const Lease& l, std::string* out) {
  // Each field where the lease keeps it: its text or a scope's key.
  Lease::Text fields;
  uint32_t ends[Lease::kFields];
  uint32_t text = 0;
  for (int f = 0; f < Lease::kFields; ++f) {
    fields[f] = l.Get(static_cast<Lease::Field>(f));
    text += static_cast<uint32_t>(fields[f].size());
    ends[f] = text;
  }
  size_t size = sizeof(uint32_t) * Lease::kFields + text +
                sizeof(int64_t) * kLeaseNumbers + 3 * sizeof(uint32_t);
  for (const std::string* s : l.scopes) size += sizeof(uint32_t) + s->size();
  for (const LeaseCharge& c : l.charges) {
    size += 3 * sizeof(uint32_t) + sizeof(int64_t) + c.limit.size();
  }
  const size_t at = out->size();
  out->resize(at + size);
  Writer w(out->data() + at);
  w.Bytes(ends, sizeof ends);
  for (const std::string_view field : fields) {
    w.Bytes(field.data(), field.size());
  }
  const std::array<int64_t, kLeaseNumbers> numbers = LeaseNumbers(l);
  w.Bytes(numbers.data(), sizeof numbers);
  w.U32(static_cast<uint32_t>(l.scopes.size()));
  w.U32(l.reserved);
  for (const std::string* s : l.scopes) w.Sized(*s);
  w.U32(static_cast<uint32_t>(l.charges.size()));
  for (const LeaseCharge& c : l.charges) {
    w.U32(c.scope);
    w.U32(static_cast<uint32_t>(ResourceCode(c.resource)));
    w.I64(c.amount);
    w.Sized(c.limit);
  }
}

Status EncodeSnapshots(const LeasePuts& snapshots, LeasePuts* stored) {
  thread_local SnapshotSource source;
  // The stored form is longer than the snapshot: room for both halves.
  stored->reserve(snapshots.size(), 2 * snapshots.text_size());
  for (const LeasePuts::Row row : snapshots) {
    if (!source.Read(row.json)) {
      return Status::Unavailable("storage: the drained copy of lease " +
                                 std::string(row.id) +
                                 " does not read back (a bug)");
    }
    stored->AddEncoded(row.id, row.fresh, [](std::string* text) {
      WriteStoredLease(source, text);
    });
  }
  return Status::Ok();
}

}  // namespace brake
