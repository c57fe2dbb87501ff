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
// A zero magnitude is emitted as code 0 (never negative zero), so the uniform
// formats E1M2 and INT4 dequantize to identical bits under the same scale rule.
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

struct QuantConfig {
  Format format = Format::kE2M1;
  BlockShape block = BlockShape::k1x16;
  ScaleMode scale = ScaleMode::kFP32;
  Rounding rounding = Rounding::kNearestEven;
  int sr_bits = 8;      // B, 1..8
  RhtConfig rht;        // applied along cols before quantizing
  uint64_t seed = 0;    // keys the SR bits and the RHT signs
  uint32_t stream = 0;  // SR stream: give every tensor of a step its own
};
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

// The largest |x| over the finite elements.
float finite_amax(const float* x, size_t n);

// Quantize one block of `count` elements (count <= 32) whose encode scale is
// known: the inner loop of every quantizer. `random` holds each element's
// SR bits (ignored for RNE). Returns codes with zero canonicalized to 0.
void quantize_block_elements(const float* x, size_t count, float encode, Format f, Rounding r,
                             const uint32_t* random, int sr_bits, uint8_t* codes);

// Quantize x (row-major [rows, cols]). With cfg.rht enabled, x is transformed
// first (cols must be a multiple of the RHT size). Throws std::invalid_argument
// for invalid configurations or shapes.
QuantizedTensor quantize(const float* x, int64_t rows, int64_t cols, const QuantConfig& cfg);

// Element value: fl(fl(q * s_block) * g) where g is the per-tensor decode scale.
// The result is in the RHT domain if the tensor was transformed.
std::vector<float> dequantize(const QuantizedTensor& q);

}  // namespace nibble
