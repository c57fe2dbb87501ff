#include "nibble/quantize.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "nibble/fp32.h"
#include "nibble/philox.h"

namespace nibble {
namespace {

GridValue saturated(bool neg, const Grid& g) { return {neg, g.max_units}; }

}  // namespace

std::optional<Rounding> parse_rounding(std::string_view n) {
  for (Rounding r : kAllRoundings) {
    if (name(r) == n) return r;
  }
  return std::nullopt;
}

std::string_view name(Rounding r) { return r == Rounding::kNearestEven ? "rne" : "sr"; }

std::optional<BlockShape> parse_block_shape(std::string_view n) {
  for (BlockShape b : kAllBlockShapes) {
    if (name(b) == n) return b;
  }
  return std::nullopt;
}

std::string_view name(BlockShape b) {
  switch (b) {
    case BlockShape::k1x16: return "1x16";
    case BlockShape::k1x32: return "1x32";
    case BlockShape::k16x16: return "16x16";
  }
  return "?";
}

std::optional<ZeroPolicy> parse_zero_policy(std::string_view n) {
  for (ZeroPolicy z : kAllZeroPolicies) {
    if (name(z) == n) return z;
  }
  return std::nullopt;
}

std::string_view name(ZeroPolicy z) { return z == ZeroPolicy::kPositive ? "positive" : "signed"; }

int block_rows(BlockShape b) { return b == BlockShape::k16x16 ? 16 : 1; }
int block_cols(BlockShape b) { return b == BlockShape::k1x32 ? 32 : 16; }

GridValue round_to_grid(float v, const Grid& g, Rounding r, uint32_t random, int sr_bits) {
  const uint32_t u = f32_bits(v);
  const bool neg = (u >> 31) != 0;
  if ((u & 0x7FFFFFFFu) == 0x7F800000u) return saturated(neg, g);
  const F32Fields x = f32_fields(v);
  if (x.sig == 0) return {neg, 0};
  // |v| = sig * 2^exp = t units; p = floor(log2 t).
  const int p = msb_index(x.sig) + x.exp - g.lsb_exp;
  if (p > msb_index(g.max_units) + 1) return saturated(neg, g);
  const int spacing_exp = std::max(0, p - g.man_bits);  // grid spacing is 2^spacing_exp units
  const int shift = g.lsb_exp + spacing_exp - x.exp;   // k = sig >> shift
  uint64_t k;
  bool up = false;
  if (shift <= 0) {
    k = static_cast<uint64_t>(x.sig) << -shift;
  } else {
    // Beyond 40 bits the fraction is below 2^-16 of a spacing: k = 0, and both
    // rules round down (RNE: below half; SR: the B <= 8 truncated bits are 0).
    const int sh = std::min(shift, 40);
    const uint64_t sig = shift > 40 ? 0 : x.sig;
    k = sig >> sh;
    const uint64_t rem = sig & ((uint64_t{1} << sh) - 1);
    if (r == Rounding::kNearestEven) {
      const uint64_t half = uint64_t{1} << (sh - 1);
      up = rem > half || (rem == half && (k & 1u) != 0);
    } else {
      const uint64_t frac_bits = (rem << sr_bits) >> sh;  // first B bits of the fraction
      up = frac_bits + random >= (uint64_t{1} << sr_bits);
    }
  }
  const uint64_t units = (k + (up ? 1u : 0u)) << spacing_exp;
  if (units >= g.max_units) return saturated(neg, g);
  return {neg, static_cast<uint32_t>(units)};
}

uint8_t convert_to_format(float v, Format f, Rounding r, uint32_t random, int sr_bits) {
  const GridValue gv = round_to_grid(v, grid(f), r, random, sr_bits);
  return encode(f, gv.neg, gv.units);
}

uint8_t quantizer_code(Format f, const GridValue& v, ZeroPolicy z) {
  if (v.units == 0 && z == ZeroPolicy::kPositive) return 0;
  return encode(f, v.neg, v.units);  // INT4's -0 encodes as 0
}

void validate(const QuantConfig& cfg) {
  if (cfg.sr_bits < 1 || cfg.sr_bits > 8) {
    throw std::invalid_argument("stochastic-rounding bits must be in 1..8 (one Philox call per 16 elements), got " +
                                std::to_string(cfg.sr_bits));
  }
  if (cfg.rht.enabled() && !rht_size_valid(cfg.rht.size)) {
    throw std::invalid_argument("RHT size must be 16, 32, 64 or 128, got " + std::to_string(cfg.rht.size));
  }
}

int64_t QuantizedTensor::block_grid_rows() const {
  const int64_t h = block_rows(config.block);
  return (rows + h - 1) / h;
}

int64_t QuantizedTensor::block_grid_cols() const {
  const int64_t w = block_cols(config.block);
  return (cols + w - 1) / w;
}

uint32_t QuantizedTensor::scale_code_at(int64_t r, int64_t c) const {
  const int64_t br = r / block_rows(config.block);
  const int64_t bc = c / block_cols(config.block);
  return scales[static_cast<size_t>(br * block_grid_cols() + bc)];
}

void quantize_block_elements(const float* x, size_t count, float encode_scale, Format f, Rounding r,
                             const uint32_t* random, int sr_bits, ZeroPolicy zero, uint8_t* codes) {
  const Grid g = grid(f);
  for (size_t i = 0; i < count; ++i) {
    const float v = x[i] * encode_scale;
    if (v != v) {
      codes[i] = 0;
      continue;
    }
    const GridValue gv = round_to_grid(v, g, r, r == Rounding::kStochastic ? random[i] : 0u, sr_bits);
    codes[i] = quantizer_code(f, gv, zero);
  }
}

BlockScale quantize_block(const float* x, size_t count, const QuantConfig& cfg, const TensorScale& t,
                          const uint32_t* random, uint8_t* codes) {
  const BlockScale s = block_scale(cfg.scale, cfg.format, scale_amax(x, count, NonFinitePolicy::kPropagate), t,
                                   cfg.policy.nonfinite);
  quantize_block_elements(x, count, s.encode, cfg.format, cfg.rounding, random, cfg.sr_bits, cfg.policy.zero, codes);
  return s;
}

QuantizedTensor quantize(const float* x, int64_t rows, int64_t cols, const QuantConfig& cfg) {
  validate(cfg);
  if (rows <= 0 || cols <= 0) throw std::invalid_argument("quantize: empty tensor");
  QuantizedTensor q;
  q.rows = rows;
  q.cols = cols;
  q.config = cfg;
  const size_t n = static_cast<size_t>(rows * cols);
  std::vector<float> work(x, x + n);
  if (cfg.rht.enabled()) rht_rows(work.data(), rows, cols, cfg.rht, cfg.seed);

  q.tensor = tensor_scale(cfg.scale, cfg.format, scale_amax(work.data(), n, cfg.policy.nonfinite));
  q.codes.assign(n, 0);
  const int64_t bh = block_rows(cfg.block);
  const int64_t bw = block_cols(cfg.block);
  const int64_t gr = q.block_grid_rows();
  const int64_t gc = q.block_grid_cols();
  q.scales.resize(static_cast<size_t>(gr * gc));

  // Each block is gathered row by row (a 16x16 block is 16 runs of 16) with its SR bits.
  std::vector<float> block(static_cast<size_t>(bh * bw));
  std::vector<uint32_t> random(block.size(), 0u);
  std::vector<uint8_t> codes(block.size());
  for (int64_t br = 0; br < gr; ++br) {
    for (int64_t bc = 0; bc < gc; ++bc) {
      const int64_t r0 = br * bh, r1 = std::min(rows, r0 + bh);
      const int64_t c0 = bc * bw, c1 = std::min(cols, c0 + bw);
      const int64_t w = c1 - c0;
      for (int64_t r = r0; r < r1; ++r) {
        const size_t at = static_cast<size_t>((r - r0) * w);
        std::copy(work.data() + r * cols + c0, work.data() + r * cols + c1, block.data() + at);
        if (cfg.rounding != Rounding::kStochastic) continue;
        for (int64_t c = c0; c < c1; c += 16) {
          const PhiloxWords pw = philox4x32_10(
              cfg.seed, sr_group(static_cast<uint64_t>(r), static_cast<uint64_t>(c), static_cast<uint64_t>(cols)),
              cfg.stream, PhiloxDomain::kStochasticRounding);
          for (int lane = 0; lane < 16 && c + lane < c1; ++lane) {
            random[at + static_cast<size_t>(c - c0 + lane)] = sr_lane_bits(pw, lane, cfg.sr_bits);
          }
        }
      }
      const size_t count = static_cast<size_t>((r1 - r0) * w);
      q.scales[static_cast<size_t>(br * gc + bc)] =
          quantize_block(block.data(), count, cfg, q.tensor, random.data(), codes.data()).code;
      for (int64_t r = r0; r < r1; ++r) {
        std::copy(codes.data() + (r - r0) * w, codes.data() + (r - r0 + 1) * w, q.codes.data() + r * cols + c0);
      }
    }
  }
  return q;
}

std::vector<float> dequantize(const QuantizedTensor& q) {
  std::vector<float> out(q.codes.size());
  const ScaleFormat sf = scale_format(q.config.scale);
  for (int64_t r = 0; r < q.rows; ++r) {
    for (int64_t c = 0; c < q.cols; ++c) {
      const size_t i = static_cast<size_t>(r * q.cols + c);
      const float s = decode_scale(sf, q.scale_code_at(r, c));
      const float v = decode_value(q.config.format, q.codes[i]) * s;
      out[i] = canonical(v * q.tensor.decode);
    }
  }
  return out;
}

}  // namespace nibble
