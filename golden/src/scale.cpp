#include "nibble/scale.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

#include "nibble/fp32.h"
#include "nibble/quantize.h"

namespace nibble {
namespace {

constexpr float kFltMax = std::numeric_limits<float>::max();
constexpr int kUe8m0Bias = info(ScaleFormat::kUE8M0).bias;

// IEEE single operations, written as functions so each rounding is visible.
float mul(float a, float b) { return a * b; }
float div(float a, float b) { return a / b; }
float min_finite(float a) { return a > kFltMax ? kFltMax : a; }

int floor_log2(float x) {  // x finite, > 0
  const F32Fields fl = f32_fields(x);
  return fl.exp + (31 - __builtin_clz(fl.sig));
}

// Smallest k with amax <= gmax * 2^k. Candidates differ by one from the
// difference of binades; the comparison is exact in double.
int ceil_rule_exponent(float amax, Format f) {
  const int k0 = floor_log2(amax) - emax(f);
  const double gmax = static_cast<double>(max_value(f));
  return static_cast<double>(amax) <= std::ldexp(gmax, k0) ? k0 : k0 + 1;
}

BlockScale power_of_two_scale(int k) {
  k = k < -kUe8m0Bias ? -kUe8m0Bias : (k > kUe8m0Bias ? kUe8m0Bias : k);
  return {static_cast<uint32_t>(k + kUe8m0Bias), exp2_f32(k), exp2_f32(-k)};
}

}  // namespace

std::optional<ScaleMode> parse_scale_mode(std::string_view n) {
  for (ScaleMode m : kAllScaleModes) {
    if (name(m) == n) return m;
  }
  return std::nullopt;
}

std::string_view name(ScaleMode m) {
  switch (m) {
    case ScaleMode::kFP32: return "fp32";
    case ScaleMode::kNVFP4: return "nvfp4";
    case ScaleMode::kMXFloor: return "mx-floor";
    case ScaleMode::kMXCeil: return "mx-ceil";
  }
  return "?";
}

std::string scale_mode_names(std::string_view sep) {
  std::string out;
  for (ScaleMode m : kAllScaleModes) out += (out.empty() ? "" : std::string(sep)) + std::string(name(m));
  return out;
}

std::optional<NonFinitePolicy> parse_nonfinite_policy(std::string_view n) {
  for (NonFinitePolicy p : kAllNonFinitePolicies) {
    if (name(p) == n) return p;
  }
  return std::nullopt;
}

std::string_view name(NonFinitePolicy p) { return p == NonFinitePolicy::kFinite ? "finite" : "propagate"; }

float scale_amax(const float* x, size_t n, NonFinitePolicy p) {
  float amax = 0.0f;
  bool nan = false;
  for (size_t i = 0; i < n; ++i) {
    const float a = std::fabs(x[i]);
    if (a != a) {
      nan = true;
    } else if (p == NonFinitePolicy::kPropagate || f32_is_finite(a)) {
      amax = std::max(amax, a);
    }
  }
  return nan && p == NonFinitePolicy::kPropagate ? f32_from_bits(kCanonicalNaN) : amax;
}

float decode_scale(ScaleFormat f, uint32_t code) {
  if (scale_encoding(f) == ScaleEncoding::kBinary32) return canonical(f32_from_bits(code));
  const ScaleCodeValue v = scale_code_value(f, code);
  if (v.nan) return f32_from_bits(kCanonicalNaN);
  const float mag = static_cast<float>(v.units) * exp2_f32(v.exp);
  return v.neg ? -mag : mag;
}

uint8_t encode_e4m3(float x) {
  if (std::isnan(x)) return static_cast<uint8_t>(info(ScaleFormat::kE4M3).nan_code);
  const GridValue g = round_to_grid(x, kE4M3Grid, Rounding::kNearestEven);
  const ScaleFormatInfo& e4m3 = info(ScaleFormat::kE4M3);
  return static_cast<uint8_t>(minifloat_code(g.neg, g.units, e4m3.exp_bits, e4m3.man_bits));
}

// NaN and +Inf need no case of their own in the binary32 rules (min_finite
// keeps a NaN, as torch.min does; 448 * gmax / Inf = 0 becomes 1; E4M3 takes
// NaN to 0x7F and saturates Inf); canonical() fixes the NaNs they produce.
TensorScale tensor_scale(ScaleMode m, Format f, float amax_tensor) {
  if (m != ScaleMode::kNVFP4) return {};
  float s_enc = min_finite(div(mul(kE4M3Max, max_value(f)), amax_tensor));
  if (amax_tensor == 0.0f || s_enc == 0.0f) s_enc = 1.0f;
  return {canonical(s_enc), canonical(div(1.0f, s_enc))};
}

BlockScale block_scale(ScaleMode m, Format f, float amax, const TensorScale& t) {
  // A NaN amax gives every mode its NaN code and a NaN encode scale, which is nan_block_scale.
  if (amax != amax) return nan_block_scale(m);
  switch (m) {
    case ScaleMode::kFP32: {
      const float s = div(amax, max_value(f));
      return {f32_bits(s), s, min_finite(div(1.0f, s))};
    }
    case ScaleMode::kNVFP4: {
      const float s_dec = mul(amax, mul(t.encode, div(1.0f, max_value(f))));
      const uint8_t code = encode_e4m3(s_dec);
      const float s = decode_scale(ScaleFormat::kE4M3, code);
      return {code, s, canonical(min_finite(div(1.0f, mul(s, t.decode))))};
    }
    case ScaleMode::kMXFloor:
    case ScaleMode::kMXCeil: {
      // log2(+Inf) = +Inf: k clamps to the top of UE8M0's range (Transformer Engine's cast_to_e8).
      if (!f32_is_finite(amax)) return power_of_two_scale(kUe8m0Bias);
      if (amax == 0.0f) return power_of_two_scale(-kUe8m0Bias);
      return power_of_two_scale(m == ScaleMode::kMXFloor ? floor_log2(amax) - emax(f) : ceil_rule_exponent(amax, f));
    }
  }
  throw std::invalid_argument("block_scale: unknown scale mode");
}

BlockScale block_scale(ScaleMode m, Format f, float ieee_amax, const TensorScale& t, NonFinitePolicy p) {
  if (p == NonFinitePolicy::kFinite && !f32_is_finite(ieee_amax)) return nan_block_scale(m);
  return block_scale(m, f, ieee_amax, t);
}

BlockScale nan_block_scale(ScaleMode m) {
  const uint32_t code = info(scale_format(m)).nan_code;
  const float nan = f32_from_bits(kCanonicalNaN);
  return {code, nan, nan};
}

}  // namespace nibble
