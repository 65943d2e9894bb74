// LimiterKey: how the engine names one limit of one concrete scope
// ("user:alice" + '\x1f' + "rps"), for its maps and its storage rows.
#pragma once

#include <string>
#include <string_view>

namespace brake {

inline constexpr char kLimiterKeySep = '\x1f';

inline std::string LimiterKey(std::string_view scope, std::string_view name) {
  std::string key;
  key.reserve(scope.size() + name.size() + 1);
  key.append(scope);
  key.push_back(kLimiterKeySep);
  key.append(name);
  return key;
}

}  // namespace brake
