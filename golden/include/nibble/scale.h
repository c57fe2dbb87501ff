// Block scales: how a block's amax becomes a stored scale code, a decode scale
// (what the dot product multiplies by) and an encode scale (what the quantizer
// multiplies elements by before rounding them onto the grid).
//
// Scale modes (docs/numerics.md states each formula and its corner cases):
//   fp32      one level: decode s = fl(amax / gmax) stored as FP32;
//             encode e = min(fl(1 / s), FLT_MAX).
//   nvfp4     two levels, Transformer Engine's formula: per tensor
//             S_enc = fl(448 * gmax / amax_tensor) (1 if that is 0 or amax is 0,
//             FLT_MAX if it overflows) and g = fl(1 / S_enc); per block
//             s = E4M3_rn_satfinite(fl(amax * fl(S_enc * fl(1 / gmax)))),
//             e = min(fl(1 / fl(s * g)), FLT_MAX).
//   mx-floor  OCP MX: s = 2^k, k = floor(log2 amax) - emax(format), clamped to
//             the UE8M0 range [-127, 127]; e = 2^-k.
//   mx-ceil   s = 2^k with the smallest k such that amax <= gmax * 2^k (no
//             element saturates), clamped likewise; e = 2^-k.
// gmax is the format's largest magnitude (6, 1.75, 7). A block that holds a
// NaN or Inf gets the scale format's NaN code; an all-zero block gets the
// scale fp32 0.0, E4M3 0x00 or UE8M0 0x00 (2^-127).
#pragma once

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string_view>

#include "nibble/formats.h"

namespace nibble {

enum class ScaleMode : uint8_t { kFP32, kNVFP4, kMXFloor, kMXCeil };
inline constexpr std::array<ScaleMode, 4> kAllScaleModes = {ScaleMode::kFP32, ScaleMode::kNVFP4,
                                                            ScaleMode::kMXFloor, ScaleMode::kMXCeil};

// The scale format a mode stores (constexpr: the CUDA kernels size their
// scale stores from it at compile time).
constexpr ScaleFormat scale_format(ScaleMode m) {
  switch (m) {
    case ScaleMode::kFP32: return ScaleFormat::kFP32;
    case ScaleMode::kNVFP4: return ScaleFormat::kE4M3;
    case ScaleMode::kMXFloor:
    case ScaleMode::kMXCeil: return ScaleFormat::kUE8M0;
  }
  throw std::invalid_argument("scale_format: unknown scale mode");
}
std::optional<ScaleMode> parse_scale_mode(std::string_view name);
std::string_view name(ScaleMode m);

// Scale codes: FP32 codes are the binary32 bit pattern; E4M3 and UE8M0 codes are 8-bit.
float decode_scale(ScaleFormat f, uint32_t code);
// E4M3 conversion: round to nearest even, saturate to +-448, NaN -> 0x7F (Inf -> 448).
uint8_t encode_e4m3(float x);

// The per-tensor level. For fp32 and mx it is the identity (encode = decode = 1).
struct TensorScale {
  float encode = 1.0f;  // S_enc
  float decode = 1.0f;  // g = fl(1 / S_enc), applied once to a dot product's sum
};
// amax_tensor is the largest |x| over the tensor's finite elements.
TensorScale tensor_scale(ScaleMode m, Format f, float amax_tensor);

struct BlockScale {
  uint32_t code;  // stored code in scale_format(mode)
  float decode;   // decode_scale(code): the value the dot product uses
  float encode;   // multiplier applied to elements before rounding
};
// amax is the block's largest |x| (finite blocks only); non-finite blocks use nan_block_scale.
BlockScale block_scale(ScaleMode m, Format f, float amax, const TensorScale& t);
BlockScale nan_block_scale(ScaleMode m);

}  // namespace nibble
