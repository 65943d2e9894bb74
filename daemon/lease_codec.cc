#include "daemon/lease_codec.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "daemon/lease_writer.h"

namespace brake {
namespace {

using nlohmann::json;

// A Lease as WriteStoredLease reads it.
class LeaseSource {
 public:
  explicit LeaseSource(const Lease& l) : l_(l), numbers_(LeaseNumbers(l)) {}
  std::string_view Text(Lease::Field f) const { return l_.Get(f); }
  int64_t Number(int i) const { return numbers_[static_cast<size_t>(i)]; }
  uint32_t Reserved() const { return l_.reserved; }
  uint32_t Scopes() const { return static_cast<uint32_t>(l_.scopes.size()); }
  std::string_view Scope(uint32_t i) const { return *l_.scopes[i]; }
  size_t Charges() const { return l_.charges.size(); }
  LeaseChargeView Charge(size_t i) const {
    const LeaseCharge& c = l_.charges[i];
    return {c.scope, c.limit, c.resource, c.amount};
  }

 private:
  const Lease& l_;
  const std::array<int64_t, kLeaseNumbers> numbers_;
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
    charge.limit.assign(c.at(1).get<std::string>());
    if (!ParseResource(c.at(2).get<std::string>(), &charge.resource)) {
      return false;
    }
    charge.amount = Integer(c.at(3));
    l->charges.push_back(std::move(charge));
  }
  l->OwnScopes(std::move(all), static_cast<uint32_t>(reserved));
  return true;
}

// The lease's own scopes of format 2 (strings) or 3 (strings, or codes of
// scopes its text fields spell: daemon/lease_writer.h), after its text.
bool DecodeScopes(const json& scopes, int format, const Lease& l,
                  std::vector<std::string>* out) {
  if (!scopes.is_array()) return false;
  for (const json& s : scopes) {
    if (s.is_string()) {
      out->push_back(s.get<std::string>());
      continue;
    }
    const int64_t code = Integer(s);
    if (format < 3 || code < 0 || code >= kScopeCodes) return false;
    if (code == 0) {
      out->push_back("global");
      continue;
    }
    const std::string_view name = l.Get(kScopeCodeFields[code]);
    if (name.empty()) return false;
    out->push_back(std::string(kScopeCodePrefixes[code]) + std::string(name));
  }
  return true;
}

// Formats 2 and 3: the positional array.
bool DecodeArray(std::string_view id, const json& j, Lease* l) {
  if (j.size() != 14) return false;
  const int64_t format = Integer(j.at(0));
  if (format != 2 && format != kLeaseFormat) return false;
  // Positions 1-6 are the text fields after the id, in Lease::Field order.
  DecodeText(id, [&](int f) -> const json& { return j.at(f); }, l);
  l->requests = Integer(j.at(7));
  l->tokens = Integer(j.at(8));
  l->usd_nano = Integer(j.at(9));
  l->granted_at_us = Integer(j.at(10));
  l->expires_at_us = Integer(j.at(11));
  std::vector<std::string> all;
  if (!DecodeScopes(j.at(12), static_cast<int>(format), *l, &all)) {
    return false;
  }
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
    charge.limit.assign(c.at(1).get<std::string>());
    if (!ResourceOfCode(Integer(c.at(2)), &charge.resource)) return false;
    charge.amount = Integer(c.at(3));
    l->charges.push_back(std::move(charge));
  }
  l->OwnScopes(std::move(all), static_cast<uint32_t>(reserved));
  return true;
}

}  // namespace

void AppendEncodedLease(const Lease& l, std::string* text) {
  WriteStoredLease(LeaseSource(l), text);
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
