#pragma once
// CSV tables for the data files Nibble writes (the report's data/*.csv): a header,
// then rows of exactly as many cells, RFC 4180 quoting (a cell holding a comma, a
// double quote or a line break is quoted, its quotes doubled), and every number
// written the one way below.
#include <cstddef>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace nibble::io {

// A number as the data files write it: 9 significant digits (enough to read a
// float back exactly), and "NaN" for every non-finite value (gnuplot's and
// spreadsheets' missing-value token; the files plot, they do not round-trip Inf).
std::string csv_number(double v);

// One cell: text (quoted where needed), an integer, or a number (csv_number).
class CsvCell {
 public:
  CsvCell(std::string_view text);  // NOLINT: implicit, so rows read as brace lists
  CsvCell(const std::string& text) : CsvCell(std::string_view(text)) {}
  CsvCell(const char* text) : CsvCell(std::string_view(text)) {}
  CsvCell(double v) : text_(csv_number(v)) {}
  template <class T, std::enable_if_t<std::is_integral_v<T> && !std::is_same_v<T, bool>, int> = 0>
  CsvCell(T v) : text_(std::to_string(v)) {}
  CsvCell(bool) = delete;  // say 0/1 or a word

  const std::string& text() const { return text_; }

 private:
  std::string text_;
};

class CsvTable {
 public:
  explicit CsvTable(std::vector<std::string> columns);
  // Throws std::logic_error when the row's length is not the header's.
  void add(const std::vector<CsvCell>& row);
  size_t columns() const { return columns_; }
  size_t rows() const { return rows_; }
  // The header line, then one line per row, each ending in '\n'.
  const std::string& text() const { return text_; }

 private:
  size_t columns_ = 0;
  size_t rows_ = 0;
  std::string text_;
};

}  // namespace nibble::io
