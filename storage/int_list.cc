#include "storage/int_list.h"

#include <charconv>

#include "common/decimal.h"

namespace brake::storage {

void EncodeIntList(std::span<const int64_t> values, std::string* out) {
  out->clear();
  char buffer[24];  // 20 digits of INT64_MIN, its sign, slack
  for (size_t i = 0; i < values.size(); ++i) {
    if (i > 0) out->push_back(',');
    out->append(buffer, WriteDecimal(buffer, values[i]));
  }
}

std::optional<std::vector<int64_t>> ParseIntList(std::string_view text) {
  std::vector<int64_t> values;
  if (text.empty()) return values;
  const char* p = text.data();
  const char* const end = p + text.size();
  while (true) {
    int64_t value = 0;
    // from_chars takes no '+' and no leading whitespace, and reports
    // out-of-range values, which is the strictness wanted here.
    const auto [next, ec] = std::from_chars(p, end, value);
    if (ec != std::errc() || next == p) return std::nullopt;
    values.push_back(value);
    if (next == end) return values;
    if (*next != ',' || next + 1 == end) return std::nullopt;
    p = next + 1;
  }
}

}  // namespace brake::storage
