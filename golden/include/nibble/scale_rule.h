// The tensor-scale and block-scale rules of scale.h (docs/numerics.md section
// 3), written once for host and device: golden's scale.cpp runs them, and so
// do the CUDA kernels, so that which operations a rule takes, in which order,
// its clamps and its NaN and infinity cases exist in one copy.
//
// A rule is a template over the binary32 operations it is computed with
// (Ops: mul, div, div_by_gmax, reciprocal, each one correctly rounded
// operation, and the E4M3 scale conversions encode_e4m3 and decode_e4m3 of
// scale.h). Golden passes the host's IEEE operators and its own conversions;
// the kernels pass device operations with the same results (checked against
// golden on the host by tests/kernels/quant_math_test.cpp, and bit for bit on
// the device by the GPU suites). Everything else here is integer work on bit
// patterns, the same on both sides.
#pragma once

#include <cstdint>
#include <cstring>

#include "nibble/codes.h"
#include "nibble/formats.h"
#include "nibble/scale.h"

namespace nibble::scale_rule {

inline constexpr float kFltMax = 3.40282346638528859812e+38f;
inline constexpr uint32_t kPlusInfBits = 0x7F800000u;
inline constexpr uint32_t kCanonicalNaNBits = 0x7FC00000u;  // fp32.h's kCanonicalNaN
inline constexpr int kUe8m0Bias = info(ScaleFormat::kUE8M0).bias;

// ---- binary32 bit patterns ---------------------------------------------------
NIBBLE_HOST_DEVICE inline uint32_t bits_of(float x) {
#if defined(__CUDA_ARCH__)
  return __float_as_uint(x);
#else
  uint32_t u;
  std::memcpy(&u, &x, sizeof u);
  return u;
#endif
}
NIBBLE_HOST_DEVICE inline float float_of(uint32_t u) {
#if defined(__CUDA_ARCH__)
  return __uint_as_float(u);
#else
  float x;
  std::memcpy(&x, &u, sizeof x);
  return x;
#endif
}
NIBBLE_HOST_DEVICE inline bool is_finite(float x) { return (bits_of(x) & kPlusInfBits) != kPlusInfBits; }
// fp32.h's canonical(): every NaN becomes the canonical one.
NIBBLE_HOST_DEVICE inline float canonical(float x) { return x != x ? float_of(kCanonicalNaNBits) : x; }
// min(a, FLT_MAX), keeping a NaN (as torch.min does).
NIBBLE_HOST_DEVICE inline float min_finite(float a) { return a > kFltMax ? kFltMax : a; }

// 2^k for k in [-149, 127] (fp32.h's exp2_f32, exact, subnormal below -126).
NIBBLE_HOST_DEVICE inline float exp2_f32(int k) {
  return k >= -126 ? float_of(static_cast<uint32_t>(k + 127) << 23) : float_of(1u << (k + 149));
}

// floor(log2 x) for finite x > 0.
NIBBLE_HOST_DEVICE inline int floor_log2(float x) {
  const uint32_t u = bits_of(x);
  const uint32_t biased = (u >> 23) & 0xFFu;
  const uint32_t frac = u & 0x7FFFFFu;
#if defined(__CUDA_ARCH__)
  return biased == 0 ? -149 + (31 - __clz(frac)) : static_cast<int>(biased) - 127;
#else
  return biased == 0 ? -149 + (31 - __builtin_clz(frac)) : static_cast<int>(biased) - 127;
#endif
}

// 2^k as a double, for k within the double's normal range (exact).
NIBBLE_HOST_DEVICE inline double exp2_f64(int k) {
  const uint64_t bits = static_cast<uint64_t>(k + 1023) << 52;
#if defined(__CUDA_ARCH__)
  return __longlong_as_double(static_cast<long long>(bits));
#else
  double d;
  std::memcpy(&d, &bits, sizeof d);
  return d;
#endif
}

// ---- what the rules need of a scale mode and element format ------------------------
struct ScaleFacts {
  ScaleMode mode;
  ScaleFormat format;  // scale_format(mode)
  float gmax;          // the format's largest magnitude (formats.h max_value)
  float inv_gmax;      // fl(1 / gmax), as the nvfp4 block scale computes it
  int emax;            // floor(log2 gmax) (formats.h emax)
  uint32_t nan_code;   // the scale format's NaN code
};
constexpr ScaleFacts scale_facts(ScaleMode m, Format f) {
  const float gmax = grid_value(max_units(f), lsb_exp(f));
  return {m, scale_format(m), gmax, 1.0f / gmax, msb_index(max_units(f)) + lsb_exp(f), info(scale_format(m)).nan_code};
}

// ---- the rules ------------------------------------------------------------------
// The per-tensor level (scale.h tensor_scale): the identity but for nvfp4,
// S_enc = fl(448 * gmax / amax_tensor) (1 if that is 0 or amax_tensor is 0,
// FLT_MAX if it overflows) and g = fl(1 / S_enc). A NaN amax_tensor gives NaN
// (min_finite keeps it), +Inf gives 1 (448 * gmax / Inf = 0).
template <class Ops>
NIBBLE_HOST_DEVICE TensorScale tensor_scale(const ScaleFacts& s, float amax_tensor) {
  if (s.mode != ScaleMode::kNVFP4) return {1.0f, 1.0f};
  float s_enc = min_finite(Ops::div(Ops::mul(kE4M3Max, s.gmax), amax_tensor));
  if (amax_tensor == 0.0f || s_enc == 0.0f) s_enc = 1.0f;
  return {canonical(s_enc), canonical(Ops::div(1.0f, s_enc))};
}

// UE8M0's scale 2^k, k clamped to the code range [-127, 127], and its encode 2^-k.
NIBBLE_HOST_DEVICE inline BlockScale power_of_two_scale(int k) {
  k = k < -kUe8m0Bias ? -kUe8m0Bias : (k > kUe8m0Bias ? kUe8m0Bias : k);
  return {static_cast<uint32_t>(k + kUe8m0Bias), exp2_f32(k), exp2_f32(-k)};
}

// The nvfp4 block scale in two halves, so that a caller may take the second
// from a table of the 256 codes: the E4M3 code of a block of amax, from
// t_enc_over_gmax = fl(S_enc * fl(1 / gmax)) (once per tensor), and the
// encode factor of a code's decoded scale s, min(fl(1 / fl(s * g)), FLT_MAX).
template <class Ops>
NIBBLE_HOST_DEVICE uint32_t nvfp4_scale_code(float amax, float t_enc_over_gmax) {
  return Ops::encode_e4m3(Ops::mul(amax, t_enc_over_gmax));
}
template <class Ops>
NIBBLE_HOST_DEVICE float nvfp4_encode(float s, float t_decode) {
  return canonical(min_finite(Ops::div(1.0f, Ops::mul(s, t_decode))));
}

// The block scale of a block whose amax is finite (and >= 0).
template <class Ops>
NIBBLE_HOST_DEVICE BlockScale finite_block_scale(const ScaleFacts& s, float amax, const TensorScale& t) {
  switch (s.mode) {
    case ScaleMode::kFP32: {
      const float d = Ops::div_by_gmax(amax, s);
      return {bits_of(d), d, min_finite(Ops::reciprocal(d))};
    }
    case ScaleMode::kNVFP4: {
      const uint32_t code = nvfp4_scale_code<Ops>(amax, Ops::mul(t.encode, s.inv_gmax));
      const float d = Ops::decode_e4m3(code);
      return {code, d, nvfp4_encode<Ops>(d, t.decode)};
    }
    case ScaleMode::kMXFloor:
      return power_of_two_scale(amax == 0.0f ? -kUe8m0Bias : floor_log2(amax) - s.emax);
    case ScaleMode::kMXCeil:
    default: {
      if (amax == 0.0f) return power_of_two_scale(-kUe8m0Bias);
      // Smallest k with amax <= gmax * 2^k: k0 or k0 + 1; gmax * 2^k0 is exact in double.
      const int k0 = floor_log2(amax) - s.emax;
      return power_of_two_scale(static_cast<double>(amax) <= static_cast<double>(s.gmax) * exp2_f64(k0) ? k0
                                                                                                       : k0 + 1);
    }
  }
}

// The block scale of any amax (scale.h block_scale): a NaN amax gives the NaN
// code and NaN factors; +Inf gives FP32 the scale +Inf (amax / gmax) with
// encode 0 (its reciprocal), E4M3 448 (encode_e4m3 saturates it), UE8M0 the
// code 254 (k clamped to 127, as log2(+Inf) = +Inf).
template <class Ops>
NIBBLE_HOST_DEVICE BlockScale block_scale(const ScaleFacts& s, float amax, const TensorScale& t) {
  if (amax != amax) return {s.nan_code, float_of(kCanonicalNaNBits), float_of(kCanonicalNaNBits)};
  if (!is_finite(amax)) {
    switch (s.mode) {
      case ScaleMode::kFP32: return {kPlusInfBits, float_of(kPlusInfBits), 0.0f};
      case ScaleMode::kNVFP4: break;
      case ScaleMode::kMXFloor:
      case ScaleMode::kMXCeil: return power_of_two_scale(kUe8m0Bias);
    }
  }
  return finite_block_scale<Ops>(s, amax, t);
}

}  // namespace nibble::scale_rule
