// Lease: the reservation a granted acquire holds until it is settled.
//
// Plain data owned by the Engine. A lease remembers exactly what it charged
// where (each limiter and each subject scope), so that settlement refunds or
// extra-charges the same places, even after a restart.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "budget/limit_spec.h"
#include "common/line_pool.h"
#include "common/small_vector.h"

namespace brake {

class Limiter;

struct LeaseCharge {
  LinePoolString limit;  // limit name (past 15 bytes in LinePool)
  // The engine's limiter, while it holds one (not stored; nullptr after a
  // restore). Valid while the lease is open: a subject with an open lease
  // is never evicted, and replacing a limiter removes its charges.
  Limiter* limiter = nullptr;
  int64_t amount = 0;  // what was charged, in resource units
  uint32_t scope = 0;  // the limiter's subject: an index into Lease::scopes
  Resource resource = Resource::kRequests;
};

// Move-only: a lease's scopes may point into its own `names`. Made from
// LinePool (the book makes each with new): hundreds of thousands open at
// once under a heavy load, and there on huge pages, where from malloc each
// 4 KiB of them first cost a page fault (~10 us on the development VM).
struct Lease : LinePooled {
  Lease() = default;
  Lease(Lease&&) = default;
  Lease& operator=(Lease&&) = default;
  Lease(const Lease&) = delete;
  Lease& operator=(const Lease&) = delete;

  // This run's lease number (its id is the book's prefix and the number,
  // spelled by LeaseBook::IdOf, not kept), or 0 for an earlier run's lease
  // or a decoded one, whose id is `id()`.
  uint64_t number = 0;
  // The text fields, kept back to back in one string: one allocation at
  // most, where seven strings took 224 bytes and a heap block for each
  // past 15 bytes (most are empty).
  enum Field { kId, kUser, kTask, kParent, kResource, kModel, kFingerprint,
               kFields };
  using Text = std::array<std::string_view, kFields>;
  std::string_view Get(Field f) const {
    // A scope past the end (a moved-from lease's) reads as the text's.
    const uint8_t* at = KeyedAt(f);
    if (at != nullptr && *at != 0 && *at <= scopes.size()) {
      return NameOfKey(*scopes[*at - 1u]);
    }
    return FieldOf(text_, ends_, f);
  }
  std::string_view id() const { return Get(kId); }  // "" for this run's
  std::string_view user() const { return Get(kUser); }
  std::string_view task() const { return Get(kTask); }
  std::string_view parent() const { return Get(kParent); }
  std::string_view resource() const { return Get(kResource); }
  std::string_view model() const { return Get(kModel); }
  std::string_view fingerprint() const { return Get(kFingerprint); }
  // The text fields kept in the lease's own text, back to back (a field
  // read from a scope's key is not there).
  std::string_view AllText() const { return text_; }
  // Sets every text field (none may view this lease's own text).
  void SetText(const Text& fields) {
    keyed_ = {};
    text_.clear();
    size_t bytes = 1;  // and the terminating zero
    for (const std::string_view field : fields) bytes += field.size();
    // Once past the inline bytes, whole lines: no block grows twice.
    if (bytes > text_.capacity() + 1) {
      text_.reserve((bytes + LinePool::kLine - 1) / LinePool::kLine *
                        LinePool::kLine - 1);
    }
    for (int f = 0; f < kFields; ++f) {
      // Most are empty: an append is a call into std::string.
      if (!fields[f].empty()) text_.append(fields[f]);
      ends_[f] = static_cast<uint32_t>(text_.size());
    }
  }
  // Sets one text field (`value` may view this lease's text); every field
  // is in the text afterwards.
  void Set(Field f, std::string_view value) {
    std::string copies[kFields];  // SetText clears text_
    Text fields;
    for (int i = 0; i < kFields; ++i) {
      copies[i] = i == f ? value : Get(static_cast<Field>(i));
      fields[i] = copies[i];
    }
    SetText(fields);
  }
  // Reads the user, task, parent and resource from the keys of scopes
  // (an index into `scopes` each, or kInText: from the text, where SetText
  // put them). A grant's lease names them in its scopes anyway ("user:" +
  // its user, a key of the engine's that stays while the lease is open), so
  // that its text holds only what no scope names: for most leases nothing
  // past the string's 15 inline bytes, and no block of its own.
  static constexpr uint32_t kInText = UINT32_MAX;
  void KeyFields(uint32_t user, uint32_t task, uint32_t parent,
                 uint32_t resource) {
    auto at = [](uint32_t i) {
      return static_cast<uint8_t>(i == kInText ? 0 : i + 1);
    };
    keyed_ = {at(user), at(task), at(parent), at(resource)};
  }

  int64_t requests = 0;  // reserved
  int64_t tokens = 0;    // reserved
  int64_t usd_nano = 0;  // reserved
  int64_t granted_at_us = 0;
  int64_t expires_at_us = 0;
  // The subject scopes the lease names, no string copied: the first
  // `reserved` hold its reservation (and its spend, once settled); any after
  // are other scopes its charges name (a restored row only; no acquire
  // makes one). Each points at the engine's key of a subject in memory,
  // which stays while a lease holds it (the engine finds the subject from
  // its key's address), or into `names`.
  // In the lease itself up to four (global, user, task, resource), so that
  // the usual new lease is one allocation.
  SmallVector<const std::string*, 4> scopes;
  uint32_t reserved = 0;
  // A decoded (or hand-made) lease's own scope strings, until the engine
  // restores it and points its reserved scopes at its subjects; null in a
  // lease the engine made (a pointer there, not a vector, so that a lease
  // object is four lines).
  std::unique_ptr<std::vector<std::string>> names;
  SmallVector<LeaseCharge, 1> charges;  // the first in the lease itself

  // The scope a charge names.
  const std::string& ScopeOf(const LeaseCharge& c) const {
    return *scopes[c.scope];
  }
  // Gives the lease its own copies of `all` (the first `n_reserved` its
  // reserved scopes), replacing its scopes.
  void OwnScopes(std::vector<std::string> all, uint32_t n_reserved) {
    if (keyed_ != Keyed{}) {  // the fields leave the old scopes' keys first
      Set(kUser, Get(kUser));
    }
    names = std::make_unique<std::vector<std::string>>(std::move(all));
    scopes.clear();
    for (const std::string& s : *names) scopes.push_back(&s);
    reserved = n_reserved;
  }

 private:
  static std::string_view FieldOf(std::string_view text,
                                  const uint32_t* ends, Field f) {
    const uint32_t begin = f == kId ? 0 : ends[f - 1];
    return text.substr(begin, ends[f] - begin);
  }
  // "user:alice" -> "alice": a key's name, after its kind.
  static std::string_view NameOfKey(std::string_view key) {
    return key.substr(key.find(':') + 1);
  }
  // Where field `f` is read from a scope key (0: in the text, else the
  // scope's index + 1); nullptr for a field never keyed.
  using Keyed = std::array<uint8_t, 4>;  // user, task, parent, resource
  const uint8_t* KeyedAt(Field f) const {
    switch (f) {
      case kUser: return &keyed_[0];
      case kTask: return &keyed_[1];
      case kParent: return &keyed_[2];
      case kResource: return &keyed_[3];
      default: return nullptr;
    }
  }

  // Past 15 bytes in LinePool, not malloc (common/line_pool.h).
  LinePoolString text_;
  uint32_t ends_[kFields] = {};  // where each field ends in text_
  Keyed keyed_ = {};
};

// Four lines of LinePool: hundreds of thousands are open at once under a
// heavy load, and each of them is memory written fresh (on the development
// VM ~6 us per 4 KiB the host has not backed yet). A new member must find
// room or say why a fifth line is worth it.
static_assert(sizeof(Lease) <= 4 * LinePool::kLine);

// Appends a lease's row to `text` in the form the drain hands to storage
// (the daemon's AppendLeaseSnapshot, turned into the stored form on the
// storage thread; tests use the stored form, AppendEncodedLease, directly).
using LeaseEncoder = std::function<void(const Lease&, std::string* text)>;

// What settling a lease charged; a duplicate commit or cancel answers the
// first settlement's again.
struct Settlement {
  int64_t charged_tokens = 0;
  int64_t charged_usd_nano = 0;
  bool duplicate = false;
};

}  // namespace brake
