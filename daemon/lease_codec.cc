#include "daemon/lease_codec.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "common/decimal.h"
#include "common/json_plain.h"

namespace brake {
namespace {

using nlohmann::json;

constexpr int kFormat = 2;

// Resource codes of format 2; fixed here, not the enum's order.
int ResourceCode(Resource r) {
  switch (r) {
    case Resource::kRequests: return 0;
    case Resource::kTokens: return 1;
    case Resource::kUsd: return 2;
  }
  return 0;
}

bool ResourceOfCode(int64_t code, Resource* out) {
  switch (code) {
    case 0: *out = Resource::kRequests; return true;
    case 1: *out = Resource::kTokens; return true;
    case 2: *out = Resource::kUsd; return true;
    default: return false;
  }
}

// Writes a lease into a buffer sized for the worst case (every string byte
// escaped as \u00XX), with a cursor: no capacity check, call or strlen per
// piece.
class LeaseWriter {
 public:
  // `buf` is reused across leases: grown to the worst case when short,
  // never shrunk or zero-filled again.
  LeaseWriter(const Lease& l, std::string* buf) : out_(*buf) {
    size_t strings = 0;
    for (int f = Lease::kUser; f < Lease::kFields; ++f) {
      strings += l.Get(static_cast<Lease::Field>(f)).size();
    }
    for (const std::string* s : l.scopes) strings += s->size() + 3;
    for (const LeaseCharge& c : l.charges) {
      strings += c.limit.size() + 40;
      if (c.scope >= l.reserved) strings += l.ScopeOf(c).size();
    }
    const size_t worst = 6 * strings + 512;  // 512: punctuation, integers
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
  // Appends the lease written to `text`.
  void AppendTo(std::string* text) const {
    text->append(out_.data(), static_cast<size_t>(p_ - out_.data()));
  }

 private:
  std::string& out_;
  char* p_;
};

// Integers only: a stored 1e19 must not reach get<int64_t>() (an
// out-of-range float-to-integer conversion).
int64_t Integer(const json& v) {
  if (!v.is_number_integer() ||
      (v.is_number_unsigned() &&
       v.get<uint64_t>() > static_cast<uint64_t>(INT64_MAX))) {
    throw std::out_of_range("not an int64");
  }
  return v.get<int64_t>();
}

// The index in `all` of a charge's scope, appended after the lease's own
// when it is none of them.
uint32_t ScopeIndex(std::vector<std::string>* all, std::string scope) {
  auto it = std::find(all->begin(), all->end(), scope);
  if (it != all->end()) return static_cast<uint32_t>(it - all->begin());
  all->push_back(std::move(scope));
  return static_cast<uint32_t>(all->size() - 1);
}

// Sets a decoded lease's text fields; `field(f)` reads field f (f > kId).
template <typename Read>
void DecodeText(std::string_view id, Read field, Lease* l) {
  std::array<std::string, Lease::kFields> text;
  text[Lease::kId] = id;
  for (int f = Lease::kUser; f < Lease::kFields; ++f) {
    text[f] = field(f).template get<std::string>();
  }
  Lease::Text views;
  for (int f = 0; f < Lease::kFields; ++f) views[f] = text[f];
  l->SetText(views);
}

// Format 1: the JSON object of schema 3 and before.
bool DecodeObject(const json& j, Lease* l) {
  static const char* const kNames[Lease::kFields] = {
      "id", "user", "task", "parent", "resource", "model", "fingerprint"};
  DecodeText(j.at("id").get<std::string>(),
             [&](int f) -> const json& { return j.at(kNames[f]); }, l);
  l->requests = Integer(j.at("requests"));
  l->tokens = Integer(j.at("tokens"));
  l->usd_nano = Integer(j.at("usd_nano"));
  l->granted_at_us = Integer(j.at("granted_at_us"));
  l->expires_at_us = Integer(j.at("expires_at_us"));
  auto all = j.at("scopes").get<std::vector<std::string>>();
  const size_t reserved = all.size();
  for (const json& c : j.at("charges")) {
    LeaseCharge charge;
    charge.scope = ScopeIndex(&all, c.at(0).get<std::string>());
    charge.limit = c.at(1).get<std::string>();
    if (!ParseResource(c.at(2).get<std::string>(), &charge.resource)) {
      return false;
    }
    charge.amount = Integer(c.at(3));
    l->charges.push_back(std::move(charge));
  }
  l->OwnScopes(std::move(all), static_cast<uint32_t>(reserved));
  return true;
}

// Format 2: the positional array.
bool DecodeArray(std::string_view id, const json& j, Lease* l) {
  if (j.size() != 14 || Integer(j.at(0)) != kFormat) return false;
  // Positions 1-6 are the text fields after the id, in Lease::Field order.
  DecodeText(id, [&](int f) -> const json& { return j.at(f); }, l);
  l->requests = Integer(j.at(7));
  l->tokens = Integer(j.at(8));
  l->usd_nano = Integer(j.at(9));
  l->granted_at_us = Integer(j.at(10));
  l->expires_at_us = Integer(j.at(11));
  auto all = j.at(12).get<std::vector<std::string>>();
  const size_t reserved = all.size();
  const json& charges = j.at(13);
  if (!charges.is_array()) return false;
  for (const json& c : charges) {
    if (!c.is_array() || c.size() != 4) return false;
    LeaseCharge charge;
    if (c.at(0).is_string()) {
      charge.scope = ScopeIndex(&all, c.at(0).get<std::string>());
    } else {
      const int64_t at = Integer(c.at(0));
      if (at < 0 || static_cast<uint64_t>(at) >= reserved) return false;
      charge.scope = static_cast<uint32_t>(at);
    }
    charge.limit = c.at(1).get<std::string>();
    if (!ResourceOfCode(Integer(c.at(2)), &charge.resource)) return false;
    charge.amount = Integer(c.at(3));
    l->charges.push_back(std::move(charge));
  }
  l->OwnScopes(std::move(all), static_cast<uint32_t>(reserved));
  return true;
}

}  // namespace

// Written by hand: it runs for every granted acquire still open at a
// drain, on the loop thread (a nlohmann array per lease cost more than the
// whole decision).
void AppendEncodedLease(const Lease& l, std::string* text) {
  thread_local std::string buffer;
  LeaseWriter w(l, &buffer);
  w.Char('[');
  w.Int(kFormat);
  for (int f = Lease::kUser; f < Lease::kFields; ++f) {
    w.Char(',');
    w.String(l.Get(static_cast<Lease::Field>(f)));
  }
  for (int64_t v : {l.requests, l.tokens, l.usd_nano, l.granted_at_us,
                    l.expires_at_us}) {
    w.Char(',');
    w.Int(v);
  }
  w.Char(',');
  w.Char('[');
  for (size_t i = 0; i < l.reserved; ++i) {
    if (i > 0) w.Char(',');
    w.String(*l.scopes[i]);
  }
  w.Char(']');
  w.Char(',');
  w.Char('[');
  for (size_t i = 0; i < l.charges.size(); ++i) {
    const LeaseCharge& c = l.charges[i];
    if (i > 0) w.Char(',');
    w.Char('[');
    if (c.scope < l.reserved) {
      w.Int(c.scope);
    } else {
      w.String(l.ScopeOf(c));
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

std::string EncodeLease(const Lease& l) {
  std::string text;
  AppendEncodedLease(l, &text);
  return text;
}

Result<Lease> DecodeLease(std::string_view id, std::string_view text) {
  json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  auto bad = [] { return Status::Unavailable("storage: malformed lease row"); };
  Lease l;
  // The stored form is ours; any mismatch means damage, not user error.
  try {
    if (j.is_array()) {
      if (!DecodeArray(id, j, &l)) return bad();
    } else if (j.is_object()) {
      if (!DecodeObject(j, &l)) return bad();
    } else {
      return bad();
    }
  } catch (const std::exception&) {  // json::exception or out_of_range
    return bad();
  }
  return l;
}

}  // namespace brake
