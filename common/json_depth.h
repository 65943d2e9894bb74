// NestedDeeperThan: a linear pre-scan of a JSON text's nesting, so that a
// hostile text never makes the parser (or dump()) recurse deeply. Pure.
#pragma once

#include <cstddef>
#include <string_view>

namespace brake {

// True when brackets outside strings nest deeper than `max_depth` in `text`.
inline bool NestedDeeperThan(std::string_view text, int max_depth) {
  int depth = 0;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') {
        ++i;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if ((c == '{' || c == '[') && ++depth > max_depth) {
      return true;
    } else if (c == '}' || c == ']') {
      --depth;
    }
  }
  return false;
}

}  // namespace brake
