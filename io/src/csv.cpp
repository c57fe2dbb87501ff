#include "nibble/io/csv.h"

#include <fmt/format.h>

#include <cmath>
#include <stdexcept>

namespace nibble::io {
namespace {

std::string quoted(std::string_view s) {
  if (s.find_first_of(",\"\r\n") == std::string_view::npos) return std::string(s);
  std::string out = "\"";
  for (const char c : s) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

}  // namespace

std::string csv_number(double v) { return std::isfinite(v) ? fmt::format("{:.9g}", v) : "NaN"; }

CsvCell::CsvCell(std::string_view text) : text_(quoted(text)) {}

CsvTable::CsvTable(std::vector<std::string> columns) : columns_(columns.size()) {
  if (columns.empty()) throw std::logic_error("a CSV table needs at least one column");
  for (size_t i = 0; i < columns.size(); ++i) text_ += (i ? "," : "") + quoted(columns[i]);
  text_ += '\n';
}

void CsvTable::add(const std::vector<CsvCell>& row) {
  if (row.size() != columns_) {
    throw std::logic_error(fmt::format("a CSV row of {} cells in a table of {} columns", row.size(), columns_));
  }
  for (size_t i = 0; i < row.size(); ++i) {
    if (i) text_ += ',';
    text_ += row[i].text();
  }
  text_ += '\n';
  ++rows_;
}

}  // namespace nibble::io
