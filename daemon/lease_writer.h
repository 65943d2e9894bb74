// WriteStoredLease: the stored form of an open lease (format 3,
// daemon/lease_codec.h), written from either of the two places a lease is
// read from: a Lease (EncodeLease) or the drain's copy of one
// (daemon/lease_snapshot.h). A source `S` has
//
//   std::string_view Text(Lease::Field f) const;  // kUser .. kFingerprint
//   int64_t Number(int i) const;  // i < kLeaseNumbers, LeaseNumbers' order
//   uint32_t Reserved() const;    // the lease's own scopes: 0 .. Reserved()-1
//   uint32_t Scopes() const;      // and others its charges name, after them
//   std::string_view Scope(uint32_t i) const;
//   size_t Charges() const;
//   LeaseChargeView Charge(size_t i) const;
//
// Written by hand into a buffer sized for the worst case (every string byte
// escaped as \u00XX), with a cursor: no capacity check, call or strlen per
// piece (a nlohmann array per lease cost more than the whole decision).
#pragma once

#include <array>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "budget/lease.h"
#include "common/decimal.h"
#include "common/json_plain.h"

namespace brake {

inline constexpr int kLeaseFormat = 3;

// Format 3 writes a lease's own scope as a code when it is one its text
// fields spell (as a grant's are): global, its user, its task, its parent
// and its resource, 0 to 4 in that order; a code is the prefix and the
// field, never an empty one (a lease with no parent has no code 3).
inline constexpr int kScopeCodes = 5;
inline constexpr std::string_view kScopeCodePrefixes[kScopeCodes] = {
    "", "user:", "task:", "task:", "resource:"};
inline constexpr Lease::Field kScopeCodeFields[kScopeCodes] = {
    Lease::kId, Lease::kUser, Lease::kTask, Lease::kParent,
    Lease::kResource};

// The code of `scope` among a lease's whose text field `f` reads
// `field(f)`, or -1 when it has none.
template <typename FieldOf>
int ScopeCode(std::string_view scope, const FieldOf& field) {
  if (scope == "global") return 0;
  for (int code = 1; code < kScopeCodes; ++code) {
    const std::string_view prefix = kScopeCodePrefixes[code];
    if (scope.size() > prefix.size() &&
        scope.compare(0, prefix.size(), prefix) == 0 &&
        scope.substr(prefix.size()) == field(kScopeCodeFields[code])) {
      return code;
    }
  }
  return -1;
}

// A lease's numbers in the stored form's order.
inline constexpr int kLeaseNumbers = 5;
inline std::array<int64_t, kLeaseNumbers> LeaseNumbers(const Lease& l) {
  return {l.requests, l.tokens, l.usd_nano, l.granted_at_us, l.expires_at_us};
}

struct LeaseChargeView {
  uint32_t scope = 0;  // an index into the source's scopes
  std::string_view limit;
  Resource resource = Resource::kRequests;
  int64_t amount = 0;
};

// Resource codes of formats 2 and 3; fixed here, not the enum's order.
inline int ResourceCode(Resource r) {
  switch (r) {
    case Resource::kRequests: return 0;
    case Resource::kTokens: return 1;
    case Resource::kUsd: return 2;
  }
  return 0;
}

// The resource of a code, false for none.
inline bool ResourceOfCode(int64_t code, Resource* out) {
  switch (code) {
    case 0: *out = Resource::kRequests; return true;
    case 1: *out = Resource::kTokens; return true;
    case 2: *out = Resource::kUsd; return true;
    default: return false;
  }
}

namespace lease_writer_internal {

class Cursor {
 public:
  // `buf` is reused across leases: grown to `worst` when short, never
  // shrunk or zero-filled again.
  Cursor(std::string* buf, size_t worst) : out_(*buf) {
    if (out_.size() < worst) out_.resize(worst);
    p_ = out_.data();
  }
  void Char(char c) { *p_++ = c; }
  void String(std::string_view v) {
    *p_++ = '"';
    if (IsPlainJsonText(v)) {  // the common case: copied whole
      std::memcpy(p_, v.data(), v.size());
      p_ += v.size();
      *p_++ = '"';
      return;
    }
    for (char ch : v) {
      unsigned char c = static_cast<unsigned char>(ch);
      if (c >= 0x20 && c != '"' && c != '\\') {
        *p_++ = ch;  // requests were parsed as UTF-8, so this is too
      } else if (c == '"' || c == '\\') {
        *p_++ = '\\';
        *p_++ = ch;
      } else {
        static const char kHex[] = "0123456789abcdef";
        std::memcpy(p_, "\\u00", 4);
        p_[4] = kHex[c >> 4];
        p_[5] = kHex[c & 15];
        p_ += 6;
      }
    }
    *p_++ = '"';
  }
  void Int(int64_t v) { p_ = WriteDecimal(p_, v); }
  // Appends what was written to `text`.
  void AppendTo(std::string* text) const {
    text->append(out_.data(), static_cast<size_t>(p_ - out_.data()));
  }

 private:
  std::string& out_;
  char* p_;
};

}  // namespace lease_writer_internal

// Appends the stored form of the lease `s` describes to `text`.
template <typename S>
void WriteStoredLease(const S& s, std::string* text) {
  size_t strings = 0;
  for (int f = Lease::kUser; f < Lease::kFields; ++f) {
    strings += s.Text(static_cast<Lease::Field>(f)).size();
  }
  for (uint32_t i = 0; i < s.Reserved(); ++i) strings += s.Scope(i).size() + 3;
  for (size_t i = 0; i < s.Charges(); ++i) {
    const LeaseChargeView c = s.Charge(i);
    strings += c.limit.size() + 40;
    // A scope none of the lease's own is written in each charge naming it.
    if (c.scope >= s.Reserved()) strings += s.Scope(c.scope).size();
  }
  thread_local std::string buffer;
  // 512: punctuation and integers.
  lease_writer_internal::Cursor w(&buffer, 6 * strings + 512);
  w.Char('[');
  w.Int(kLeaseFormat);
  for (int f = Lease::kUser; f < Lease::kFields; ++f) {
    w.Char(',');
    w.String(s.Text(static_cast<Lease::Field>(f)));
  }
  for (int i = 0; i < kLeaseNumbers; ++i) {
    w.Char(',');
    w.Int(s.Number(i));
  }
  w.Char(',');
  w.Char('[');
  auto field = [&s](Lease::Field f) { return s.Text(f); };
  for (uint32_t i = 0; i < s.Reserved(); ++i) {
    if (i > 0) w.Char(',');
    if (const int code = ScopeCode(s.Scope(i), field); code >= 0) {
      w.Int(code);
    } else {
      w.String(s.Scope(i));
    }
  }
  w.Char(']');
  w.Char(',');
  w.Char('[');
  for (size_t i = 0; i < s.Charges(); ++i) {
    const LeaseChargeView c = s.Charge(i);
    if (i > 0) w.Char(',');
    w.Char('[');
    if (c.scope < s.Reserved()) {
      w.Int(c.scope);
    } else {
      w.String(s.Scope(c.scope));
    }
    w.Char(',');
    w.String(c.limit);
    w.Char(',');
    w.Int(ResourceCode(c.resource));
    w.Char(',');
    w.Int(c.amount);
    w.Char(']');
  }
  w.Char(']');
  w.Char(']');
  w.AppendTo(text);
}

}  // namespace brake
