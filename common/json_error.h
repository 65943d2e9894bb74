// WhereJsonFails: where a text stops being JSON, for an error message that
// points at it. Over the JSON library's type (nlohmann::json), so that
// common/ need not include it; called only after a parse has failed, it
// parses again with exceptions to learn the byte.
#pragma once

#include <string>
#include <string_view>

namespace brake {

// " (at byte N)", N the 1-based offset of the byte at which `text` stopped
// being JSON; "" when the parser does not say.
template <class Json>
std::string WhereJsonFails(std::string_view text, bool ignore_comments = false) {
  try {
    const Json parsed = Json::parse(text, nullptr, /*allow_exceptions=*/true,
                                    ignore_comments);
    (void)parsed;
  } catch (const typename Json::parse_error& e) {
    return " (at byte " + std::to_string(e.byte) + ")";
  } catch (...) {
  }
  return "";
}

}  // namespace brake
