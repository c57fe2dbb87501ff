// The text form of test vectors: hex and field formatting, and parsing of case
// lines and streams (docs/vectors.md states every field).
#include <charconv>
#include <istream>
#include <ostream>
#include <string>

#include "nibble/limits.h"
#include "nibble/vectors.h"
#include "vectors_detail.h"

namespace nibble::vectors {

namespace detail {

void put_hex(std::string& out, uint64_t v, int digits) {
  for (int i = digits - 1; i >= 0; --i) out += kHexDigits[(v >> (4 * i)) & 0xFu];
}
std::string hex(uint64_t v, int digits) {
  std::string s;
  put_hex(s, v, digits);
  return s;
}
std::string indexed(std::string_view base, size_t i) { return std::string(base) + "[" + std::to_string(i) + "]"; }

int scale_digits(ScaleFormat f) { return info(f).bits / 4; }

}  // namespace detail

namespace {

using detail::hex;
using detail::indexed;
using detail::kBoundaryTag;
using detail::kHexDigits;
using detail::put_hex;
using detail::scale_count;
using detail::scale_digits;

template <class T, size_t N>
std::string joined_names(const std::array<T, N>& all) {
  std::string s;
  for (size_t i = 0; i < N; ++i) {
    if (i > 0) s += i + 1 == N ? " or " : ", ";
    s += name(all[i]);
  }
  return s;
}

// --- Writing ----------------------------------------------------------------------

void put_word(std::string& out, std::string_view word) {
  if (!out.empty()) out += ' ';
  out += word;
}
void put_hex_field(std::string& out, uint64_t v, int digits) {
  out += ' ';
  put_hex(out, v, digits);
}
void put_nibbles(std::string& out, const uint8_t* codes, size_t count) {
  out += ' ';
  for (size_t i = 0; i < count; ++i) out += kHexDigits[codes[i] & 0xFu];
}
// One field of row_length codes per row.
void put_nibble_rows(std::string& out, const std::vector<uint8_t>& codes, size_t row_length) {
  for (size_t i = 0; i < codes.size(); i += row_length) put_nibbles(out, &codes[i], row_length);
}

std::string format_quantize(const QuantizeCase& c) {
  std::string s;
  put_word(s, name(Op::kQuantize));
  put_word(s, name(c.format));
  put_word(s, name(c.mode));
  if (c.policy != QuantPolicy{}) {
    put_word(s, name(c.policy.zero));
    put_word(s, name(c.policy.nonfinite));
  }
  put_word(s, std::to_string(c.length));
  put_word(s, name(c.rounding));
  put_word(s, std::to_string(c.sr_bits));
  put_hex_field(s, c.seed, 16);
  put_hex_field(s, c.stream, 8);
  put_hex_field(s, c.group, 16);
  put_hex_field(s, c.s_enc, 8);
  put_hex_field(s, c.g, 8);
  for (uint32_t x : c.x) put_hex_field(s, x, 8);
  for (uint32_t r : c.random) put_hex_field(s, r, 2);
  put_hex_field(s, c.scale_code, scale_digits(scale_format(c.mode)));
  put_nibbles(s, c.codes.data(), c.codes.size());
  return s;
}

std::string format_dot(const DotCase& c) {
  std::string s;
  put_word(s, name(Op::kDot));
  put_word(s, name(c.fa));
  put_word(s, name(c.fb));
  put_word(s, name(c.sfa));
  put_word(s, name(c.sfb));
  put_word(s, std::to_string(c.length));
  put_word(s, std::to_string(c.nblocks));
  put_nibble_rows(s, c.codes_a, static_cast<size_t>(c.length));
  put_nibble_rows(s, c.codes_b, static_cast<size_t>(c.length));
  for (uint32_t v : c.scales_a) put_hex_field(s, v, scale_digits(c.sfa));
  for (uint32_t v : c.scales_b) put_hex_field(s, v, scale_digits(c.sfb));
  put_hex_field(s, c.ga, 8);
  put_hex_field(s, c.gb, 8);
  for (int32_t p : c.partial) put_word(s, std::to_string(p));
  for (uint32_t r : c.products) put_hex_field(s, r, 8);
  put_hex_field(s, c.result, 8);
  return s;
}

std::string format_gemm_tile(const GemmTileCase& c) {
  std::string s;
  put_word(s, name(Op::kGemmTile));
  put_word(s, name(c.fa));
  put_word(s, name(c.fb));
  put_word(s, name(c.mode_a));
  put_word(s, name(c.mode_b));
  put_word(s, name(c.block_a));
  put_word(s, name(c.block_b));
  put_word(s, std::to_string(c.m));
  put_word(s, std::to_string(c.n));
  put_word(s, std::to_string(c.k));
  put_nibble_rows(s, c.codes_a, static_cast<size_t>(c.k));
  put_nibble_rows(s, c.codes_b, static_cast<size_t>(c.k));
  for (uint32_t v : c.scales_a) put_hex_field(s, v, scale_digits(scale_format(c.mode_a)));
  for (uint32_t v : c.scales_b) put_hex_field(s, v, scale_digits(scale_format(c.mode_b)));
  put_hex_field(s, c.ga, 8);
  put_hex_field(s, c.gb, 8);
  for (uint32_t v : c.c) put_hex_field(s, v, 8);
  return s;
}

// --- Parsing ----------------------------------------------------------------------

bool is_space(char ch) { return ch == ' ' || ch == '\t' || ch == '\r' || ch == '\n' || ch == '\v' || ch == '\f'; }

int hex_value(char ch) {
  if (ch >= '0' && ch <= '9') return ch - '0';
  if (ch >= 'a' && ch <= 'f') return ch - 'a' + 10;
  if (ch >= 'A' && ch <= 'F') return ch - 'A' + 10;
  return -1;
}

// A field's name for messages, built only when a message needs it.
struct FieldName {
  std::string_view base;
  size_t i = SIZE_MAX;
  size_t j = SIZE_MAX;
  std::string str() const {
    std::string s(base);
    if (i != SIZE_MAX) s = indexed(s, i);
    if (j != SIZE_MAX) s = indexed(s, j);
    return s;
  }
};

// The whitespace-separated fields of one case line, consumed left to right.
class LineFields {
 public:
  LineFields(std::string_view line, size_t line_number) : line_number_(line_number) {
    size_t i = 0;
    while (i < line.size()) {
      while (i < line.size() && is_space(line[i])) ++i;
      const size_t start = i;
      while (i < line.size() && !is_space(line[i])) ++i;
      if (i > start) tokens_.push_back(line.substr(start, i - start));
    }
  }

  void set_op(Op op) { op_ = name(op); }

  [[noreturn]] void fail(const std::string& message) const {
    throw ParseError(line_number_, op_.empty() ? message : std::string(op_) + ": " + message);
  }
  [[noreturn]] void fail(const FieldName& f, std::string_view token, const std::string& expected) const {
    fail("field " + f.str() + ": expected " + expected + ", got \"" + std::string(token) + "\"");
  }

  std::string_view take(const FieldName& f) {
    if (next_ >= tokens_.size()) {
      fail("missing field " + f.str() + " (the line ends after " + std::to_string(tokens_.size()) + " fields)");
    }
    return tokens_[next_++];
  }

  void finish(std::string_view last_field) const {
    if (next_ < tokens_.size()) {
      fail(std::to_string(tokens_.size() - next_) + " extra field(s) after " + std::string(last_field) +
           ", starting \"" + std::string(tokens_[next_]) + "\"");
    }
  }

  uint64_t hex(const FieldName& f, int digits) {
    uint64_t v = 0;
    hex_digits(f, static_cast<size_t>(digits),
               std::to_string(digits) + " hex digit" + (digits == 1 ? "" : "s"),
               [&v](int d) { v = (v << 4) | static_cast<uint64_t>(d); });
    return v;
  }
  uint32_t hex32(const FieldName& f, int digits) { return static_cast<uint32_t>(hex(f, digits)); }
  // count fields base[0] .. base[count - 1] of `digits` hex digits each, appended to out.
  void hex32s(std::string_view base, size_t count, int digits, std::vector<uint32_t>& out) {
    for (size_t i = 0; i < count; ++i) out.push_back(hex32({base, i}, digits));
  }

  void nibbles(const FieldName& f, size_t count, std::vector<uint8_t>& out) {
    hex_digits(f, count, std::to_string(count) + " hex digits (one code per element)",
               [&out](int d) { out.push_back(static_cast<uint8_t>(d)); });
  }
  // rows fields base[0] .. base[rows - 1] of row_length codes each, appended to out.
  void nibble_rows(std::string_view base, size_t rows, size_t row_length, std::vector<uint8_t>& out) {
    for (size_t r = 0; r < rows; ++r) nibbles({base, r}, row_length, out);
  }

  int decimal(const FieldName& f, int lo, int hi) {
    const std::string_view t = take(f);
    const std::string expected = "an integer in " + std::to_string(lo) + ".." + std::to_string(hi);
    int v = 0;
    const auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
    if (t.empty() || t[0] == '-' || ec != std::errc() || end != t.data() + t.size() || v < lo || v > hi)
      fail(f, t, expected);
    return v;
  }

  int length(const FieldName& f) {
    const std::string_view t = take(f);
    if (t == "16") return 16;
    if (t == "32") return 32;
    fail(f, t, "16 or 32");
  }

  int32_t signed_decimal(const FieldName& f) {
    const std::string_view t = take(f);
    int32_t v = 0;
    const auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
    if (ec != std::errc() || end != t.data() + t.size()) fail(f, t, "a signed decimal integer");
    return v;
  }

  template <class T, size_t N, class Parse>
  T named(const FieldName& f, const std::array<T, N>& all, Parse parse) {
    const std::string_view t = take(f);
    const std::optional<T> v = parse(t);
    if (!v) fail(f, t, joined_names(all));
    return *v;
  }
  Format format(const FieldName& f) { return named(f, kAllFormats, parse_format); }
  ScaleFormat scale_format(const FieldName& f) { return named(f, kAllScaleFormats, parse_scale_format); }
  ScaleMode mode(const FieldName& f) { return named(f, kAllScaleModes, parse_scale_mode); }
  BlockShape block(const FieldName& f) { return named(f, kAllBlockShapes, parse_block_shape); }
  Rounding rounding(const FieldName& f) { return named(f, kAllRoundings, parse_rounding); }
  ZeroPolicy zero_policy(const FieldName& f) { return named(f, kAllZeroPolicies, parse_zero_policy); }
  NonFinitePolicy nonfinite_policy(const FieldName& f) {
    return named(f, kAllNonFinitePolicies, parse_nonfinite_policy);
  }
  // Whether the next field is a name parse knows (an optional field is present).
  template <class Parse>
  bool next_parses(Parse parse) const {
    return next_ < tokens_.size() && parse(tokens_[next_]).has_value();
  }

 private:
  // The next field, which must be exactly count hex digits: each digit's value,
  // most significant first, goes to digit.
  template <class Digit>
  void hex_digits(const FieldName& f, size_t count, const std::string& expected, Digit digit) {
    const std::string_view t = take(f);
    if (t.size() != count) fail(f, t, expected);
    for (char ch : t) {
      const int d = hex_value(ch);
      if (d < 0) fail(f, t, expected);
      digit(d);
    }
  }

  std::vector<std::string_view> tokens_;
  size_t next_ = 0;
  size_t line_number_;
  std::string_view op_;
};

QuantizeCase parse_quantize(LineFields& in) {
  QuantizeCase c;
  c.format = in.format({"format"});
  c.mode = in.mode({"scale_mode"});
  // The policies are optional: a line without them has the default ones.
  if (in.next_parses(parse_zero_policy)) {
    c.policy.zero = in.zero_policy({"zero"});
    c.policy.nonfinite = in.nonfinite_policy({"nonfinite"});
  }
  c.length = in.length({"length"});
  c.rounding = in.rounding({"rounding"});
  c.sr_bits = in.decimal({"sr_bits"}, 1, 8);
  c.seed = in.hex({"seed"}, 16);
  c.stream = in.hex32({"stream"}, 8);
  c.group = in.hex({"group"}, 16);
  c.s_enc = in.hex32({"s_enc"}, 8);
  c.g = in.hex32({"g"}, 8);
  const size_t n = static_cast<size_t>(c.length);
  in.hex32s("x", n, 8, c.x);
  for (size_t i = 0; i < n; ++i) {
    const uint32_t r = in.hex32({"random", i}, 2);
    if (r >> c.sr_bits != 0) {
      in.fail("field " + indexed("random", i) + ": " + hex(r, 2) +
              " has more than sr_bits = " + std::to_string(c.sr_bits) + " bits");
    }
    c.random.push_back(r);
  }
  c.scale_code = in.hex32({"scale_code"}, scale_digits(nibble::scale_format(c.mode)));
  in.nibbles({"codes"}, n, c.codes);
  in.finish("codes");
  return c;
}

DotCase parse_dot(LineFields& in) {
  DotCase c;
  c.fa = in.format({"fa"});
  c.fb = in.format({"fb"});
  c.sfa = in.scale_format({"sfa"});
  c.sfb = in.scale_format({"sfb"});
  c.length = in.length({"length"});
  c.nblocks = in.decimal({"nblocks"}, 1, kMaxDotBlocks);
  const size_t nb = static_cast<size_t>(c.nblocks);
  const size_t len = static_cast<size_t>(c.length);
  in.nibble_rows("codes_a", nb, len, c.codes_a);
  in.nibble_rows("codes_b", nb, len, c.codes_b);
  in.hex32s("scales_a", nb, scale_digits(c.sfa), c.scales_a);
  in.hex32s("scales_b", nb, scale_digits(c.sfb), c.scales_b);
  c.ga = in.hex32({"ga"}, 8);
  c.gb = in.hex32({"gb"}, 8);
  for (size_t b = 0; b < nb; ++b) c.partial.push_back(in.signed_decimal({"p", b}));
  in.hex32s("r", nb, 8, c.products);
  c.result = in.hex32({"result"}, 8);
  in.finish("result");
  return c;
}

GemmTileCase parse_gemm_tile(LineFields& in) {
  GemmTileCase c;
  c.fa = in.format({"fa"});
  c.fb = in.format({"fb"});
  c.mode_a = in.mode({"mode_a"});
  c.mode_b = in.mode({"mode_b"});
  c.block_a = in.block({"block_a"});
  c.block_b = in.block({"block_b"});
  c.m = in.decimal({"m"}, 1, kMaxTileRows);
  c.n = in.decimal({"n"}, 1, kMaxTileRows);
  c.k = in.decimal({"k"}, 1, kMaxTileK);
  const size_t k = static_cast<size_t>(c.k);
  in.nibble_rows("codes_a", static_cast<size_t>(c.m), k, c.codes_a);
  in.nibble_rows("codes_b", static_cast<size_t>(c.n), k, c.codes_b);
  in.hex32s("scales_a", scale_count(c.block_a, c.m, c.k), scale_digits(scale_format(c.mode_a)), c.scales_a);
  in.hex32s("scales_b", scale_count(c.block_b, c.n, c.k), scale_digits(scale_format(c.mode_b)), c.scales_b);
  c.ga = in.hex32({"ga"}, 8);
  c.gb = in.hex32({"gb"}, 8);
  for (size_t i = 0; i < static_cast<size_t>(c.m); ++i) {
    for (size_t j = 0; j < static_cast<size_t>(c.n); ++j) c.c.push_back(in.hex32({"c", i, j}, 8));
  }
  in.finish("c");
  return c;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && is_space(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_space(s.back())) s.remove_suffix(1);
  return s;
}

}  // namespace

// --- Text form -------------------------------------------------------------------------

std::string format_case(const Case& c) {
  switch (op_of(c)) {
    case Op::kQuantize: return format_quantize(std::get<QuantizeCase>(c));
    case Op::kDot: return format_dot(std::get<DotCase>(c));
    case Op::kGemmTile: return format_gemm_tile(std::get<GemmTileCase>(c));
  }
  return "";
}

void write_vector(std::ostream& out, const Vector& v) {
  if (!v.label.empty()) out << kBoundaryTag << ' ' << v.label << '\n';
  out << format_case(v.data) << '\n';
}

ParseError::ParseError(size_t line, const std::string& message)
    : std::runtime_error("line " + std::to_string(line) + ": " + message), line_(line) {}

Case parse_case(std::string_view line, size_t line_number) {
  LineFields in(line, line_number);
  const std::string_view op_name = in.take({"op"});
  const std::optional<Op> op = parse_op(op_name);
  if (!op) in.fail("unknown op \"" + std::string(op_name) + "\" (expected " + joined_names(kAllOps) + ")");
  in.set_op(*op);
  switch (*op) {
    case Op::kQuantize: return parse_quantize(in);
    case Op::kDot: return parse_dot(in);
    case Op::kGemmTile: return parse_gemm_tile(in);
  }
  in.fail("unknown op");
}

namespace {

// std::getline bounded: a line longer than limits::kMaxVectorLineBytes, or one
// holding a NUL byte (binary data such as /dev/zero), is a ParseError before
// it can grow without end.
bool read_line(std::istream& in, std::string& text, size_t line) {
  text.clear();
  std::streambuf* buf = in.rdbuf();
  for (;;) {
    const int c = buf->sbumpc();
    if (c == std::char_traits<char>::eof()) {
      in.setstate(std::ios::eofbit);
      return !text.empty();
    }
    if (c == '\n') return true;
    if (c == '\0') throw ParseError(line, "a NUL byte: this is not a text stream of vectors");
    if (text.size() >= limits::kMaxVectorLineBytes) {
      throw ParseError(line, "longer than " + std::to_string(limits::kMaxVectorLineBytes) + " bytes");
    }
    text.push_back(static_cast<char>(c));
  }
}

}  // namespace

std::optional<Vector> Reader::next() {
  std::string text;
  std::string label;
  while (read_line(in_, text, line_ + 1)) {
    ++line_;
    const std::string_view t = trim(text);
    if (t.empty()) continue;
    if (t.front() == '#') {
      if (t.substr(0, kBoundaryTag.size()) == kBoundaryTag) label = std::string(trim(t.substr(kBoundaryTag.size())));
      continue;
    }
    return Vector{parse_case(t, line_), std::move(label), line_};
  }
  return std::nullopt;
}

std::vector<Vector> parse_stream(std::istream& in) {
  Reader reader(in);
  std::vector<Vector> out;
  while (std::optional<Vector> v = reader.next()) out.push_back(std::move(*v));
  return out;
}

}  // namespace nibble::vectors
