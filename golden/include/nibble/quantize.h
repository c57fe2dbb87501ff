// Quantization: FP32 tensors -> 4-bit codes + block scales, and back.
//
// Element rounding happens on the value v = fl(x * e), e the block's encode
// scale (scale.h), in one of two ways, both defined on integers:
//   RNE   round v to the nearest grid magnitude, ties to the even code,
//         saturating to +-max (6, 1.75, 7).
//   SR    with spacing d of the grid at |v| (d = 2^s units), let k = floor(|v|/d)
//         and f the first B bits of the fraction |v|/d - k (truncated); with B
//         random bits r, the magnitude is (k + (f + r >= 2^B)) * d, saturated.
//         P(up) = f / 2^B, so SR is unbiased up to the truncated fraction:
//         the expected error lies in (-d * 2^-B, 0].
// Two policies (QuantPolicy, docs/numerics.md section 3.1) settle what peers
// disagree on, each in one function here:
//   zero       the code of an element whose magnitude rounds to zero
//              (quantizer_code): code 0 (kPositive, the default), or the sign of
//              v kept as IEEE, OCP MX, CUDA's cvt and Transformer Engine do
//              (kSigned: E2M1/E1M2 code 0x8 for a negative v; INT4 has no -0).
//   nonfinite  how NaN and +-Inf reach the scales (scale.h: scale_amax, block_scale):
//              the finite amax with a NaN-scaled block (kFinite, the default), or
//              Transformer Engine's NVFP4 reference (kPropagate): the amax of
//              every |x|, NaN and Inf carried through the scale rules by IEEE
//              arithmetic.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "nibble/formats.h"
#include "nibble/rht.h"
#include "nibble/scale.h"

namespace nibble {

enum class Rounding : uint8_t { kNearestEven, kStochastic };
inline constexpr std::array<Rounding, 2> kAllRoundings = {Rounding::kNearestEven, Rounding::kStochastic};
std::optional<Rounding> parse_rounding(std::string_view name);
std::string_view name(Rounding r);

// Block shapes: 1x16 and 1x32 run along the contraction axis (cols); 16x16 is
// the 2-D weight block (16 rows by 16 cols).
enum class BlockShape : uint8_t { k1x16, k1x32, k16x16 };
inline constexpr std::array<BlockShape, 3> kAllBlockShapes = {BlockShape::k1x16, BlockShape::k1x32,
                                                              BlockShape::k16x16};
std::optional<BlockShape> parse_block_shape(std::string_view name);
std::string_view name(BlockShape b);
int block_rows(BlockShape b);
int block_cols(BlockShape b);

// The quantizer's policies (docs/numerics.md section 3.1 states each rule and
// why the defaults are the defaults). NonFinitePolicy is in scale.h.
enum class ZeroPolicy : uint8_t { kPositive, kSigned };
inline constexpr std::array<ZeroPolicy, 2> kAllZeroPolicies = {ZeroPolicy::kPositive, ZeroPolicy::kSigned};
std::optional<ZeroPolicy> parse_zero_policy(std::string_view name);
std::string_view name(ZeroPolicy z);  // "positive", "signed"

struct QuantPolicy {
  ZeroPolicy zero = ZeroPolicy::kPositive;
  NonFinitePolicy nonfinite = NonFinitePolicy::kFinite;
};
inline bool operator==(const QuantPolicy& a, const QuantPolicy& b) {
  return a.zero == b.zero && a.nonfinite == b.nonfinite;
}
inline bool operator!=(const QuantPolicy& a, const QuantPolicy& b) { return !(a == b); }

// Rounding a single value onto a grid (the hardware "cvt"). v must not be NaN;
// +-Inf saturates. The sign of zero is kept (the quantizer canonicalizes it).
// `random` holds the B = sr_bits random bits for stochastic rounding.
struct GridValue {
  bool neg;
  uint32_t units;
};
GridValue round_to_grid(float v, const Grid& g, Rounding r, uint32_t random = 0, int sr_bits = 8);
// round_to_grid onto a format's grid, then its code (keeps negative zero).
uint8_t convert_to_format(float v, Format f, Rounding r, uint32_t random = 0, int sr_bits = 8);
// The code the quantizer emits for a rounded element (section 3 step 5): a zero
// magnitude is code 0 under kPositive; under kSigned it keeps its sign where the
// format has a negative zero (E2M1, E1M2: 0x8); INT4 has none and gives 0.
uint8_t quantizer_code(Format f, const GridValue& v, ZeroPolicy z);

struct QuantConfig {
  Format format = Format::kE2M1;
  BlockShape block = BlockShape::k1x16;
  ScaleMode scale = ScaleMode::kFP32;
  Rounding rounding = Rounding::kNearestEven;
  int sr_bits = 8;      // B, 1..8
  RhtConfig rht;        // applied along cols before quantizing
  uint64_t seed = 0;    // keys the SR bits and the RHT signs
  uint32_t stream = 0;  // SR stream: give every tensor of a step its own
  QuantPolicy policy;   // signed zero and non-finite inputs
};
inline bool operator==(const QuantConfig& a, const QuantConfig& b) {
  return a.format == b.format && a.block == b.block && a.scale == b.scale && a.rounding == b.rounding &&
         a.sr_bits == b.sr_bits && a.rht == b.rht && a.seed == b.seed && a.stream == b.stream && a.policy == b.policy;
}
inline bool operator!=(const QuantConfig& a, const QuantConfig& b) { return !(a == b); }
// Throws std::invalid_argument naming the first problem found.
void validate(const QuantConfig& cfg);

// A quantized row-major [rows, cols] tensor; cols is the contraction axis.
// Blocks tile it from (0, 0); the last block row/column may be partial, and
// is quantized as if padded with zeros (the padding is not stored).
struct QuantizedTensor {
  int64_t rows = 0;
  int64_t cols = 0;
  QuantConfig config;
  std::vector<uint8_t> codes;    // rows * cols codes, one per byte (pack_codes packs them)
  std::vector<uint32_t> scales;  // block-row-major, one code per block
  TensorScale tensor;            // per-tensor level (identity unless nvfp4)

  int64_t block_grid_rows() const;
  int64_t block_grid_cols() const;
  // The block scale code covering element (r, c).
  uint32_t scale_code_at(int64_t r, int64_t c) const;
};

// Quantize `count` elements whose encode scale is known: the inner loop of
// every quantizer. v = fl(x * encode) is rounded (round_to_grid, `random`
// holding each element's SR bits, ignored for RNE) and coded by
// quantizer_code; a NaN v (only under kPropagate, from a NaN scale or Inf * 0)
// is code 0.
void quantize_block_elements(const float* x, size_t count, float encode, Format f, Rounding r,
                             const uint32_t* random, int sr_bits, ZeroPolicy zero, uint8_t* codes);

// One block through the quantizer (section 3 steps 3-5) under cfg's format,
// scale mode, rounding and policy, with the tensor level t: its scale, and the
// codes of its `count` elements (a 16x16 block row by row; `random` as above).
// The scale is block_scale under cfg.policy.nonfinite (scale.h) of the block's
// IEEE amax; a block that kFinite gives the NaN scale has codes 0 (its encode
// scale is NaN, so every v is).
BlockScale quantize_block(const float* x, size_t count, const QuantConfig& cfg, const TensorScale& t,
                          const uint32_t* random, uint8_t* codes);

// Quantize x (row-major [rows, cols]). With cfg.rht enabled, x is transformed
// first (cols must be a multiple of the RHT size). Throws std::invalid_argument
// for invalid configurations or shapes.
QuantizedTensor quantize(const float* x, int64_t rows, int64_t cols, const QuantConfig& cfg);

// Element value: fl(fl(q * s_block) * g) where g is the per-tensor decode scale.
// The result is in the RHT domain if the tensor was transformed.
std::vector<float> dequantize(const QuantizedTensor& q);

}  // namespace nibble
