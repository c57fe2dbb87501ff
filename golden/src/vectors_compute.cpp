// Golden's side of a test vector: the expected fields a case's inputs give
// (compute_expected), and where a case disagrees with them (check, check_stream).
#include <algorithm>
#include <cstddef>
#include <istream>
#include <string>

#include "nibble/dot.h"
#include "nibble/fp32.h"
#include "nibble/philox.h"
#include "nibble/vectors.h"
#include "vectors_detail.h"

namespace nibble::vectors {

// --- Golden operands --------------------------------------------------------------

namespace detail {

size_t scale_count(BlockShape block, int rows, int cols) {
  QuantizedTensor shape;
  shape.rows = rows;
  shape.cols = cols;
  shape.config.block = block;
  return static_cast<size_t>(shape.block_grid_rows() * shape.block_grid_cols());
}

void quantize_operand(const std::vector<float>& x, int rows, int cols, QuantConfig cfg, Format f, BlockShape block,
                      ScaleMode mode, std::vector<uint8_t>& codes, std::vector<uint32_t>& scales, uint32_t& g) {
  cfg.format = f;
  cfg.block = block;
  cfg.scale = mode;
  const QuantizedTensor q = quantize(x.data(), rows, cols, cfg);
  codes = q.codes;
  scales = q.scales;
  g = f32_bits(q.tensor.decode);
}

}  // namespace detail

namespace {

using detail::hex;
using detail::indexed;
using detail::scale_count;
using detail::scale_digits;

bool is_nan_bits(uint32_t u) { return (u & 0x7F800000u) == 0x7F800000u && (u & 0x7FFFFFu) != 0; }
// Expected results are stored with one NaN pattern (see kCanonicalNaN).
uint32_t result_bits(float x) {
  const uint32_t u = f32_bits(x);
  return is_nan_bits(u) ? kCanonicalNaN : u;
}
bool same_result(uint32_t a, uint32_t b) { return a == b || (is_nan_bits(a) && is_nan_bits(b)); }

// dot_rows reads only the scale format of a tensor's mode, so any mode storing
// scales in f stands for it.
ScaleMode mode_storing(ScaleFormat f) {
  for (ScaleMode m : kAllScaleModes) {
    if (scale_format(m) == f) return m;
  }
  throw std::invalid_argument("no scale mode stores scales as " + std::string(name(f)));
}

QuantizedTensor operand(Format f, ScaleMode mode, BlockShape block, int rows, int cols,
                        const std::vector<uint8_t>& codes, const std::vector<uint32_t>& scales, uint32_t g) {
  QuantizedTensor q;
  q.rows = rows;
  q.cols = cols;
  q.config.format = f;
  q.config.block = block;
  q.config.scale = mode;
  q.codes = codes;
  q.scales = scales;
  q.tensor.decode = f32_from_bits(g);
  return q;
}

void require(bool ok, const char* what) {
  if (!ok) throw std::invalid_argument(what);
}

void require_well_formed(const QuantizeCase& c) {
  const size_t n = static_cast<size_t>(c.length);
  require(c.length == 16 || c.length == 32, "quantize case: length must be 16 or 32");
  require(c.sr_bits >= 1 && c.sr_bits <= 8, "quantize case: sr_bits must be in 1..8");
  require(c.x.size() == n && c.random.size() == n, "quantize case: x and random need one entry per element");
}

void require_well_formed(const DotCase& c) {
  require(c.length == 16 || c.length == 32, "dot case: length must be 16 or 32");
  require(c.nblocks >= 1 && c.nblocks <= kMaxDotBlocks, "dot case: nblocks out of range");
  const size_t nb = static_cast<size_t>(c.nblocks);
  require(c.codes_a.size() == nb * static_cast<size_t>(c.length) && c.codes_b.size() == c.codes_a.size(),
          "dot case: codes need nblocks * length entries");
  require(c.scales_a.size() == nb && c.scales_b.size() == nb, "dot case: one scale code per block");
}

void require_well_formed(const GemmTileCase& c) {
  require(c.m >= 1 && c.m <= kMaxTileRows && c.n >= 1 && c.n <= kMaxTileRows && c.k >= 1 && c.k <= kMaxTileK,
          "gemm-tile case: m, n or k out of range");
  require(c.codes_a.size() == static_cast<size_t>(c.m) * static_cast<size_t>(c.k) &&
              c.codes_b.size() == static_cast<size_t>(c.n) * static_cast<size_t>(c.k),
          "gemm-tile case: codes need m * k and n * k entries");
  require(
      c.scales_a.size() == scale_count(c.block_a, c.m, c.k) && c.scales_b.size() == scale_count(c.block_b, c.n, c.k),
      "gemm-tile case: scale counts do not match the block shapes");
}

// --- Checking ---------------------------------------------------------------------

// The first index where file (at least as long as golden) disagrees with golden:
// field(i) names it, show writes a value, operands(i) gives the inputs it depends on.
template <class T, class Same, class Field, class Show, class Operands>
std::optional<Mismatch> first_mismatch(const std::vector<T>& file, const std::vector<T>& golden, Same same,
                                       Field field, Show show, Operands operands) {
  for (size_t i = 0; i < golden.size(); ++i) {
    if (!same(file[i], golden[i])) return Mismatch{field(i), show(file[i]), show(golden[i]), operands(i)};
  }
  return std::nullopt;
}

template <class T>
bool equal(const T& a, const T& b) {
  return a == b;
}
auto named(std::string_view base) {
  return [base](size_t i) { return indexed(base, i); };
}
auto hex_of(int digits) {
  return [digits](auto v) { return hex(v, digits); };
}

std::string hex_list(const std::vector<uint32_t>& v, int digits) {
  std::string s;
  for (uint32_t x : v) s += (s.empty() ? "" : " ") + hex(x, digits);
  return s;
}
std::string nibble_run(const std::vector<uint8_t>& codes, size_t first, size_t count) {
  std::string s;
  for (size_t i = first; i < first + count; ++i) s += hex(codes[i], 1);
  return s;
}

// The inputs of a quantize case: every field before the expected ones.
std::string operands_of(const QuantizeCase& c) {
  std::string s = std::string(name(c.format)) + " " + std::string(name(c.mode));
  if (c.policy != QuantPolicy{}) {
    s += " " + std::string(name(c.policy.zero)) + " " + std::string(name(c.policy.nonfinite));
  }
  s += " " + std::to_string(c.length) + " " + std::string(name(c.rounding)) + " sr_bits " + std::to_string(c.sr_bits) +
       "; s_enc " + hex(c.s_enc, 8) + " g " + hex(c.g, 8) + "; x " + hex_list(c.x, 8);
  if (c.rounding == Rounding::kStochastic) s += "; random " + hex_list(c.random, 2);
  return s;
}

// Block b of a dot case: what p[b] and r[b] depend on.
std::string operands_of(const DotCase& c, size_t b) {
  const size_t len = static_cast<size_t>(c.length);
  return std::string(name(c.fa)) + " x " + std::string(name(c.fb)) + ", block " + std::to_string(b) + ": codes_a " +
         nibble_run(c.codes_a, b * len, len) + " codes_b " + nibble_run(c.codes_b, b * len, len) + " scale_a " +
         hex(c.scales_a[b], scale_digits(c.sfa)) + " (" + std::string(name(c.sfa)) + ") scale_b " +
         hex(c.scales_b[b], scale_digits(c.sfb)) + " (" + std::string(name(c.sfb)) + ")";
}

// Row i of A and row j of B of a gemm-tile case, with their block scale codes: what c[i][j] depends on.
std::string operands_of(const GemmTileCase& c, size_t i, size_t j) {
  const size_t k = static_cast<size_t>(c.k);
  const auto row = [k](const char* which, Format f, ScaleMode mode, BlockShape block,
                       const std::vector<uint8_t>& codes, const std::vector<uint32_t>& scales, size_t r) {
    const size_t bw = static_cast<size_t>(block_cols(block));
    const size_t per_row = (k + bw - 1) / bw;
    const auto first = static_cast<std::ptrdiff_t>((r / static_cast<size_t>(block_rows(block))) * per_row);
    const std::vector<uint32_t> own(scales.begin() + first, scales.begin() + first + static_cast<std::ptrdiff_t>(per_row));
    return std::string(which) + " row " + std::to_string(r) + " (" + std::string(name(f)) + " " +
           std::string(name(mode)) + " " + std::string(name(block)) + "): codes " + nibble_run(codes, r * k, k) +
           " scales " + hex_list(own, scale_digits(scale_format(mode)));
  };
  return row("A", c.fa, c.mode_a, c.block_a, c.codes_a, c.scales_a, i) + "; " +
         row("B", c.fb, c.mode_b, c.block_b, c.codes_b, c.scales_b, j) + "; ga " + hex(c.ga, 8) + " gb " +
         hex(c.gb, 8);
}

std::optional<Mismatch> check_case(const QuantizeCase& c) {
  require_well_formed(c);
  const std::string operands = operands_of(c);
  const auto all = [&operands](size_t) { return operands; };
  // One block cannot show the tensor amax S_enc came from, so S_enc and g are
  // inputs; only the modes without a tensor level pin them.
  if (c.mode != ScaleMode::kNVFP4) {
    if (c.s_enc != kOneF32) return Mismatch{"s_enc", hex(c.s_enc, 8), hex(kOneF32, 8), operands};
    if (c.g != kOneF32) return Mismatch{"g", hex(c.g, 8), hex(kOneF32, 8), operands};
  }
  if (auto m = first_mismatch(c.random, sr_random_bits(c), equal<uint32_t>, named("random"), hex_of(2), all)) return m;
  QuantizeCase want = c;
  compute_expected(want);
  const int digits = scale_digits(scale_format(c.mode));
  if (c.scale_code != want.scale_code) {
    return Mismatch{"scale_code", hex(c.scale_code, digits), hex(want.scale_code, digits), operands};
  }
  if (c.codes.size() != want.codes.size()) {
    return Mismatch{"codes", std::to_string(c.codes.size()) + " codes", std::to_string(want.codes.size()) + " codes",
                    operands};
  }
  return first_mismatch(c.codes, want.codes, equal<uint8_t>, named("codes"), hex_of(1), all);
}

std::optional<Mismatch> check_case(const DotCase& c) {
  DotCase want = c;
  compute_expected(want);
  if (c.partial.size() != want.partial.size() || c.products.size() != want.products.size()) {
    return Mismatch{
        "p", std::to_string(c.partial.size()) + " partial sums and " + std::to_string(c.products.size()) + " products",
        std::to_string(want.partial.size()) + " of each", std::string()};
  }
  const auto block = [&c](size_t b) { return operands_of(c, b); };
  if (auto m = first_mismatch(c.partial, want.partial, equal<int32_t>, named("p"),
                              [](int32_t p) { return std::to_string(p); }, block)) {
    return m;
  }
  if (auto m = first_mismatch(c.products, want.products, same_result, named("r"), hex_of(8), block)) return m;
  if (!same_result(c.result, want.result)) {
    // The result depends on every r[b] (now known to match) and the tensor scales.
    std::vector<uint32_t> r(want.products.begin(), want.products.end());
    return Mismatch{"result", hex(c.result, 8), hex(want.result, 8),
                    "r " + hex_list(r, 8) + "; ga " + hex(c.ga, 8) + " gb " + hex(c.gb, 8)};
  }
  return std::nullopt;
}

std::optional<Mismatch> check_case(const GemmTileCase& c) {
  GemmTileCase want = c;
  compute_expected(want);
  if (c.c.size() != want.c.size()) {
    return Mismatch{"c", std::to_string(c.c.size()) + " values", std::to_string(want.c.size()) + " values",
                    std::string()};
  }
  const size_t n = static_cast<size_t>(c.n);
  return first_mismatch(
      c.c, want.c, same_result, [n](size_t i) { return indexed(indexed("c", i / n), i % n); }, hex_of(8),
      [&c, n](size_t i) { return operands_of(c, i / n, i % n); });
}

}  // namespace

// --- Golden ---------------------------------------------------------------------------

std::vector<uint32_t> sr_random_bits(const QuantizeCase& c) {
  if (c.sr_bits < 1 || c.sr_bits > 8) throw std::invalid_argument("quantize case: sr_bits must be in 1..8");
  std::vector<uint32_t> r(static_cast<size_t>(std::max(c.length, 0)), 0u);
  if (c.rounding != Rounding::kStochastic) return r;
  for (size_t i = 0; i < r.size(); i += 16) {
    const PhiloxWords w = philox4x32_10(c.seed, c.group + i / 16, c.stream, PhiloxDomain::kStochasticRounding);
    for (size_t lane = 0; lane < 16 && i + lane < r.size(); ++lane) {
      r[i + lane] = sr_lane_bits(w, static_cast<int>(lane), c.sr_bits);
    }
  }
  return r;
}

void compute_expected(QuantizeCase& c) {
  require_well_formed(c);
  std::vector<float> x(c.x.size());
  std::transform(c.x.begin(), c.x.end(), x.begin(), f32_from_bits);
  QuantConfig cfg;
  cfg.format = c.format;
  cfg.scale = c.mode;
  cfg.rounding = c.rounding;
  cfg.sr_bits = c.sr_bits;
  cfg.policy = c.policy;
  c.codes.assign(x.size(), 0);
  const TensorScale t{f32_from_bits(c.s_enc), f32_from_bits(c.g)};
  c.scale_code = quantize_block(x.data(), x.size(), cfg, t, c.random.data(), c.codes.data()).code;
}

void compute_expected(DotCase& c) {
  require_well_formed(c);
  const size_t len = static_cast<size_t>(c.length);
  const size_t nb = static_cast<size_t>(c.nblocks);
  c.partial.assign(nb, 0);
  c.products.assign(nb, 0);
  for (size_t b = 0; b < nb; ++b) {
    c.partial[b] = block_partial_sum(&c.codes_a[b * len], c.fa, &c.codes_b[b * len], c.fb, len);
    c.products[b] = result_bits(block_product(c.partial[b], c.fa, c.fb, decode_scale(c.sfa, c.scales_a[b]),
                                              decode_scale(c.sfb, c.scales_b[b])));
  }
  // The final result is dot_rows' own, on one-row tensors whose blocks are this case's.
  const BlockShape block = c.length == 32 ? BlockShape::k1x32 : BlockShape::k1x16;
  const int cols = c.nblocks * c.length;
  const QuantizedTensor a = operand(c.fa, mode_storing(c.sfa), block, 1, cols, c.codes_a, c.scales_a, c.ga);
  const QuantizedTensor b = operand(c.fb, mode_storing(c.sfb), block, 1, cols, c.codes_b, c.scales_b, c.gb);
  c.result = result_bits(dot_rows(a, 0, b, 0));
}

void compute_expected(GemmTileCase& c) {
  require_well_formed(c);
  const QuantizedTensor a = operand(c.fa, c.mode_a, c.block_a, c.m, c.k, c.codes_a, c.scales_a, c.ga);
  const QuantizedTensor b = operand(c.fb, c.mode_b, c.block_b, c.n, c.k, c.codes_b, c.scales_b, c.gb);
  const std::vector<float> out = gemm(a, b);
  c.c.resize(out.size());
  std::transform(out.begin(), out.end(), c.c.begin(), result_bits);
}

void compute_expected(Case& c) {
  std::visit([](auto& v) { compute_expected(v); }, c);
}

// --- Checking -----------------------------------------------------------------------------

std::optional<Mismatch> check(const Case& c) {
  return std::visit([](const auto& v) { return check_case(v); }, c);
}

std::string describe(const Mismatch& m) {
  return "field " + m.field + ": file has " + m.file + ", golden gives " + m.golden;
}

CheckReport check_stream(std::istream& in) {
  Reader reader(in);
  CheckReport report;
  while (std::optional<Vector> v = reader.next()) {
    ++report.cases;
    const std::optional<Mismatch> m = check(v->data);
    if (!m) continue;
    ++report.mismatches;
    if (report.reported.size() < CheckReport::kMaxReported) {
      std::string where = "line " + std::to_string(v->line);
      if (!v->label.empty()) where += " (boundary: " + v->label + ")";
      std::string line = where + ": " + std::string(name(op_of(v->data))) + " " + describe(*m);
      if (!m->operands.empty()) line += "\n    operands: " + m->operands;
      report.reported.push_back(std::move(line));
    }
  }
  return report;
}

}  // namespace nibble::vectors
