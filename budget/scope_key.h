// ScopeRef, ScopeHash, ScopeEq: find a subject scope ("user:alice") in a
// map keyed by the whole string, given its kind prefix ("user:") and name
// ("alice") apart, without building the string.
//
// The hash skips a known kind prefix and mixes in the scope's first byte,
// so "user:" + "alice" and "user:alice" hash alike however they are split.
#pragma once

#include <cstddef>
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
  return prefix == "user:" || prefix == "task:" || prefix == "resource:";
}

inline size_t Mix(std::string_view rest, unsigned char first) {
  return std::hash<std::string_view>{}(rest) ^
         (static_cast<size_t>(first) * 0x9E3779B97F4A7C15ull);
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
    if (r.prefix.empty()) return (*this)(r.name);
    if (r.name.empty() || !scope_key_internal::IsKind(r.prefix)) {
      std::string whole;  // not split at a kind: hash it whole
      whole.reserve(r.prefix.size() + r.name.size());
      whole.append(r.prefix).append(r.name);
      return (*this)(std::string_view(whole));
    }
    return scope_key_internal::Mix(r.name,
                                   static_cast<unsigned char>(r.prefix[0]));
  }
};

struct ScopeEq {
  using is_transparent = void;
  bool operator()(std::string_view a, std::string_view b) const {
    return a == b;
  }
  bool operator()(const ScopeRef& r, std::string_view s) const {
    return s.size() == r.prefix.size() + r.name.size() &&
           s.substr(0, r.prefix.size()) == r.prefix &&
           s.substr(r.prefix.size()) == r.name;
  }
  bool operator()(std::string_view s, const ScopeRef& r) const {
    return (*this)(r, s);
  }
};

}  // namespace brake
