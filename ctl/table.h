// A plain-text table with aligned columns, for brakectl's human output.
//
// Cells are strings; columns are separated by two spaces, and a column whose
// cells are all numbers (or "-") is right-aligned, so figures line up. With
// headers the first line is the header row; without, the table is a list of
// left-aligned "key  value" lines. No trailing spaces. Owns its cells; any
// thread.
#pragma once

#include <ostream>
#include <string>
#include <vector>

namespace brake::ctl {

class Table {
 public:
  // `headers` may be empty: then no header row is printed.
  explicit Table(std::vector<std::string> headers = {});

  // Adds a row; missing trailing cells print as empty, extra ones widen the
  // table.
  void AddRow(std::vector<std::string> cells);

  bool empty() const { return rows_.empty(); }
  size_t size() const { return rows_.size(); }

  // Writes the header (if any) and the rows, one line each.
  void Render(std::ostream& out) const;

 private:
  std::vector<std::string> headers_;
  std::vector<std::vector<std::string>> rows_;
};

// True when `cell` reads as a number ("12", "-3", "0.25") or is "-".
bool LooksNumeric(const std::string& cell);

// The width of `s` in columns: its number of UTF-8 code points.
size_t DisplayWidth(const std::string& s);

}  // namespace brake::ctl
