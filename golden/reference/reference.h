// The slow, independent model golden is checked against (SoftFloat's
// slowfloat idea): every value is an exact rational, every code is found by
// brute-force search over a literal table, and every binary32 result comes
// from one rounding of an exact quantity by this file's own method. It calls
// no golden function; golden's headers supply only the enum types and the
// PhiloxWords type, so both models speak the same configuration language.
#pragma once

#include <gmpxx.h>

#include <array>
#include <cstdint>
#include <vector>

#include "nibble/formats.h"
#include "nibble/philox.h"
#include "nibble/quantize.h"
#include "nibble/scale.h"

namespace nibble::reference {

using Rational = mpq_class;

// ---- Element formats, as literal tables --------------------------------------

// The exact value of each of the 16 codes (negative zero is the value 0).
const std::array<Rational, 16>& code_values(Format f);
// True where the code is a negative zero (E2M1/E1M2 0x8).
bool is_negative_zero(Format f, uint8_t code);
// The largest magnitude a quantizer emits: 6, 7/4, 7.
const Rational& max_quantized_magnitude(Format f);

// ---- binary32 by exact rationals --------------------------------------------

// The exact value of a finite float.
Rational exact(float x);
// The binary32 nearest to v, ties to the even significand, subnormals kept,
// overflow to +-Inf. A zero result takes the sign `negative_zero` when v == 0
// and the sign of v otherwise.
float to_binary32(const Rational& v, bool negative_zero = false);
// IEEE binary32 operations, each one rounding of the exact result. NaN results
// are the quiet NaN 0x7FC00000.
float add(float a, float b);
float sub(float a, float b);
float mul(float a, float b);
float div(float a, float b);
// The bfloat16 nearest to x (ties to even), widened back to binary32.
float to_bfloat16(float x);

// ---- Element rounding (the hardware "cvt"; keeps the sign of zero) -----------

// v must not be NaN; +-Inf saturates.
uint8_t convert_nearest_even(float v, Format f);
// `random` holds the element's `bits` random bits.
uint8_t convert_stochastic(float v, Format f, uint32_t random, int bits);

// ---- Scales ------------------------------------------------------------------

// OCP E4M3, round to nearest even, saturate to +-448, NaN -> 0x7F.
uint8_t encode_e4m3(float x);
// The value a scale code stands for (NaN for the NaN codes).
float scale_value(ScaleFormat f, uint32_t code);

struct TensorScale {
  float encode = 1.0f;
  float decode = 1.0f;
};
struct BlockScale {
  uint32_t code;
  float decode;
  float encode;
};
// amax_tensor is >= 0, NaN or +Inf (the propagate policy's amax).
TensorScale tensor_scale(ScaleMode m, Format f, float amax_tensor);
// amax = max |x| of the block: >= 0, NaN or +Inf (the propagate policy's amax).
BlockScale block_scale(ScaleMode m, Format f, float amax, const TensorScale& t);
// For a block holding NaN or Inf.
BlockScale nonfinite_block_scale(ScaleMode m);

// ---- Random words, RHT ---------------------------------------------------------

PhiloxWords philox_words(uint64_t seed, uint64_t group, uint32_t stream, uint32_t domain);
// One RHT group of n values in place, in rht.h's order of operations.
void rht_group(float* x, int n, const PhiloxWords& signs, bool round_bf16);

// ---- Tensors -------------------------------------------------------------------

struct Config {
  Format format = Format::kE2M1;
  BlockShape block = BlockShape::k1x16;
  ScaleMode scale = ScaleMode::kFP32;
  Rounding rounding = Rounding::kNearestEven;
  int sr_bits = 8;
  int rht_size = 0;  // 0 = off
  bool rht_bf16 = false;
  uint64_t seed = 0;
  uint32_t stream = 0;
  ZeroPolicy zero = ZeroPolicy::kPositive;              // a zero result: code 0, or its sign kept
  NonFinitePolicy nonfinite = NonFinitePolicy::kFinite;  // NaN-scaled blocks, or IEEE amaxes
};

struct Tensor {
  int64_t rows = 0;
  int64_t cols = 0;
  Config config;
  std::vector<uint8_t> codes;    // row-major, one code per element
  std::vector<uint32_t> scales;  // block-row-major
  TensorScale tensor;
};

int block_height(BlockShape b);
int block_width(BlockShape b);

// x is row-major [rows, cols]; cols must be a multiple of rht_size when it is on.
Tensor quantize(const std::vector<float>& x, int64_t rows, int64_t cols, const Config& cfg);
std::vector<float> dequantize(const Tensor& q);
// r_b = fl(partial * fl(scale_a * scale_b)); `partial` is the exact block sum
// of element-value products (dot.h's P_b * 2^(lsb_a + lsb_b)).
float block_product(const Rational& partial, float scale_a, float scale_b);
// Row ra of a times row rb of b over the whole contraction axis, per dot.h.
float dot(const Tensor& a, int64_t ra, const Tensor& b, int64_t rb);
// A * B^T, row-major [a.rows, b.rows].
std::vector<float> gemm(const Tensor& a, const Tensor& b);

}  // namespace nibble::reference
