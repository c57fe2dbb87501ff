// NumPy .npy reader (format versions 1.0, 2.0, 3.0) and writer (version 1.0).
// Format: https://numpy.org/doc/stable/reference/generated/numpy.lib.format.html
#include "nibble/io/tensor_file.h"

#include "bytes.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <optional>
#include <string_view>
#include <utility>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace nibble::io {
namespace {

constexpr std::string_view kMagic{"\x93NUMPY", 6};
constexpr std::size_t kVersionSize = 2;
constexpr std::size_t kV1PreambleSize = kMagic.size() + kVersionSize + 2;
constexpr std::size_t kV2PreambleSize = kMagic.size() + kVersionSize + 4;
// numpy >= 1.23 aligns the data to 64 bytes so that it can be memory-mapped
// for any SIMD width; older numpy used 16, and readers accept either.
constexpr std::size_t kDataAlignment = 64;
constexpr uint64_t kMaxCount = static_cast<uint64_t>(std::numeric_limits<int64_t>::max());

using detail::bit_cast;
using detail::fail;
using detail::half_to_float;
using detail::load_be;
using detail::load_le;
using detail::read_bytes;
using detail::write_f32_le;

float le_f2(const unsigned char* p) { return half_to_float(load_le<uint16_t>(p)); }
float le_f4(const unsigned char* p) { return bit_cast<float>(load_le<uint32_t>(p)); }
float le_f8(const unsigned char* p) { return static_cast<float>(bit_cast<double>(load_le<uint64_t>(p))); }
float be_f2(const unsigned char* p) { return half_to_float(load_be<uint16_t>(p)); }
float be_f4(const unsigned char* p) { return bit_cast<float>(load_be<uint32_t>(p)); }
float be_f8(const unsigned char* p) { return static_cast<float>(bit_cast<double>(load_be<uint64_t>(p))); }

struct Dtype {
  std::string_view descr;
  std::size_t size;
  float (*to_float)(const unsigned char*);
};

constexpr std::array<Dtype, 6> kDtypes{{
    {"<f4", 4, le_f4}, {"<f8", 8, le_f8}, {"<f2", 2, le_f2},
    {">f4", 4, be_f4}, {">f8", 8, be_f8}, {">f2", 2, be_f2},
}};

const Dtype& find_dtype(const std::string& descr, const std::string& path) {
  for (const Dtype& dtype : kDtypes) {
    if (dtype.descr == descr) return dtype;
  }
  std::string supported;
  for (const Dtype& dtype : kDtypes) supported += fmt::format(" {}", dtype.descr);
  fail(path, fmt::format("'{}' is not a supported dtype; expected one of{}", descr, supported));
}

// Python tuple syntax, as numpy writes it and as users will recognise it.
std::string python_shape(const std::vector<int64_t>& shape) {
  if (shape.size() == 1) return fmt::format("({},)", shape[0]);
  return fmt::format("({})", fmt::join(shape, ", "));
}

// Element count of `shape`, rejecting negative dimensions and counts (or byte
// counts of `item_size`-byte elements) that do not fit in int64. A zero
// dimension does not excuse the others: the product of the non-zero ones must
// fit too, or the tensor's matrix view (rows = the leading axes) would wrap.
uint64_t checked_numel(const std::vector<int64_t>& shape, std::size_t item_size, const std::string& path) {
  if (std::any_of(shape.begin(), shape.end(), [](int64_t dim) { return dim < 0; })) {
    fail(path, fmt::format("shape {} has a negative dimension", python_shape(shape)));
  }
  uint64_t numel = 1;
  for (const int64_t dim : shape) {
    if (dim == 0) continue;
    if (numel > kMaxCount / static_cast<uint64_t>(dim)) {
      fail(path, fmt::format("shape {} overflows: too many elements", python_shape(shape)));
    }
    numel *= static_cast<uint64_t>(dim);
  }
  if (std::find(shape.begin(), shape.end(), 0) != shape.end()) return 0;
  if (numel > kMaxCount / item_size) {
    fail(path, fmt::format("shape {} overflows: too many bytes", python_shape(shape)));
  }
  return numel;
}

struct NpyHeader {
  std::string descr;
  bool fortran_order = false;
  std::vector<int64_t> shape;
};

// Parses the header, a Python dict literal such as
//   {'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }
// with the keys in any order, either quote style and optional trailing commas.
// Like numpy, it requires exactly these three keys.
class HeaderParser {
 public:
  HeaderParser(std::string_view text, const std::string& path) : text_(text), path_(path) {}

  NpyHeader parse() {
    std::optional<std::string> descr;
    std::optional<bool> fortran_order;
    std::optional<std::vector<int64_t>> shape;
    expect('{');
    while (!consume('}')) {
      const std::string key = parse_string();
      expect(':');
      if (key == "descr") {
        set_once(descr, parse_string(), key);
      } else if (key == "fortran_order") {
        set_once(fortran_order, parse_bool(), key);
      } else if (key == "shape") {
        set_once(shape, parse_shape(), key);
      } else {
        fail(fmt::format("unexpected key '{}'", key));
      }
      if (!consume(',')) {
        expect('}');
        break;
      }
    }
    skip_space();
    if (pos_ != text_.size()) fail("unexpected text after the closing '}'");
    if (!descr) fail("missing key 'descr'");
    if (!fortran_order) fail("missing key 'fortran_order'");
    if (!shape) fail("missing key 'shape'");
    return NpyHeader{std::move(*descr), *fortran_order, std::move(*shape)};
  }

 private:
  [[noreturn]] void fail(std::string_view reason) const {
    detail::fail(path_, fmt::format("cannot parse .npy header: {} at offset {}", reason, pos_));
  }

  template <typename T>
  void set_once(std::optional<T>& slot, T value, const std::string& key) const {
    if (slot) fail(fmt::format("duplicate key '{}'", key));
    slot = std::move(value);
  }

  void skip_space() {
    while (pos_ < text_.size() && std::string_view(" \t\n\r\f\v").find(text_[pos_]) != std::string_view::npos) {
      ++pos_;
    }
  }

  bool consume(char c) {
    skip_space();
    if (pos_ < text_.size() && text_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }

  void expect(char c) {
    if (!consume(c)) fail(fmt::format("expected '{}'", c));
  }

  bool consume_word(std::string_view word) {
    skip_space();
    if (text_.substr(pos_, word.size()) != word) return false;
    pos_ += word.size();
    return true;
  }

  std::string parse_string() {
    skip_space();
    if (pos_ >= text_.size() || (text_[pos_] != '\'' && text_[pos_] != '"')) fail("expected a quoted string");
    const char quote = text_[pos_++];
    const std::size_t begin = pos_;
    while (pos_ < text_.size() && text_[pos_] != quote) {
      if (text_[pos_] == '\\') fail("escape sequences are not supported");
      ++pos_;
    }
    if (pos_ >= text_.size()) fail("unterminated string");
    return std::string(text_.substr(begin, pos_++ - begin));
  }

  bool parse_bool() {
    if (consume_word("True")) return true;
    if (consume_word("False")) return false;
    fail("expected True or False");
  }

  std::vector<int64_t> parse_shape() {
    expect('(');
    std::vector<int64_t> dims;
    bool trailing_comma = false;
    while (!consume(')')) {
      dims.push_back(parse_dimension());
      trailing_comma = consume(',');
      if (!trailing_comma) {
        expect(')');
        break;
      }
    }
    // In Python "(5)" is the integer 5, not a tuple.
    if (dims.size() == 1 && !trailing_comma) fail("a one-element shape must be written '(n,)'");
    return dims;
  }

  int64_t parse_dimension() {
    skip_space();
    const bool negative = pos_ < text_.size() && text_[pos_] == '-';
    if (negative) ++pos_;
    const std::size_t digits_begin = pos_;
    uint64_t magnitude = 0;
    bool overflow = false;
    for (; pos_ < text_.size() && text_[pos_] >= '0' && text_[pos_] <= '9'; ++pos_) {
      const auto digit = static_cast<uint64_t>(text_[pos_] - '0');
      overflow = overflow || magnitude > (kMaxCount - digit) / 10;
      if (!overflow) magnitude = magnitude * 10 + digit;
    }
    if (pos_ == digits_begin) fail("expected an integer dimension");
    const std::string_view digits = text_.substr(digits_begin, pos_ - digits_begin);
    consume_word("L");  // Python 2 long literal, still found in old files
    if (overflow) {
      detail::fail(path_, fmt::format("shape dimension {}{} overflows a 64-bit integer", negative ? "-" : "", digits));
    }
    const auto value = static_cast<int64_t>(magnitude);
    return negative ? -value : value;
  }

  std::string_view text_;
  const std::string& path_;
  std::size_t pos_ = 0;
};

// Reads the preamble and the header text; leaves the stream at the first data byte.
std::string read_header_text(detail::InputFile& file, const std::string& path) {
  const auto prefix = read_bytes(file.stream, std::min<uint64_t>(file.size, kMagic.size() + kVersionSize), path);
  if (prefix.size() < kMagic.size() || std::memcmp(prefix.data(), kMagic.data(), kMagic.size()) != 0) {
    fail(path, "not a .npy file (bad magic)");
  }
  if (prefix.size() < kMagic.size() + kVersionSize) fail(path, "truncated: the file ends inside the .npy preamble");
  const unsigned major = prefix[6];
  const unsigned minor = prefix[7];
  if (major < 1 || major > 3 || minor != 0) {
    fail(path, fmt::format("unsupported .npy format version {}.{}; expected 1.0, 2.0 or 3.0", major, minor));
  }
  const std::size_t preamble_size = major == 1 ? kV1PreambleSize : kV2PreambleSize;
  if (file.size < preamble_size) fail(path, "truncated: the file ends inside the .npy preamble");
  const auto length_field = read_bytes(file.stream, preamble_size - prefix.size(), path);
  const uint64_t header_size =
      major == 1 ? load_le<uint16_t>(length_field.data()) : load_le<uint32_t>(length_field.data());
  if (header_size > file.size - preamble_size) {
    fail(path, fmt::format("truncated: the .npy header needs {} bytes, file has {}", header_size,
                           file.size - preamble_size));
  }
  const auto header = read_bytes(file.stream, header_size, path);
  return std::string(header.begin(), header.end());
}

std::vector<float> fortran_to_c_order(const std::vector<float>& values, const std::vector<int64_t>& shape) {
  if (shape.size() < 2 || values.empty()) return values;
  const std::size_t rank = shape.size();
  std::vector<std::size_t> extent(rank);
  std::vector<std::size_t> fortran_stride(rank, 1);
  for (std::size_t axis = 0; axis < rank; ++axis) {
    extent[axis] = static_cast<std::size_t>(shape[axis]);
    if (axis > 0) fortran_stride[axis] = fortran_stride[axis - 1] * extent[axis - 1];
  }
  std::vector<float> c_order(values.size());
  std::vector<std::size_t> index(rank, 0);
  std::size_t source = 0;
  for (float& out : c_order) {
    out = values[source];
    // Advance the multi-index in C order (last axis fastest), tracking the
    // matching Fortran-order offset.
    for (std::size_t axis = rank; axis-- > 0;) {
      if (++index[axis] < extent[axis]) {
        source += fortran_stride[axis];
        break;
      }
      source -= (extent[axis] - 1) * fortran_stride[axis];
      index[axis] = 0;
    }
  }
  return c_order;
}

}  // namespace

Tensor read_npy(const std::string& path) {
  detail::InputFile file = detail::open_for_reading(path);
  const std::string header_text = read_header_text(file, path);
  NpyHeader header = HeaderParser(header_text, path).parse();
  const Dtype& dtype = find_dtype(header.descr, path);
  const uint64_t numel = checked_numel(header.shape, dtype.size, path);
  const uint64_t needed = numel * dtype.size;
  const uint64_t available = file.size - static_cast<uint64_t>(file.stream.tellg());
  if (needed != available) {
    fail(path, fmt::format("{}: shape {} needs {} bytes of data, file has {}",
                           needed > available ? "truncated" : "trailing bytes", python_shape(header.shape), needed,
                           available));
  }
  const auto bytes = read_bytes(file.stream, needed, path);
  std::vector<float> values(static_cast<std::size_t>(numel));
  for (std::size_t i = 0; i < values.size(); ++i) values[i] = dtype.to_float(bytes.data() + i * dtype.size);
  if (header.fortran_order) values = fortran_to_c_order(values, header.shape);
  return Tensor{std::filesystem::path(path).stem().string(), std::move(header.shape), std::move(values)};
}

void write_npy(const std::string& path, const std::vector<int64_t>& shape, const float* data) {
  const uint64_t numel = checked_numel(shape, 4, path);
  if (numel > 0 && data == nullptr) fail(path, "no data to write");
  std::string header =
      fmt::format("{{'descr': '<f4', 'fortran_order': False, 'shape': {}, }}", python_shape(shape));
  const std::size_t unpadded = kV1PreambleSize + header.size() + 1;
  header.append((kDataAlignment - unpadded % kDataAlignment) % kDataAlignment, ' ');
  header.push_back('\n');
  if (header.size() > std::numeric_limits<uint16_t>::max()) {
    fail(path, fmt::format("shape {} is too long for a version 1.0 .npy header", python_shape(shape)));
  }

  std::ofstream stream(path, std::ios::binary | std::ios::trunc);
  if (!stream) fail(path, "cannot open for writing");
  const std::array<char, 4> version_and_size{1, 0, static_cast<char>(header.size() & 0xffu),
                                             static_cast<char>(header.size() >> 8)};
  stream.write(kMagic.data(), static_cast<std::streamsize>(kMagic.size()));
  stream.write(version_and_size.data(), static_cast<std::streamsize>(version_and_size.size()));
  stream.write(header.data(), static_cast<std::streamsize>(header.size()));
  write_f32_le(stream, data, numel);
  stream.close();
  if (!stream) fail(path, "write failed");
}

}  // namespace nibble::io
