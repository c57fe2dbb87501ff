// The per-element and per-block arithmetic of quantization, written once for
// host and device: every function here mirrors one golden function (named in
// its comment) operation by operation, on integers and on binary32 operations
// whose rounding is spelled out (mul_rn, add_rn, div_rn: never contracted).
// The block and tensor scales are not mirrored: they are golden's own rules
// (nibble/scale_rule.h), run with these operations.
//
// The kernels call these in device code; tests/kernels/quant_math_test.cpp
// compiles the same header with the host compiler and checks every function
// against golden on the host, so a mismatch shows up without a GPU.
#pragma once

// Device code takes Random123's 32-bit multiply (mulhi intrinsic and low
// product) instead of its default 64-bit product: the compiler widens the
// latter's surrounding XORs to 64 bits and adds an instruction per multiply.
// Same Philox words either way (checked against golden by the GPU tests).
#if defined(__CUDA_ARCH__) && !defined(R123_USE_64BIT)
#define R123_USE_64BIT 0
#define R123_USE_MULHILO32_MULHI_INTRIN 1
#define R123_MULHILO32_MULHI_INTRIN __umulhi
#endif
#include <Random123/philox.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "nibble/cuda/dispatch.h"
#include "nibble/formats.h"
#include "nibble/fp32.h"
#include "nibble/quantize.h"
#include "nibble/scale.h"
#include "nibble/scale_rule.h"

#if defined(__CUDACC__)
#define NIBBLE_HD __host__ __device__ __forceinline__
#else
#define NIBBLE_HD inline
#endif

namespace nibble::cuda::math {

// Bit patterns and the scale rules' helpers: golden's, for host and device.
using scale_rule::bits_of;
using scale_rule::canonical;
using scale_rule::exp2_f32;
using scale_rule::float_of;
using scale_rule::floor_log2;
using scale_rule::is_finite;
using scale_rule::kFltMax;
using scale_rule::min_finite;

// ---- binary32 operations, one rounding each -------------------------------
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
NIBBLE_HD float fma_rn(float a, float b, float c) {
#if defined(__CUDA_ARCH__)
  return __fmaf_rn(a, b, c);
#else
  return std::fma(a, b, c);
#endif
}
// fl(1 / a): the same correctly rounded quotient as div_rn(1, a), by the
// device's reciprocal sequence instead of its general division.
NIBBLE_HD float rcp_rn(float a) {
#if defined(__CUDA_ARCH__)
  return __frcp_rn(a);
#else
  return div_rn(1.0f, a);
#endif
}
// fl(a / b) for a divisor b > 0 known in advance with r = fl(1 / b): for
// a >= 2^-96, q0 = fl(a r), then the remainder a - q0 b (exact by one FMA)
// corrects q0 in a second FMA (Markstein); below that, and for NaN, div_rn.
// Three operations instead of the IEEE division's ten or so. Correctly
// rounded for every a >= 2^-96: there q0 and the result are normal, the
// remainder is exact (a multiple of 2^-149) and nothing overflows, so the
// three operations scale exactly by powers of two from one binade of a to
// the next, and quant_math_test compares every significand of a with div_rn
// for each format's gmax (and the edges of the range).
NIBBLE_HD float div_by_constant_rn(float a, float b, float r) {
  if (!(a >= 0x1p-96f)) return div_rn(a, b);
  const float q0 = mul_rn(a, r);
  return fma_rn(fma_rn(-q0, b, a), r, q0);
}
NIBBLE_HD int msb_index32(uint32_t v) {  // v != 0
#if defined(__CUDA_ARCH__)
  return 31 - __clz(v);
#else
  return 31 - __builtin_clz(v);
#endif
}
NIBBLE_HD float abs_of(float x) { return float_of(bits_of(x) & 0x7FFFFFFFu); }

// golden round_to_bf16.
NIBBLE_HD float round_to_bf16(float x) {
  const uint32_t u = bits_of(x);
  if (!is_finite(x)) return canonical(x);
  const uint32_t lower = u & 0xFFFFu;
  uint32_t upper = u >> 16;
  if (lower > 0x8000u || (lower == 0x8000u && (upper & 1u) != 0)) ++upper;
  return float_of(upper << 16);
}

// ---- element rounding (golden round_to_grid, then quantizer_code) ------------
struct GridValue {
  bool neg;
  uint32_t units;
};

// PTX prmt.b32 in its default mode, and its host definition: byte i of the
// result is byte (s >> 4i) & 7 of {y, x}, or, where bit 3 of that selector
// nibble is set, that byte's top bit replicated (0x00 or 0xFF).
NIBBLE_HD uint32_t byte_perm_sx(uint32_t x, uint32_t y, uint32_t s) {
#if defined(__CUDA_ARCH__)
  uint32_t r;
  asm("prmt.b32 %0, %1, %2, %3;" : "=r"(r) : "r"(x), "r"(y), "r"(s));
  return r;
#else
  const uint64_t bytes = (static_cast<uint64_t>(y) << 32) | x;
  uint32_t out = 0;
  for (int i = 0; i < 4; ++i) {
    const uint32_t nibble = (s >> (4 * i)) & 0xFu;
    uint32_t b = static_cast<uint32_t>((bytes >> (8 * (nibble & 0x7u))) & 0xFFu);
    if ((nibble & 0x8u) != 0u) b = (b & 0x80u) != 0u ? 0xFFu : 0x00u;
    out |= b << (8 * i);
  }
  return out;
#endif
}

// __byte_perm (bit 3 of each selector nibble ignored), and its host definition.
NIBBLE_HD uint32_t byte_perm(uint32_t x, uint32_t y, uint32_t s) {
#if defined(__CUDA_ARCH__)
  return __byte_perm(x, y, s);
#else
  return byte_perm_sx(x, y, s & 0x7777u);
#endif
}

// A minifloat-like magnitude grid fixed at compile time: k * 2^kLsbExp for k
// in [0, kMaxUnits], spacing 2^max(0, floor(log2 k) - kManBits) units (golden
// Grid). Integer grids are the case of one spacing. Every magnitude is first
// clamped to the largest grid value (golden saturates everything beyond it
// alike, and rounding a grid value returns it), so no code needs a min.
//
// Both roundings return a word whose top byte is the magnitude code (the bits
// below it are not used), so that eight codes pack by byte permutes.
//
// RNE takes one binary32 add. With E = floor(log2 a) clamped below to the first
// normal binade (kLsbExp + kManBits), the spacing at a is q = 2^(E - kManBits).
// Adding C = 2^(E - kManBits + 23) to a in binary32 rounds a to a multiple of q
// (a < C, so the sum lies in [C, 2C) and its ulp is q):
//   n = bits(a +rn C) - bits(C) = round-half-even(a / q).
// The code of k quanta in binade shift = E - kManBits - kLsbExp is
// (shift << kManBits) + k (exponent field shift + 1, mantissa k - 2^kManBits;
// k = 2^(kManBits+1) carries into the next binade); below the normal binades
// shift = 0 and the code is k. Shifted to the top byte, bits(C) << 24 leaves
// the word (C's pattern is a multiple of 2^23), so
//   code << 24 = (bits(a +rn C) << 24) + ((bits(C) - bits(C_min)) << (kManBits + 1)).
// When every grid value lies in the first binade (kUniform: E1M2, INT4) E is
// one constant and the second term is zero; those grids round the signed value
// instead, with one add and no sign handling (uniform_rne_nibbles).
//
// SR (golden: k = floor(y) + (frac_B(y) + r >= 2^B), y = a / q, r the B random
// bits) needs no exponent either. It is floor((Y + R) / 2^8) with
// Y = floor(y 2^8) and R = r 2^(8 - B): the random byte with its low 8 - B bits
// cleared (nested floors of divisions by powers of two combine). Y comes from
// one round-toward-zero operation whose bit pattern, shifted by kSrShift, holds
// the code in bits 24.. and Y's eight fraction bits in bits 16..23:
//   graded grids: f = a * 2^(-126 - kLsbExp - kManBits), which takes
//     N = 2^(kLsbExp + kManBits), the first normal grid value, to binary32's
//     smallest normal 2^-126. For a >= N, f is normal and exact, and bits(f)
//     is (binade + 1) << 23 plus a's mantissa: the code's exponent field and
//     mantissa, then a's lower mantissa bits. For a < N, f is subnormal, its
//     spacing 2^-149 is ulp(N) scaled alike, and truncation gives
//     bits(f) = floor(a / ulp(N)): the subnormal codes and 23 - kManBits
//     fraction bits (RZ keeps floor exact; device code keeps subnormals).
//   uniform grids: f = a + q 2^15, truncated: bits(f) - bits(q 2^15) = Y, and
//     the exponent bits leave the word when shifted by 16.
// Adding R (bits 16..23) and reading the top byte is then the whole SR; a
// clamped magnitude has no fraction, so the maximum code never overflows.
template <int kLsbExp, int kManBits, uint32_t kMaxUnits>
struct MagnitudeGrid {
  static constexpr int msb(uint32_t v) {
    int m = 0;
    while ((v >> (m + 1)) != 0) ++m;
    return m;
  }
  static constexpr uint32_t kMinExpBits = static_cast<uint32_t>(127 + kLsbExp + kManBits) << 23;
  static constexpr bool kUniform = msb(kMaxUnits) <= kManBits;
  // The largest grid value, kMaxUnits * 2^kLsbExp, as a binary32 pattern.
  static constexpr uint32_t kMaxValueBits = (static_cast<uint32_t>(127 + kLsbExp + msb(kMaxUnits)) << 23) |
                                            ((kMaxUnits << (23 - msb(kMaxUnits))) & 0x7FFFFFu);
  static constexpr uint32_t kMaxCode =
      kMaxUnits < (2u << kManBits)
          ? kMaxUnits
          : (static_cast<uint32_t>(msb(kMaxUnits) - kManBits) << kManBits) + (kMaxUnits >> (msb(kMaxUnits) - kManBits));
  static constexpr int kManBitsValue = kManBits;
  // SR by one operation (above): the addend's pattern on uniform grids (q 2^15),
  // the factor's on graded ones (2^(-126 - kLsbExp - kManBits)), and the shift
  // that puts the code's lowest bit at bit 24.
  static constexpr uint32_t kSrAddBits = static_cast<uint32_t>(127 + kLsbExp + 15) << 23;
  static constexpr uint32_t kSrScaleBits = kUniform ? 0u : static_cast<uint32_t>(1 - kLsbExp - kManBits) << 23;
  static constexpr int kSrShift = kUniform ? 16 : kManBits + 1;
  // RNE of a signed value on a uniform grid (uniform_rne_nibbles): the addend
  // 1.5 * 2^23 q, q = 2^kLsbExp the grid step.
  static constexpr uint32_t kRneSignedAddBits = (static_cast<uint32_t>(127 + kLsbExp + 23) << 23) | 0x400000u;
  static_assert(msb(kMaxUnits) < 24, "the largest grid value must be exact");
  static_assert(kUniform || kLsbExp + kManBits <= 0, "the SR factor must be a normal binary32");
  static_assert(kMaxCode < 128u && 23 - kManBits >= 8, "SR keeps eight fraction bits below the code");
  static_assert(!kUniform || kMaxUnits < (1u << 15), "the uniform SR addend must exceed every magnitude");
};

template <Format F>
using FormatGrid = MagnitudeGrid<lsb_exp(F), info(F).man_bits, max_units(F)>;
using E4M3Grid = MagnitudeGrid<kE4M3Grid.lsb_exp, kE4M3Grid.man_bits, kE4M3Grid.max_units>;

NIBBLE_HD float clamp_magnitude(float a, uint32_t clamp_bits) {  // a >= 0 or +inf, never NaN
#if defined(__CUDA_ARCH__)
  return fminf(a, __uint_as_float(clamp_bits));
#else
  return bits_of(a) < clamp_bits ? a : float_of(clamp_bits);
#endif
}

// a clamped to [-m, m], m = float_of(clamp_bits) (a never NaN).
NIBBLE_HD float clamp_signed(float a, uint32_t clamp_bits) {
#if defined(__CUDA_ARCH__)
  return fminf(fmaxf(a, -__uint_as_float(clamp_bits)), __uint_as_float(clamp_bits));
#else
  const float m = float_of(clamp_bits);
  return a > m ? m : (a < -m ? -m : a);
#endif
}

// |x| * s for s > 0: one multiply (the device folds |x| into it).
NIBBLE_HD float abs_mul_rn(float x, float s) {
#if defined(__CUDA_ARCH__)
  return __fmul_rn(fabsf(x), s);
#else
  return mul_rn(abs_of(x), s);
#endif
}

// a + b rounded toward zero, for finite a, b >= 0. The host rounds the double
// sum toward zero; that is exact here: the double sum is inexact only when one
// addend is below 2^-29 of the other, and then no double rounding reaches the
// next binary32 above the true sum's truncation.
NIBBLE_HD float add_rz(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fadd_rz(a, b);
#else
  const double s = static_cast<double>(a) + static_cast<double>(b);
  float f = static_cast<float>(s);
  if (static_cast<double>(f) > s) f = std::nextafter(f, 0.0f);
  return f;
#endif
}

// a * b rounded toward zero, for finite a, b >= 0, subnormal results kept. The
// host's double product is exact (24 + 24 bits, inside double's range), and
// rounding it to float, then stepping down where that rounded up, truncates.
NIBBLE_HD float mul_rz(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fmul_rz(a, b);
#else
  const double p = static_cast<double>(a) * static_cast<double>(b);
  float f = static_cast<float>(p);
  if (static_cast<double>(f) > p) f = std::nextafter(f, 0.0f);
  return f;
#endif
}

// RNE of a = |x| already clamped to the largest grid value, on a graded grid
// (E2M1, E4M3): the code in the top byte (see MagnitudeGrid).
template <class G>
NIBBLE_HD uint32_t nearest_code_word(float a) {
  static_assert(!G::kUniform, "uniform grids round signed values: uniform_rne_nibbles");
  const uint32_t e = (bits_of(a) & 0x7F800000u) > G::kMinExpBits ? (bits_of(a) & 0x7F800000u) : G::kMinExpBits;
  const uint32_t c_bits = e + (static_cast<uint32_t>(23 - G::kManBitsValue) << 23);
  const uint32_t sum = bits_of(add_rn(a, float_of(c_bits)));
  return (sum << 24) + ((e - G::kMinExpBits) << (G::kManBitsValue + 1));
}

// SR of a = |x| already clamped, on a graded grid (E2M1): a word whose top byte
// is the magnitude code (see MagnitudeGrid; uniform grids: uniform_sr_nibbles).
// Byte `byte` of random_word is the element's random byte with its low 8 - B
// bits cleared.
template <class G>
NIBBLE_HD uint32_t stochastic_code_word(float a, uint32_t random_word, int byte) {
  static_assert(!G::kUniform, "uniform grids round by 16-bit lanes: uniform_sr_nibbles");
  const float f = mul_rz(a, float_of(G::kSrScaleBits));
  // Bytes {0, 0, random byte, 0}: one permute.
  const uint32_t t = byte_perm(random_word, 0u, 0x7054u | (static_cast<uint32_t>(byte) << 8));
  return (bits_of(f) << G::kSrShift) + t;
}

static_assert(FormatGrid<Format::kE1M2>::kUniform && FormatGrid<Format::kInt4>::kUniform &&
              !FormatGrid<Format::kE2M1>::kUniform);
// (kMaxCode is checked against golden's encode of the largest magnitude in quant_math_test.)

// Byte kByte of eight words: even = {u0, u2, u4, u6}, odd = {u1, u3, u5, u7}
// (byte i of each from word 2i or 2i + 1): three byte permutes per four.
// kSign: each byte replaced by its top bit replicated (the permutes' sign
// mode), 0xFF or 0x00.
struct EvenOddBytes {
  uint32_t even;
  uint32_t odd;
};
template <int kByte, bool kSign = false>
NIBBLE_HD EvenOddBytes bytes_of(const uint32_t (&u)[8]) {
  static_assert(kByte >= 0 && kByte < 4, "a byte of a 32-bit word");
  constexpr uint32_t kB = static_cast<uint32_t>(kByte);
  // result bytes 0, 1: byte kByte of x, of y (bit 3 of a selector nibble: the sign mode)
  constexpr uint32_t kLow = (((4u + kB) << 4) | kB) | (kSign ? 0x88u : 0u);
  const uint32_t even = byte_perm(byte_perm_sx(u[0], u[2], kLow), byte_perm_sx(u[4], u[6], kLow << 8), 0x7610u);
  const uint32_t odd = byte_perm(byte_perm_sx(u[1], u[3], kLow), byte_perm_sx(u[5], u[7], kLow << 8), 0x7610u);
  return {even, odd};
}

// Nibble j of the result = 0xF where the sign bit of u[j] is set, else 0
// (j = 0..7): each sign replicated over its byte, even elements' bytes then
// keep their low nibble and odd ones' their high nibble.
NIBBLE_HD uint32_t sign_masks(const uint32_t (&u)[8]) {
  const EvenOddBytes s = bytes_of<3, true>(u);
  return (s.even & 0x0F0F0F0Fu) | (s.odd & 0xF0F0F0F0u);
}

// Eight words whose top bytes are values < 16 -> those values in nibbles 0..7.
NIBBLE_HD uint32_t top_byte_nibbles(const uint32_t (&w)[8]) {
  const EvenOddBytes t = bytes_of<3>(w);
  return t.even | (t.odd << 4);
}

// Eight packed magnitude codes (each < 8) and their sign masks (sign_masks)
// -> eight quantizer codes (golden quantizer_code: a zero magnitude is code 0
// whatever its sign; two's complement for integers). Bit 3 of a nibble of
// mags + 7 is set exactly where the magnitude is not 0 (no carry: 7 + 7 < 16).
template <Format F>
NIBBLE_HD uint32_t apply_signs(uint32_t mags, uint32_t sign_masks) {
  const uint32_t negative = (mags + 0x77777777u) & sign_masks & 0x88888888u;  // bit 3 where negative and not 0
  if constexpr (info(F).encoding == Encoding::kTwosComplement) {
    const uint32_t one = negative >> 3;
    return (mags ^ (one * 15u)) + one;  // 16 - mag in each negative nibble: no carry between nibbles
  } else {
    return mags | negative;
  }
}

// y[i] = bits(a[i] + c), rounded toward zero (kTowardZero) or to nearest even.
template <bool kTowardZero>
NIBBLE_HD void sum_bits(const float (&a)[8], float c, uint32_t (&y)[8]) {
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
  for (int i = 0; i < 8; ++i) y[i] = bits_of(kTowardZero ? add_rz(a[i], c) : add_rn(a[i], c));
}

// SR on a uniform grid of eight clamped magnitudes a[i] (elements 0..7 of a
// half group) with their random words r0 (elements 0..3) and r1 (4..7), each
// byte already R = r 2^(8 - B) -> the eight codes in nibbles 0..7. With
// f = bits(a +rz q 2^15), the low 16 bits of f are Y = floor(2^8 a / q): the
// code times 256 plus eight fraction bits (MagnitudeGrid), and the code is the
// high byte of Y + R. Two elements share a word as 16-bit lanes: Y + R stays
// below 2^16 (Y < 8 * 256, R < 256), so one add serves both, and the codes are
// bytes 1 and 3 of the sums. Per four elements: two permutes pair the lanes, a mask
// and a permute place the random bytes, two adds; then two permutes gather
// eight codes (instead of a permute and a shift-add per element and three
// permutes per four).
template <class G>
NIBBLE_HD uint32_t uniform_sr_nibbles(const float (&a)[8], uint32_t r0, uint32_t r1) {
  static_assert(G::kUniform && G::kSrShift == 16 && ((G::kSrAddBits << 16) == 0u), "uniform grids only");
  static_assert(G::kMaxCode < 8u, "Y + R fits a 16-bit lane");
  uint32_t y[8];
  sum_bits<true>(a, float_of(G::kSrAddBits), y);
  const uint32_t r[2] = {r0, r1};
  uint32_t even[2], odd[2];  // lanes {element 4q, 4q + 2} and {4q + 1, 4q + 3}
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
  for (int q = 0; q < 2; ++q) {
    even[q] = byte_perm(y[4 * q], y[4 * q + 2], 0x5410u) + (r[q] & 0x00FF00FFu);  // random bytes 0 and 2
    odd[q] = byte_perm(y[4 * q + 1], y[4 * q + 3], 0x5410u) + byte_perm(r[q], 0u, 0x4341u);  // bytes 1 and 3
  }
  return byte_perm(even[0], even[1], 0x7531u) | (byte_perm(odd[0], odd[1], 0x7531u) << 4);
}

// RNE on a uniform grid (E1M2, INT4) of eight signed a[i] = fl(x[i] e), each
// clamped to the largest grid value (or beyond it by so little that RNE still
// gives the largest code): the eight codes in nibbles 0..7. With C =
// 1.5 * 2^23 q (kRneSignedAddBits), every such a keeps a + C in C's binade,
// whose ulp is q, so bits(a +rn C) - bits(C) = RNE(a / q) with ties to even on
// both sides of zero (C / q is even): golden's units, with a's sign. bits(C)
// ends in 22 zero bits, so byte 0 of the sum is that integer in two's
// complement, a rounded-away -0 included as 0: INT4's code, and no sign to
// apply (instead of |x|, a shift per element and the sign nibbles). Sign-
// magnitude codes (E1M2) take each negative nibble 16 - k, k in 1..7, to
// 8 + k = ((16 - k) ^ 7) + 1, with no carry out of the nibble.
template <Format F>
NIBBLE_HD uint32_t uniform_rne_nibbles(const float (&a)[8]) {
  using G = FormatGrid<F>;
  static_assert(G::kUniform && G::kMaxCode < 8u, "uniform grids of magnitude codes below 8 only");
  uint32_t y[8];
  sum_bits<false>(a, float_of(G::kRneSignedAddBits), y);
  const EvenOddBytes b = bytes_of<0>(y);
  const uint32_t t = (b.even & 0x0F0F0F0Fu) | ((b.odd << 4) & 0xF0F0F0F0u);
  if constexpr (info(F).encoding == Encoding::kTwosComplement) {
    return t;
  } else {
    const uint32_t negative = (t >> 3) & 0x11111111u;  // 1 in each nibble holding a negative value
    return (t ^ (negative * 7u)) + negative;
  }
}

// SR with B random bits per element (B in 1..8): the mask that keeps the top
// B bits of each byte of a random word, R = r 2^(8 - B) in place.
NIBBLE_HD uint32_t sr_keep_mask(int sr_bits) { return ((0xFFu << (8 - sr_bits)) & 0xFFu) * 0x01010101u; }

// The 16 codes of one group, x[j] * encode rounded to format F (golden
// quantize's inner loop: round_to_grid of fl(x * encode), then quantizer_code),
// packed as the device layout stores them: element j in nibble j % 8 of word
// j / 8. encode > 0 (every block scale's encode factor is). SR: element j
// takes byte j % 4 of random[j / 4], whose top B bits are golden's r
// (sr_keep: sr_keep_mask(B)). kClamp false: the caller knows that no
// |x[j]| * encode exceeds the largest grid value by 2^-20 of it or more
// (products_within_grid), which both roundings take to the largest code as
// they do the clamped value, so the 16 clamps are left out.
struct PackedGroup {
  uint32_t lo;
  uint32_t hi;
};

// Elements 8h..8h+7 of a group rounded by RNE on a uniform grid, signed
// (uniform_rne_nibbles): their eight codes.
template <Format F, bool kClamp>
NIBBLE_HD uint32_t signed_half_codes(const float (&x)[16], int h, float encode) {
  float a[8];
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
  for (int i = 0; i < 8; ++i) {
    a[i] = mul_rn(x[8 * h + i], encode);
    if (kClamp) a[i] = clamp_signed(a[i], FormatGrid<F>::kMaxValueBits);
  }
  return uniform_rne_nibbles<F>(a);
}

// The same by magnitude, then sign (SR on every grid, RNE on graded ones):
// r_lo and r_hi are the random words of elements 8h..8h+3 and 8h+4..8h+7.
template <Format F, bool kStochastic, bool kClamp>
NIBBLE_HD uint32_t magnitude_half_codes(const float (&x)[16], int h, float encode, uint32_t r_lo, uint32_t r_hi) {
  using G = FormatGrid<F>;
  uint32_t u[8];
  float a[8];
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
  for (int i = 0; i < 8; ++i) {
    u[i] = bits_of(x[8 * h + i]);
    a[i] = abs_mul_rn(x[8 * h + i], encode);
    if (kClamp) a[i] = clamp_magnitude(a[i], G::kMaxValueBits);
  }
  uint32_t mags;
  if constexpr (kStochastic && G::kUniform) {
    mags = uniform_sr_nibbles<G>(a, r_lo, r_hi);
  } else {
    uint32_t code_words[8];
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
    for (int i = 0; i < 8; ++i) {
      const uint32_t r = i < 4 ? r_lo : r_hi;
      code_words[i] = kStochastic ? stochastic_code_word<G>(a[i], r, i % 4) : nearest_code_word<G>(a[i]);
    }
    mags = top_byte_nibbles(code_words);
  }
  return apply_signs<F>(mags, sign_masks(u));
}

template <Format F, bool kStochastic, bool kClamp = true>
NIBBLE_HD PackedGroup group_codes(const float (&x)[16], float encode, const uint32_t (&random)[4], uint32_t sr_keep) {
  static_assert(FormatGrid<F>::kMaxCode < 8u, "magnitude codes fit in three bits");
  uint32_t r4[4] = {0u, 0u, 0u, 0u};
  if (kStochastic) {
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
    for (int q = 0; q < 4; ++q) r4[q] = random[q] & sr_keep;  // R = r 2^(8 - B) of 4 elements, one per byte
  }
  uint32_t words[2];
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
  for (int h = 0; h < 2; ++h) {
    if constexpr (!kStochastic && FormatGrid<F>::kUniform) {
      words[h] = signed_half_codes<F, kClamp>(x, h, encode);
    } else {
      words[h] = magnitude_half_codes<F, kStochastic, kClamp>(x, h, encode, r4[2 * h], r4[2 * h + 1]);
    }
  }
  return {words[0], words[1]};
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
  const Decoded d = decode_element(f.twos_complement, f.exp_bits, f.man_bits, code);
  return {d.neg, d.units};
}

// The exact value of a code (golden decode_value).
NIBBLE_HD float decode_value(const FormatFacts& f, uint32_t code) {
  const GridValue d = decode_code(f, code);
  const float mag = mul_rn(static_cast<float>(d.units), exp2_f32(f.grid.lsb_exp));
  return d.neg ? -mag : mag;
}

// ---- scales (golden scale.cpp) -------------------------------------------------
// golden encode_e4m3: the E4M3 grid through the same rounding as the elements.
NIBBLE_HD uint32_t encode_e4m3(float x) {
  if (!(x == x)) return info(ScaleFormat::kE4M3).nan_code;
  const float a = clamp_magnitude(abs_of(x), E4M3Grid::kMaxValueBits);
  return ((bits_of(x) >> 24) & 0x80u) | (nearest_code_word<E4M3Grid>(a) >> 24);
}

NIBBLE_HD float quiet_nan() { return float_of(kCanonicalNaN); }

// golden decode_scale: binary32 codes are their own value; narrower ones
// decode by golden's decode_scale_fields with the table's row of F.
template <ScaleFormat F>
NIBBLE_HD float decode_scale_code_of(uint32_t code) {
  constexpr ScaleFormatInfo kInfo = info(F);
  if constexpr (scale_encoding(F) == ScaleEncoding::kBinary32) {
    return canonical(float_of(code));
  } else {
    const ScaleCodeValue v =
        decode_scale_fields(kInfo.bits, kInfo.exp_bits, kInfo.man_bits, kInfo.bias, kInfo.nan_code, code);
    if (v.nan) return quiet_nan();
    const float mag = mul_rn(static_cast<float>(v.units), exp2_f32(v.exp));
    return v.neg ? -mag : mag;
  }
}
struct DecodeScaleCode {
  uint32_t code;
  template <ScaleFormat F>
  NIBBLE_HD float operator()() const {
    return decode_scale_code_of<F>(code);
  }
};
NIBBLE_HD float decode_scale_code(ScaleFormat f, uint32_t code) {
  return with_listed<kAllScaleFormats>(f, DecodeScaleCode{code});
}

// ---- block and tensor scales: golden's rules (nibble/scale_rule.h) ------------------
// The binary32 operations the kernels compute golden's scale rules with, each
// the correctly rounded result golden's host operator gives: the division by
// gmax by div_by_constant_rn (with fl(1 / gmax) from the facts), the
// reciprocal by rcp_rn, and the E4M3 conversions above.
struct ScaleOps {
  NIBBLE_HD static float mul(float a, float b) { return mul_rn(a, b); }
  NIBBLE_HD static float div(float a, float b) { return div_rn(a, b); }
  NIBBLE_HD static float div_by_gmax(float amax, const scale_rule::ScaleFacts& s) {
    return div_by_constant_rn(amax, s.gmax, s.inv_gmax);
  }
  NIBBLE_HD static float reciprocal(float x) { return rcp_rn(x); }
  NIBBLE_HD static uint32_t encode_e4m3(float x) { return math::encode_e4m3(x); }
  NIBBLE_HD static float decode_e4m3(uint32_t code) { return decode_scale_code_of<ScaleFormat::kE4M3>(code); }
};

using scale_rule::ScaleFacts;
using scale_rule::scale_facts;

// golden tensor_scale.
NIBBLE_HD TensorScale tensor_scale(const ScaleFacts& s, float amax_tensor) {
  return scale_rule::tensor_scale<ScaleOps>(s, amax_tensor);
}

// golden block_scale for nvfp4 in two halves, so that the quantize kernel can
// take the second from a table of the 256 codes: the E4M3 code of a block of
// amax (t_enc_over_gmax = fl(S_enc * fl(1 / gmax))), and the encode factor of a code.
NIBBLE_HD uint32_t nvfp4_scale_code(float amax, float t_enc_over_gmax) {
  return scale_rule::nvfp4_scale_code<ScaleOps>(amax, t_enc_over_gmax);
}
NIBBLE_HD float nvfp4_encode_of_code(uint32_t code, float t_decode) {
  return scale_rule::nvfp4_encode<ScaleOps>(ScaleOps::decode_e4m3(code), t_decode);
}

// Whether every element of a finite block, scaled by its block's encode factor
// e, stays below gmax (1 + 2^-20) (group_codes' kClamp). FP32 scales: with
// d = fl(amax / gmax) and e = min_finite(fl(1 / d)), fl(|x| e) <= fl(amax e)
// (rounding is monotone). Where fl(1 / d) overflows, d <= 2^-128, so
// amax < gmax (2^-128 + 2^-150) and amax FLT_MAX < gmax (1 + 2^-22). Elsewhere
// d >= 2^-128, so d is amax / gmax within 2^-22 of it (subnormal d; 2^-24 if
// normal); e >= 2^-127.2 (d <= FLT_MAX / 1.75) is 1 / d within 2^-21.8 of it
// (2^-24 if normal), and only one of d and e can be subnormal: the product
// is within 2^-21 of gmax. The RHT's folded factor fl(c e) keeps the bound
// (rht16_scale_folds: c amax and c e exact), and so does its unfolded order
// (fl(c s) <= fl(c amax) = amax). The other modes round their scale to a power
// of two or E4M3, which may leave amax e well above gmax: they clamp.
// quant_math_test checks the bound in every binade of amax and each format.
NIBBLE_HD constexpr bool products_within_grid(ScaleMode m) { return m == ScaleMode::kFP32; }

// golden block_scale of a finite amax (the quantize kernels' common case: no
// NaN or infinity tests), and of any amax (the non-finite policy 'propagate').
NIBBLE_HD BlockScale block_scale(const ScaleFacts& s, float amax, const TensorScale& t) {
  return scale_rule::finite_block_scale<ScaleOps>(s, amax, t);
}
NIBBLE_HD BlockScale propagate_block_scale(const ScaleFacts& s, float amax, const TensorScale& t) {
  return scale_rule::block_scale<ScaleOps>(s, amax, t);
}

struct NanScaleCode {
  template <ScaleFormat F>
  NIBBLE_HD uint32_t operator()() const {
    return info(F).nan_code;
  }
};
NIBBLE_HD uint32_t nan_scale_code(ScaleFormat f) { return with_listed<kAllScaleFormats>(f, NanScaleCode{}); }

// golden quantizer_code's signed-zero policy on a group's packed codes (group_codes):
// where x[j] is negative, bit 3 of a minifloat code is set, which turns a zero
// magnitude into 0x8 and leaves a negative code as it is. The caller's encode
// factor is finite and positive, so each v = fl(x * encode) has x's sign and is
// not NaN. INT4 has no negative zero: its codes are returned as they are.
template <Format F>
NIBBLE_HD PackedGroup keep_zero_signs(PackedGroup p, const float (&x)[16]) {
  if constexpr (info(F).encoding == Encoding::kTwosComplement) {
    return p;
  } else {
    uint32_t lo[8], hi[8];
    for (int i = 0; i < 8; ++i) {
      lo[i] = bits_of(x[i]);
      hi[i] = bits_of(x[8 + i]);
    }
    return {p.lo | (sign_masks(lo) & 0x88888888u), p.hi | (sign_masks(hi) & 0x88888888u)};
  }
}

// golden quantize_block_elements for a group of a block that the propagate policy
// quantizes although its scale is not an ordinary one: the block holds a NaN or an
// infinity, or the tensor scale is NaN. A NaN encode factor makes every v NaN: codes
// 0. Otherwise (the block's amax was +Inf: encode 0 under FP32 scales, finite and
// positive under E4M3 and UE8M0 ones) the finite elements round as usual (every
// one to a zero of its sign when encode is 0), and an infinite one is Inf * 0 = NaN
// (code 0) or saturates to the largest code of its sign. No element is NaN (its
// block's amax, and so encode, would be). The rare path: the kernels take it per group.
template <Format F, bool kStochastic>
NIBBLE_HD PackedGroup propagate_group_codes(const float (&x)[16], float encode, const uint32_t (&random)[4],
                                            uint32_t sr_keep, bool keep_sign) {
  if (!(encode == encode)) return {0u, 0u};
  float finite[16];
  for (int j = 0; j < 16; ++j) finite[j] = is_finite(x[j]) ? x[j] : 0.0f;
  PackedGroup p{0u, 0u};
  if (encode != 0.0f) p = group_codes<F, kStochastic, true>(finite, encode, random, sr_keep);
  if (keep_sign) p = keep_zero_signs<F>(p, finite);
  constexpr uint32_t kMax = FormatGrid<F>::kMaxCode;
  constexpr uint32_t kNegMax = info(F).encoding == Encoding::kTwosComplement ? (16u - kMax) & 0xFu : 0x8u | kMax;
  for (int j = 0; j < 16; ++j) {
    if (is_finite(x[j])) continue;
    const uint32_t code = encode == 0.0f ? 0u : ((bits_of(x[j]) >> 31) != 0 ? kNegMax : kMax);
    uint32_t& w = j < 8 ? p.lo : p.hi;
    const int shift = 4 * (j % 8);
    w = (w & ~(0xFu << shift)) | (code << shift);
  }
  return p;
}

// ---- random bits (golden philox.h) -----------------------------------------------
// Random123's Philox4x32-10 key schedule for one seed: the key of each of the
// ten rounds. A kernel takes them as parameters, so its rounds read them as
// constants instead of bumping the key on every call (20 additions per call).
struct PhiloxRoundKeys {
  r123array2x32 k[10];
};
NIBBLE_HD PhiloxRoundKeys philox_round_keys(uint64_t seed) {
  PhiloxRoundKeys keys{};
  r123array2x32 key = {{static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32)}};
  for (int i = 0; i < 10; ++i) {
    keys.k[i] = key;
    key = _philox4x32bumpkey(key);
  }
  return keys;
}

// Philox4x32-10 of the counter {group, stream, domain}: Random123's rounds
// with the given round keys.
NIBBLE_HD r123array4x32 philox_words(const PhiloxRoundKeys& keys, uint64_t group, uint32_t stream, uint32_t domain) {
  r123array4x32 ctr = {{static_cast<uint32_t>(group), static_cast<uint32_t>(group >> 32), stream, domain}};
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
  for (int i = 0; i < 10; ++i) ctr = _philox4x32round(ctr, keys.k[i]);
  return ctr;
}

// ---- RHT16 in registers (golden rht_group with n = 16) -----------------------------

// The RHT16's negations and butterflies: golden rht_group with n = 16 before
// its scaling by c (kRht16Scale). even_ones[k] and odd_ones[k]: -1.0f if
// element 2k or 2k + 1 is negated, else +1.0f (RhtSigns). Golden negates (a
// sign-bit flip: zeros included), then runs the butterflies. The odd elements
// are negated first (rht16_negate_odd; a caller that flips their sign bits
// itself, as the BF16 widening can for free, runs rht16_butterflies alone); the
// even elements' negations fold into the first butterfly: with t = y1 already
// negated, s0 y0 + t = fma(y0, s0, t) and s0 y0 - t = fma(y0, s0, -t), each one
// rounding of the same exact value golden rounds (NaN payloads aside: a block
// holding a NaN is not finite, and its codes do not depend on them).
NIBBLE_HD void rht16_negate_odd(float (&y)[16], const float (&odd_ones)[8]) {
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
  for (int k = 0; k < 8; ++k) y[2 * k + 1] = mul_rn(y[2 * k + 1], odd_ones[k]);
}
NIBBLE_HD void rht16_butterflies(float (&y)[16], const float (&even_ones)[8]) {
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
  for (int k = 0; k < 8; ++k) {
    const float t = y[2 * k + 1];
    const float a = y[2 * k];
    y[2 * k] = fma_rn(a, even_ones[k], t);
    y[2 * k + 1] = fma_rn(a, even_ones[k], -t);
  }
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
  for (int h = 2; h < 16; h *= 2) {
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
}

// c = 2^-2 exactly for n = 16.
inline constexpr float kRht16Scale = 0.25f;

// The rest of golden rht_group after rht16_sums: fl(c * s), then optionally BF16.
NIBBLE_HD void rht16_scale(float (&y)[16], bool round_bf16) {
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
  for (int i = 0; i < 16; ++i) y[i] = mul_rn(y[i], kRht16Scale);
  if (round_bf16) {  // one branch for the group, not one per element
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
    for (int i = 0; i < 16; ++i) y[i] = round_to_bf16(y[i]);
  }
}

// Whether a block of RHT sums s may be quantized with the encode factor
// fl(c * e) in place of quantizing its elements fl(c * s) with e, saving the
// 16 scalings (without BF16 rounding). For e in [2^-124, 2^100], c * e is a
// normal float, so exact. Where c * s is exact too, fl(fl(c s) e) and
// fl(s fl(c e)) round the same real number. Otherwise |s| < 2^-124, and both
// products are below 2^-26, far under half of any format's smallest step (2^-2)
// or the 2^-8 of a step that stochastic rounding resolves: a zero magnitude
// either way, with the sign of s in both. The block amax needs no condition:
// rounding is monotone, so the largest fl(c |s|) is fl(c max |s|).
// quant_math_test checks the equality (and that it fails outside the range).
NIBBLE_HD bool rht16_scale_folds(float encode) { return encode >= 0x1p-124f && encode <= 0x1p100f; }

// signs: bit i set = element i negated (golden rht_signs word 0).
// even_ones, odd_ones: the factors rht16_butterflies and rht16_negate_odd
// take (the even ones side by side, so that a kernel loads them in pairs);
// odd_bits[k]: the sign bit (0x80000000) where element 2k + 1 is negated, else
// 0 (an XOR with it is rht16_negate_odd's product).
struct RhtSigns {
  float even_ones[8];
  float odd_ones[8];
  uint32_t odd_bits[8];
};
inline RhtSigns rht16_signs(uint32_t signs) {
  RhtSigns s{};
  for (int k = 0; k < 8; ++k) {
    s.even_ones[k] = ((signs >> (2 * k)) & 1u) != 0 ? -1.0f : 1.0f;
    s.odd_ones[k] = ((signs >> (2 * k + 1)) & 1u) != 0 ? -1.0f : 1.0f;
    s.odd_bits[k] = ((signs >> (2 * k + 1)) & 1u) << 31;
  }
  return s;
}

// Golden rht_group's negations and butterflies, n = 16.
NIBBLE_HD void rht16_sums(float (&y)[16], const RhtSigns& s) {
  rht16_negate_odd(y, s.odd_ones);
  rht16_butterflies(y, s.even_ones);
}

}  // namespace nibble::cuda::math
