#include "ctl/table.h"

#include <algorithm>
#include <utility>

namespace brake::ctl {

Table::Table(std::vector<std::string> headers) : headers_(std::move(headers)) {}

void Table::AddRow(std::vector<std::string> cells) {
  rows_.push_back(std::move(cells));
}

// Columns are measured in code points, not bytes, so UTF-8 names align.
size_t DisplayWidth(const std::string& s) {
  size_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

bool LooksNumeric(const std::string& cell) {
  if (cell == "-") return true;
  size_t i = 0;
  if (i < cell.size() && cell[i] == '-') ++i;
  bool digits = false, dot = false;
  for (; i < cell.size(); ++i) {
    char c = cell[i];
    if (c >= '0' && c <= '9') {
      digits = true;
    } else if (c == '.' && !dot) {
      dot = true;
    } else {
      return false;
    }
  }
  return digits;
}

void Table::Render(std::ostream& out) const {
  size_t columns = headers_.size();
  for (const auto& row : rows_) columns = std::max(columns, row.size());
  if (columns == 0) return;

  std::vector<size_t> width(columns, 0);
  // A column with no data cells (empty table) stays left-aligned.
  std::vector<bool> right(columns, !rows_.empty());
  auto cell = [](const std::vector<std::string>& row, size_t c) {
    static const std::string kEmpty;
    return c < row.size() ? row[c] : kEmpty;
  };
  for (size_t c = 0; c < columns; ++c) {
    width[c] = DisplayWidth(cell(headers_, c));
    for (const auto& row : rows_) {
      const std::string& v = cell(row, c);
      width[c] = std::max(width[c], DisplayWidth(v));
      if (!v.empty() && !LooksNumeric(v)) right[c] = false;
    }
  }
  // Key-value lists (no headers) read as "key  value": all left.
  if (headers_.empty()) right.assign(columns, false);

  auto line = [&](const std::vector<std::string>& row) {
    std::string text;
    for (size_t c = 0; c < columns; ++c) {
      const std::string& v = cell(row, c);
      size_t pad = width[c] - DisplayWidth(v);
      if (c > 0) text += "  ";
      if (right[c]) text.append(pad, ' ');
      text += v;
      if (!right[c] && c + 1 < columns) text.append(pad, ' ');
    }
    while (!text.empty() && text.back() == ' ') text.pop_back();
    out << text << '\n';
  };
  if (!headers_.empty()) line(headers_);
  for (const auto& row : rows_) line(row);
}

}  // namespace brake::ctl
