#include "nibble/scale.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

#include "nibble/fp32.h"
#include "nibble/quantize.h"
#include "nibble/scale_rule.h"

namespace nibble {
namespace {

// The binary32 operations golden computes the scale rules with
// (scale_rule.h): the host's IEEE operators, one rounding each (golden is
// built without contraction), and scale.h's E4M3 conversions.
struct HostOps {
  static float mul(float a, float b) { return a * b; }
  static float div(float a, float b) { return a / b; }
  static float div_by_gmax(float amax, const scale_rule::ScaleFacts& s) { return amax / s.gmax; }
  static float reciprocal(float x) { return 1.0f / x; }
  static uint32_t encode_e4m3(float x) { return nibble::encode_e4m3(x); }
  static float decode_e4m3(uint32_t code) { return decode_scale(ScaleFormat::kE4M3, code); }
};

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

TensorScale tensor_scale(ScaleMode m, Format f, float amax_tensor) {
  return scale_rule::tensor_scale<HostOps>(scale_rule::scale_facts(m, f), amax_tensor);
}

BlockScale block_scale(ScaleMode m, Format f, float amax, const TensorScale& t) {
  return scale_rule::block_scale<HostOps>(scale_rule::scale_facts(m, f), amax, t);
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
