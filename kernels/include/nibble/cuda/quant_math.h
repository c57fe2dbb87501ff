// The per-element and per-block arithmetic of quantization, written once for
// host and device: every function here mirrors one golden function (named in
// its comment) operation by operation, on integers and on binary32 operations
// whose rounding is spelled out (mul_rn, add_rn, div_rn: never contracted).
//
// The kernels call these in device code; tests/kernels/quant_math_test.cpp
// compiles the same header with the host compiler and checks every function
// against golden on the host, so a mismatch shows up without a GPU.
#pragma once

#include <Random123/philox.h>

#include <cmath>
#include <cstdint>
#include <cstring>

#include "nibble/formats.h"
#include "nibble/fp32.h"
#include "nibble/quantize.h"
#include "nibble/scale.h"

#if defined(__CUDACC__)
#define NIBBLE_HD __host__ __device__ __forceinline__
#else
#define NIBBLE_HD inline
#endif

namespace nibble::cuda::math {

inline constexpr float kFltMax = 3.40282346638528859812e+38f;

// ---- binary32 operations, one rounding each -------------------------------
NIBBLE_HD uint32_t bits_of(float x) {
#if defined(__CUDA_ARCH__)
  return __float_as_uint(x);
#else
  uint32_t u;
  std::memcpy(&u, &x, sizeof u);
  return u;
#endif
}
NIBBLE_HD float float_of(uint32_t u) {
#if defined(__CUDA_ARCH__)
  return __uint_as_float(u);
#else
  float x;
  std::memcpy(&x, &u, sizeof x);
  return x;
#endif
}
NIBBLE_HD float mul_rn(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fmul_rn(a, b);
#else
  return a * b;
#endif
}
NIBBLE_HD float add_rn(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fadd_rn(a, b);
#else
  return a + b;
#endif
}
NIBBLE_HD float sub_rn(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fsub_rn(a, b);
#else
  return a - b;
#endif
}
NIBBLE_HD float div_rn(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fdiv_rn(a, b);
#else
  return a / b;
#endif
}
NIBBLE_HD int msb_index32(uint32_t v) {  // v != 0
#if defined(__CUDA_ARCH__)
  return 31 - __clz(v);
#else
  return 31 - __builtin_clz(v);
#endif
}
NIBBLE_HD bool is_finite(float x) { return (bits_of(x) & 0x7F800000u) != 0x7F800000u; }
NIBBLE_HD float abs_of(float x) { return float_of(bits_of(x) & 0x7FFFFFFFu); }
NIBBLE_HD float min_finite(float a) { return a > kFltMax ? kFltMax : a; }  // golden scale.cpp min_finite

// 2^k for k in [-149, 127] (golden exp2_f32).
NIBBLE_HD float exp2_f32(int k) {
  return k >= -126 ? float_of(static_cast<uint32_t>(k + 127) << 23) : float_of(1u << (k + 149));
}

// floor(log2 x) for finite x > 0 (golden scale.cpp floor_log2).
NIBBLE_HD int floor_log2(float x) {
  const uint32_t u = bits_of(x);
  const uint32_t biased = (u >> 23) & 0xFFu;
  const uint32_t frac = u & 0x7FFFFFu;
  return biased == 0 ? -149 + msb_index32(frac) : static_cast<int>(biased) - 127;
}

// golden canonical(): every NaN the kernels output is 0x7FC00000 (a GPU's own
// default NaN is 0x7FFFFFFF, so results are canonicalized where they are stored).
NIBBLE_HD float canonical(float x) { return x != x ? float_of(kCanonicalNaN) : x; }

// golden round_to_bf16.
NIBBLE_HD float round_to_bf16(float x) {
  const uint32_t u = bits_of(x);
  if (!is_finite(x)) return canonical(x);
  const uint32_t lower = u & 0xFFFFu;
  uint32_t upper = u >> 16;
  if (lower > 0x8000u || (lower == 0x8000u && (upper & 1u) != 0)) ++upper;
  return float_of(upper << 16);
}

// ---- element rounding (golden round_to_grid) -------------------------------
struct GridValue {
  bool neg;
  uint32_t units;
};

NIBBLE_HD GridValue round_to_grid(float v, const Grid& g, bool stochastic, uint32_t random, int sr_bits) {
  const uint32_t u = bits_of(v);
  const bool neg = (u >> 31) != 0;
  const uint32_t biased = (u >> 23) & 0xFFu;
  if ((u & 0x7FFFFFFFu) == 0x7F800000u) return {neg, g.max_units};
  const uint32_t sig = biased == 0 ? (u & 0x7FFFFFu) : ((u & 0x7FFFFFu) | 0x800000u);
  const int exp = biased == 0 ? -149 : static_cast<int>(biased) - 150;
  if (sig == 0) return {neg, 0u};
  const int p = msb_index32(sig) + exp - g.lsb_exp;
  if (p > msb_index32(g.max_units) + 1) return {neg, g.max_units};
  const int spacing_exp = p - g.man_bits > 0 ? p - g.man_bits : 0;
  const int shift = g.lsb_exp + spacing_exp - exp;
  uint64_t k;
  bool up = false;
  if (shift <= 0) {
    k = static_cast<uint64_t>(sig) << -shift;
  } else {
    const int sh = shift < 40 ? shift : 40;
    const uint64_t s = shift > 40 ? 0u : sig;
    k = s >> sh;
    const uint64_t rem = s & ((uint64_t{1} << sh) - 1u);
    if (!stochastic) {
      const uint64_t half = uint64_t{1} << (sh - 1);
      up = rem > half || (rem == half && (k & 1u) != 0);
    } else {
      const uint64_t frac_bits = (rem << sr_bits) >> sh;
      up = frac_bits + random >= (uint64_t{1} << sr_bits);
    }
  }
  const uint64_t units = (k + (up ? 1u : 0u)) << spacing_exp;
  if (units >= g.max_units) return {neg, g.max_units};
  return {neg, static_cast<uint32_t>(units)};
}

// round_to_grid specialized to an element format at compile time, in a few
// integer and two binary32 operations per element (the quantize kernel's inner
// loop). With E = floor(log2 |v|) clamped below to the smallest normal binade
// of the format (L + man_bits, L = lsb_exp), the grid spacing at |v| is
// q = 2^(E - man_bits). Adding C = 2^(E - man_bits + 23) to |v| in binary32
// leaves exactly the multiples of q in the sum's significand, so
//   RNE: n = bits(|v| +rn C) - bits(C) = round-half-even(|v| / q)
//   SR:  with C' = C * 2^-8, n = bits(|v| +rz C') - bits(C') = floor(|v| / (q 2^-8)),
//        whose top bits are floor(|v| / q) = floor(y) and low 8 bits the top 8
//        bits of the fraction. With the fraction cut to B bits (n & ~(2^(8-B) - 1))
//        and the random byte R whose top B bits are golden's r,
//        k = ((n & ~(2^(8-B) - 1)) + R) >> 8 = floor((floor(y) 2^B + frac_B + R 2^(B-8)) / 2^B)
//        = floor(y) + (frac_B + r >= 2^B), golden's SR (the low 8 - B bits of R
//        cannot carry: frac_B 2^(8-B) + R < (frac_B + r + 1) 2^(8-B)).
// |v| is first clamped to twice the largest grid value (everything beyond
// saturates alike), which keeps |v| < C' (man_bits + 8 < 22).
// The magnitude is k quanta of 2^shift units, shift = E - man_bits - L.
// Identical to golden round_to_grid for every finite or infinite v
// (quant_math_test checks it against golden; the GPU tests check the device's
// own additions).
struct GridSteps {
  bool neg;
  uint32_t k;      // quanta (may exceed the largest grid value: callers saturate)
  uint32_t shift;  // quantum = 2^shift units
};

// random_byte: the Philox byte of the element (golden uses its top sr_bits bits).
template <Format F>
NIBBLE_HD GridSteps grid_steps(float v, bool stochastic, uint32_t random_byte, int sr_bits) {
  constexpr int kLsbExp = lsb_exp(F);
  constexpr int kManBits = info(F).man_bits;
  constexpr uint32_t kMinExpBits = static_cast<uint32_t>(127 + kLsbExp + kManBits) << 23;
  // 2 * max_units units as a binary32 pattern: (2 * max_units) * 2^kLsbExp.
  constexpr uint32_t kClampBits = []() {
    uint32_t m = 2 * max_units(F);
    int e = kLsbExp;
    while (m >= (1u << 24)) m >>= 1, ++e;
    int msb = 0;
    while ((m >> (msb + 1)) != 0) ++msb;
    return (static_cast<uint32_t>(127 + e + msb) << 23) | ((m << (23 - msb)) & 0x7FFFFFu);
  }();
  static_assert(kManBits + 8 < 22, "the C trick needs man_bits + B < 22");
  const uint32_t u = bits_of(v);
  const uint32_t a = (u & 0x7FFFFFFFu) < kClampBits ? (u & 0x7FFFFFFFu) : kClampBits;
  const uint32_t e = (a & 0x7F800000u) > kMinExpBits ? (a & 0x7F800000u) : kMinExpBits;
  const uint32_t c_bits = e + (static_cast<uint32_t>(23 - kManBits - (stochastic ? 8 : 0)) << 23);
  uint32_t n;
#if defined(__CUDA_ARCH__)
  const float x = __uint_as_float(a);
  const float c = __uint_as_float(c_bits);
  n = __float_as_uint(stochastic ? __fadd_rz(x, c) : __fadd_rn(x, c)) - c_bits;
#else
  // The same quotient in exact double arithmetic: |v| / q is a power-of-two scaling.
  const double y = std::ldexp(static_cast<double>(float_of(a)), 150 - static_cast<int>(c_bits >> 23));
  n = static_cast<uint32_t>(stochastic ? std::floor(y) : std::nearbyint(y));
#endif
  const uint32_t k = stochastic ? ((n & ~((1u << (8 - sr_bits)) - 1u)) + (random_byte & 0xFFu)) >> 8 : n;
  return {(u >> 31) != 0, k, (e - kMinExpBits) >> 23};
}

template <Format F>
NIBBLE_HD GridValue round_to_format(float v, bool stochastic, uint32_t random_byte, int sr_bits) {
  constexpr uint32_t kMaxUnits = max_units(F);
  const GridSteps s = grid_steps<F>(v, stochastic, random_byte, sr_bits);
  const uint32_t units = s.k << s.shift;
  return {s.neg, units >= kMaxUnits ? kMaxUnits : units};
}

// The quantizer's code of every magnitude 0..15 units (golden encode; 0 for
// magnitudes off the grid), one nibble each: code = (table >> 4*units) & 0xF.
inline constexpr uint64_t magnitude_code_table(Format f) {
  const FormatInfo& i = info(f);
  uint64_t table = 0;
  for (uint32_t units = 1; units < 16 && units <= max_units(f); ++units) {
    uint32_t code = units;
    if (i.encoding != Encoding::kTwosComplement && units >= (1u << i.man_bits)) {
      int msb = 0;
      while ((units >> (msb + 1)) != 0) ++msb;
      const uint32_t e = static_cast<uint32_t>(msb - i.man_bits + 1);
      if ((units & ((1u << (e - 1)) - 1u)) != 0) continue;  // off the grid
      code = (e << i.man_bits) | ((units >> (e - 1)) - (1u << i.man_bits));
    }
    table |= static_cast<uint64_t>(code) << (4 * units);
  }
  return table;
}

// quantizer_code for a format fixed at compile time: a table lookup and the sign.
template <Format F>
NIBBLE_HD uint32_t quantizer_code_of(GridValue v) {
  constexpr uint64_t kTable = magnitude_code_table(F);
  constexpr bool kTwos = info(F).encoding == Encoding::kTwosComplement;
  const uint32_t mag = static_cast<uint32_t>(kTable >> (4 * v.units)) & 0xFu;
  if (!v.neg || v.units == 0) return mag;
  return kTwos ? (16u - mag) & 0xFu : mag | 0x8u;
}

// The quantizer's 4-bit code of v (golden quantizer_code of round_to_grid),
// straight from the grid steps: a minifloat magnitude of k quanta of 2^shift
// units, k in [2^man_bits, 2^(man_bits+1)], has code (shift << man_bits) + k
// (exponent field shift + 1, mantissa k - 2^man_bits, and k = 2^(man_bits+1)
// carries into the next binade); below the normal binades shift = 0 and the
// code is k. Codes order as magnitudes, so saturation is a min on codes.
// For the integer format shift is always 0 (max_units < 2^(man_bits + 1)).
template <Format F>
NIBBLE_HD uint32_t element_code(float v, bool stochastic, uint32_t random_byte, int sr_bits) {
  constexpr int kManBits = info(F).man_bits;
  constexpr bool kTwos = info(F).encoding == Encoding::kTwosComplement;
  constexpr uint32_t kMaxCode = static_cast<uint32_t>(magnitude_code_table(F) >> (4 * max_units(F))) & 0xFu;
  static_assert(!kTwos || max_units(F) < (2u << kManBits), "integer grids have one spacing");
  const GridSteps s = grid_steps<F>(v, stochastic, random_byte, sr_bits);
  const uint32_t c = (s.shift << kManBits) + s.k;
  const uint32_t mag = c < kMaxCode ? c : kMaxCode;
  if (kTwos) return (s.neg ? 0u - mag : mag) & 0xFu;
  return s.neg && mag != 0 ? mag | 0x8u : mag;
}

// The facts of one element format the kernels need, taken from golden's table
// on the host (format_facts) and passed to kernels by value.
struct FormatFacts {
  Grid grid;
  bool twos_complement;
  int exp_bits;
  int man_bits;
};
inline constexpr FormatFacts format_facts(Format f) {
  return {grid(f), info(f).encoding == Encoding::kTwosComplement, info(f).exp_bits, info(f).man_bits};
}

// The signed magnitude of a code in units 2^lsb_exp (golden decode).
NIBBLE_HD GridValue decode_code(const FormatFacts& f, uint32_t code) {
  code &= 0xFu;
  const bool neg = (code & 0x8u) != 0;
  if (f.twos_complement) return {neg, neg ? 16u - code : code};
  const int m = f.man_bits;
  const uint32_t e = (code >> m) & ((1u << f.exp_bits) - 1u);
  const uint32_t frac = code & ((1u << m) - 1u);
  return {neg, e == 0 ? frac : ((1u << m) + frac) << (e - 1)};
}

// The exact value of a code (golden decode_value).
NIBBLE_HD float decode_value(const FormatFacts& f, uint32_t code) {
  const GridValue d = decode_code(f, code);
  const float mag = mul_rn(static_cast<float>(d.units), exp2_f32(f.grid.lsb_exp));
  return d.neg ? -mag : mag;
}

// The quantizer's code for a rounded magnitude (golden encode, with the
// quantizer's rule that a zero magnitude is code 0).
NIBBLE_HD uint32_t quantizer_code(const FormatFacts& f, GridValue v) {
  if (v.units == 0) return 0u;
  if (f.twos_complement) return (v.neg ? 16u - v.units : v.units) & 0xFu;
  const int m = f.man_bits;
  uint32_t e = 0;
  uint32_t frac = v.units;
  if (v.units >= (1u << m)) {
    e = static_cast<uint32_t>(msb_index32(v.units) - m + 1);
    frac = (v.units >> (e - 1)) - (1u << m);
  }
  return (v.neg ? 0x8u : 0u) | (e << m) | frac;
}

// ---- scales (golden scale.cpp) -------------------------------------------------
NIBBLE_HD uint32_t encode_e4m3(float x) {
  if (!(x == x)) return 0x7Fu;
  constexpr Grid kGrid = kE4M3Grid;  // a local copy: device code cannot read host globals
  const GridValue g = round_to_grid(x, kGrid, false, 0u, 8);
  uint32_t e = 0;
  uint32_t frac = g.units;
  if (g.units >= 8u) {
    e = static_cast<uint32_t>(msb_index32(g.units) - 3 + 1);
    frac = (g.units >> (e - 1)) - 8u;
  }
  return (g.neg ? 0x80u : 0u) | (e << 3) | frac;
}

NIBBLE_HD float quiet_nan() { return float_of(kCanonicalNaN); }

// golden decode_scale.
NIBBLE_HD float decode_scale_code(ScaleFormat f, uint32_t code) {
  if (f == ScaleFormat::kFP32) return canonical(float_of(code));
  if (f == ScaleFormat::kUE8M0) {
    code &= 0xFFu;
    return code == 0xFFu ? quiet_nan() : exp2_f32(static_cast<int>(code) - 127);
  }
  code &= 0xFFu;
  if ((code & 0x7Fu) == 0x7Fu) return quiet_nan();
  const uint32_t e = (code >> 3) & 0xFu;
  const uint32_t frac = code & 0x7u;
  const uint32_t units = e == 0 ? frac : (8u + frac) << (e - 1);
  constexpr int kLsbExp = kE4M3Grid.lsb_exp;
  const float mag = mul_rn(static_cast<float>(units), exp2_f32(kLsbExp));
  return (code & 0x80u) != 0 ? -mag : mag;
}

// The facts of one scale mode and element format the block-scale rule needs.
struct ScaleFacts {
  ScaleMode mode;
  ScaleFormat format;
  float gmax;  // golden max_value(format)
  int emax;    // golden emax(format)
};
inline constexpr ScaleFacts scale_facts(ScaleMode m, Format f) {
  const ScaleFormat sf = m == ScaleMode::kFP32 ? ScaleFormat::kFP32
                         : m == ScaleMode::kNVFP4 ? ScaleFormat::kE4M3
                                                  : ScaleFormat::kUE8M0;
  const int lsb = lsb_exp(f);
  float gmax = static_cast<float>(max_units(f));
  for (int i = 0; i < -lsb; ++i) gmax /= 2.0f;  // exact: a power-of-two division
  int log2_units = 0;
  while ((max_units(f) >> (log2_units + 1)) != 0) ++log2_units;
  return {m, sf, gmax, log2_units + lsb};
}

struct TensorScaleValue {
  float encode;
  float decode;
};
// golden tensor_scale.
NIBBLE_HD TensorScaleValue tensor_scale(const ScaleFacts& s, float amax_tensor) {
  if (s.mode != ScaleMode::kNVFP4) return {1.0f, 1.0f};
  float s_enc = min_finite(div_rn(mul_rn(448.0f, s.gmax), amax_tensor));
  if (amax_tensor == 0.0f || s_enc == 0.0f) s_enc = 1.0f;
  return {s_enc, div_rn(1.0f, s_enc)};
}

struct BlockScaleValue {
  uint32_t code;
  float decode;
  float encode;
};

NIBBLE_HD BlockScaleValue power_of_two_scale(int k) {
  k = k < -127 ? -127 : (k > 127 ? 127 : k);
  return {static_cast<uint32_t>(k + 127), exp2_f32(k), exp2_f32(-k)};
}

// golden block_scale (finite blocks).
NIBBLE_HD BlockScaleValue block_scale(const ScaleFacts& s, float amax, const TensorScaleValue& t) {
  switch (s.mode) {
    case ScaleMode::kFP32: {
      const float d = div_rn(amax, s.gmax);
      return {bits_of(d), d, min_finite(div_rn(1.0f, d))};
    }
    case ScaleMode::kNVFP4: {
      const float s_dec = mul_rn(amax, mul_rn(t.encode, div_rn(1.0f, s.gmax)));
      const uint32_t code = encode_e4m3(s_dec);
      const float d = decode_scale_code(ScaleFormat::kE4M3, code);
      return {code, d, min_finite(div_rn(1.0f, mul_rn(d, t.decode)))};
    }
    case ScaleMode::kMXFloor:
      return power_of_two_scale(amax == 0.0f ? -127 : floor_log2(amax) - s.emax);
    case ScaleMode::kMXCeil:
    default: {
      if (amax == 0.0f) return power_of_two_scale(-127);
      // Smallest k with amax <= gmax * 2^k: k0 or k0 + 1; gmax * 2^k0 is exact in double.
      const int k0 = floor_log2(amax) - s.emax;
      uint64_t pow_bits = static_cast<uint64_t>(k0 + 1023) << 52;
      double pow2;
#if defined(__CUDA_ARCH__)
      pow2 = __longlong_as_double(static_cast<long long>(pow_bits));
#else
      std::memcpy(&pow2, &pow_bits, sizeof pow2);
#endif
      return power_of_two_scale(static_cast<double>(amax) <= static_cast<double>(s.gmax) * pow2 ? k0 : k0 + 1);
    }
  }
}

NIBBLE_HD uint32_t nan_scale_code(ScaleFormat f) {
  return f == ScaleFormat::kFP32 ? 0x7FC00000u : (f == ScaleFormat::kE4M3 ? 0x7Fu : 0xFFu);
}

// ---- random bits (golden philox.h) -----------------------------------------------
NIBBLE_HD r123::Philox4x32_R<10>::ctr_type philox_words(uint64_t seed, uint64_t group, uint32_t stream,
                                                         uint32_t domain) {
  using Philox = r123::Philox4x32_R<10>;
  const Philox::key_type key = {{static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32)}};
  const Philox::ctr_type ctr = {{static_cast<uint32_t>(group), static_cast<uint32_t>(group >> 32), stream, domain}};
  return Philox()(ctr, key);
}

// ---- RHT16 in registers (golden rht_group with n = 16) -----------------------------
// sign_bits[i]: 0x80000000 if element i is negated, else 0 (negation as a
// sign-bit flip, as golden's -x: zeros and NaNs included).
NIBBLE_HD void rht16(float (&y)[16], const uint32_t (&sign_bits)[16], bool round_bf16) {
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
  for (int i = 0; i < 16; ++i) y[i] = float_of(bits_of(y[i]) ^ sign_bits[i]);
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
  for (int h = 1; h < 16; h *= 2) {
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
    for (int i = 0; i < 16; ++i) {
      if ((i & h) != 0) continue;
      const float a = y[i];
      const float b = y[i + h];
      y[i] = add_rn(a, b);
      y[i + h] = sub_rn(a, b);
    }
  }
  // c = 2^-2 exactly for n = 16.
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
  for (int i = 0; i < 16; ++i) {
    y[i] = mul_rn(y[i], 0.25f);
    if (round_bf16) y[i] = round_to_bf16(y[i]);
  }
}

// signs: bit i set = element i negated (golden rht_signs word 0).
NIBBLE_HD void rht16(float (&y)[16], uint32_t signs, bool round_bf16) {
  uint32_t sign_bits[16];
  for (int i = 0; i < 16; ++i) sign_bits[i] = ((signs >> i) & 1u) << 31;
  rht16(y, sign_bits, round_bf16);
}

}  // namespace nibble::cuda::math
