// ScopeRef, ScopeHash, ScopeEq: find a subject scope ("user:alice") in a
// map keyed by the whole string, given its kind prefix ("user:") and name
// ("alice") apart, without building the string.
//
// The hash skips a known kind prefix and mixes in the scope's first byte,
// so "user:" + "alice" and "user:alice" hash alike however they are split.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <string>
#include <string_view>

namespace brake {

struct ScopeRef {
  // A kind ("user:", "task:", "resource:"); any other prefix works too,
  // but is hashed the slow way (the whole scope built first).
  std::string_view prefix;
  std::string_view name;
};

namespace scope_key_internal {

// The length of the kind prefix `s` starts with (0 when none).
inline size_t KindLength(std::string_view s) {
  if (s.size() > 5 && (std::memcmp(s.data(), "user:", 5) == 0 ||
                       std::memcmp(s.data(), "task:", 5) == 0)) {
    return 5;
  }
  if (s.size() > 9 && std::memcmp(s.data(), "resource:", 9) == 0) return 9;
  return 0;
}

inline bool IsKind(std::string_view prefix) {
  // Compared in place: `prefix == "user:"` is a call to memcmp each.
  if (prefix.size() == 5) {
    return prefix[4] == ':' && (std::memcmp(prefix.data(), "user", 4) == 0 ||
                                std::memcmp(prefix.data(), "task", 4) == 0);
  }
  return prefix.size() == 9 && std::memcmp(prefix.data(), "resource:", 9) == 0;
}

inline uint64_t Load64(const char* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  return v;
}
inline uint64_t Load32(const char* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

// murmur3's 64-bit finalizer: every input bit flips about half the output
// bits.
inline uint64_t Fmix64(uint64_t h) {
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdull;
  h ^= h >> 33;
  h *= 0xc4ceb9fe1a85ec53ull;
  h ^= h >> 33;
  return h;
}

// A multiply-xorshift hash of `s`, inline (std::hash of a string is a call
// into libstdc++ and cost a third of a lookup of a short name): eight bytes
// at a time, the last one to eight read whole (overlapping when the length
// is not a multiple of eight), then Fmix64. Not
// keyed: names chosen to collide can slow a table, as with std::hash.
inline uint64_t HashBytes(std::string_view s) {
  constexpr uint64_t kMul = 0x9E3779B97F4A7C15ull;
  const char* p = s.data();
  size_t n = s.size();
  uint64_t h = (n + 1) * kMul;
  auto add = [&h](uint64_t w) {
    h = (h ^ w) * kMul;
    h ^= h >> 32;
  };
  if (n > 8) {
    for (; n > 8; p += 8, n -= 8) add(Load64(p));
    add(Load64(p + n - 8));  // the last (up to) eight, overlapping
  } else if (n >= 4) {
    add(Load32(p) << 32 | Load32(p + n - 4));
  } else if (n > 0) {
    add(static_cast<uint64_t>(static_cast<unsigned char>(p[0])) << 16 |
        static_cast<uint64_t>(static_cast<unsigned char>(p[n / 2])) << 8 |
        static_cast<unsigned char>(p[n - 1]));
  }
  return Fmix64(h);
}

// a == b for `n` bytes each; inline for up to 16 (a libc memcmp call cost
// as much as the rest of a lookup's compare).
[[gnu::always_inline]] inline bool SameBytes(const char* a, const char* b,
                                             size_t n) {
  if (n > 16) return std::memcmp(a, b, n) == 0;
  if (n >= 8) {
    return ((Load64(a) ^ Load64(b)) |
            (Load64(a + n - 8) ^ Load64(b + n - 8))) == 0;
  }
  if (n >= 4) {
    return ((Load32(a) ^ Load32(b)) |
            (Load32(a + n - 4) ^ Load32(b + n - 4))) == 0;
  }
  for (size_t i = 0; i < n; ++i) {
    if (a[i] != b[i]) return false;
  }
  return true;
}
inline bool Same(std::string_view a, std::string_view b) {
  return a.size() == b.size() && SameBytes(a.data(), b.data(), a.size());
}
inline size_t Mix(std::string_view rest, unsigned char first) {
  return HashBytes(rest) ^ (static_cast<size_t>(first) * 0x9E3779B97F4A7C15ull);
}

}  // namespace scope_key_internal

struct ScopeHash {
  using is_transparent = void;
  size_t operator()(std::string_view scope) const {
    if (scope.empty()) return 0;
    return scope_key_internal::Mix(
        scope.substr(scope_key_internal::KindLength(scope)),
        static_cast<unsigned char>(scope[0]));
  }
  size_t operator()(const std::string& scope) const {
    return (*this)(std::string_view(scope));
  }
  size_t operator()(const ScopeRef& r) const {
    if (!r.name.empty() && scope_key_internal::IsKind(r.prefix)) [[likely]] {
      return scope_key_internal::Mix(r.name,
                                     static_cast<unsigned char>(r.prefix[0]));
    }
    return Whole(r);
  }

 private:
  // Not split at a kind: hashed as the whole scope (out of line, so that
  // the usual case stays small enough to inline).
  [[gnu::noinline]] size_t Whole(const ScopeRef& r) const {
    if (r.prefix.empty()) return (*this)(r.name);
    std::string whole;
    whole.reserve(r.prefix.size() + r.name.size());
    whole.append(r.prefix).append(r.name);
    return (*this)(std::string_view(whole));
  }
};

struct ScopeEq {
  using is_transparent = void;
  bool operator()(std::string_view a, std::string_view b) const {
    return scope_key_internal::Same(a, b);
  }
  bool operator()(const ScopeRef& r, std::string_view s) const {
    return s.size() == r.prefix.size() + r.name.size() &&
           scope_key_internal::SameBytes(s.data(), r.prefix.data(),
                                         r.prefix.size()) &&
           scope_key_internal::SameBytes(s.data() + r.prefix.size(),
                                         r.name.data(), r.name.size());
  }
  bool operator()(std::string_view s, const ScopeRef& r) const {
    return (*this)(r, s);
  }
};

}  // namespace brake
