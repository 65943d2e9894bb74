// Name tables: an enum's wire names declared once, as data, with lookups
// both ways. Used for algorithms, resources, periods, breaker states,
// causes and outcomes. Header-only, constexpr data; any thread.
#pragma once

#include <array>
#include <cstddef>
#include <string_view>
#include <utility>

namespace brake {

template <typename E, size_t N>
using NameTable = std::array<std::pair<E, std::string_view>, N>;

// The wire name of `value`, or `fallback` when the table lacks it.
template <typename E, size_t N>
std::string_view NameOf(const NameTable<E, N>& table, E value,
                        std::string_view fallback = "unknown") {
  for (const auto& [v, name] : table) {
    if (v == value) return name;
  }
  return fallback;
}

// Sets *out to the value named `name`; false (and *out untouched) if none.
template <typename E, size_t N>
bool LookupName(const NameTable<E, N>& table, std::string_view name, E* out) {
  for (const auto& [v, n] : table) {
    if (n == name) {
      *out = v;
      return true;
    }
  }
  return false;
}

}  // namespace brake
