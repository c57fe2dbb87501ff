// Block scales: how a block's amax becomes a stored scale code, a decode scale
// (what the dot product multiplies by) and an encode scale (what the quantizer
// multiplies elements by before rounding them onto the grid). The rules
// themselves are written once, for host and device, in scale_rule.h.
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
// gmax is the format's largest magnitude (6, 1.75, 7). An all-zero block gets
// the scale fp32 0.0, E4M3 0x00 or UE8M0 0x00 (2^-127).
//
// Non-finite inputs follow a policy (NonFinitePolicy), defined here alone:
//   finite     the tensor amax is the largest finite |x|; a block holding a NaN
//              or +-Inf gets the scale format's NaN code (and codes 0).
//   propagate  Transformer Engine's NVFP4 reference quantizer: every amax is the
//              IEEE maximum of all |x| (NaN if any is NaN, else +Inf if any is
//              infinite) and the rules above are evaluated on it in binary32:
//              a NaN amax gives the NaN code and a NaN encode scale; an infinite
//              one gives S_enc = 1 (448 * gmax / Inf = 0), an E4M3 scale
//              saturated to 448, a UE8M0 k clamped to 127, or the FP32 scale
//              +Inf with encode scale 0.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
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
// Every scale mode's name in list order, separated by sep ("fp32, nvfp4, mx-floor, mx-ceil").
std::string scale_mode_names(std::string_view sep);

// How NaN and +-Inf inputs reach the scales (above; docs/numerics.md section 3.1).
enum class NonFinitePolicy : uint8_t { kFinite, kPropagate };
inline constexpr std::array<NonFinitePolicy, 2> kAllNonFinitePolicies = {NonFinitePolicy::kFinite,
                                                                         NonFinitePolicy::kPropagate};
std::optional<NonFinitePolicy> parse_nonfinite_policy(std::string_view name);
std::string_view name(NonFinitePolicy p);  // "finite", "propagate"

// The amax a scale is computed from, over n values. kFinite: the largest |x|
// over the finite ones (0 if there are none). kPropagate: the IEEE maximum of
// every |x|: the canonical NaN if any is NaN, else +Inf if any is infinite,
// else the largest (torch.max, as Transformer Engine's reference takes it).
float scale_amax(const float* x, size_t n, NonFinitePolicy p);

// Scale codes: FP32 codes are the binary32 bit pattern; E4M3 and UE8M0 codes are 8-bit.
float decode_scale(ScaleFormat f, uint32_t code);
// E4M3 conversion: round to nearest even, saturate to +-448, NaN -> 0x7F (Inf -> 448).
uint8_t encode_e4m3(float x);

// The per-tensor level. For fp32 and mx it is the identity (encode = decode = 1).
struct TensorScale {
  float encode = 1.0f;  // S_enc
  float decode = 1.0f;  // g = fl(1 / S_enc), applied once to a dot product's sum
};
// amax_tensor is the tensor's scale_amax: any non-negative binary32, NaN and
// +Inf included (S_enc = g = NaN, and S_enc = g = 1).
TensorScale tensor_scale(ScaleMode m, Format f, float amax_tensor);

struct BlockScale {
  uint32_t code;  // stored code in scale_format(mode)
  float decode;   // decode_scale(code): the value the dot product uses
  float encode;   // multiplier applied to elements before rounding
};
// The rules above for a block whose largest |x| is amax: any non-negative
// binary32, NaN (the NaN code, as nan_block_scale) and +Inf included.
BlockScale block_scale(ScaleMode m, Format f, float amax, const TensorScale& t);
BlockScale nan_block_scale(ScaleMode m);
// A block's scale under policy p, from the block's IEEE amax (its scale_amax
// under kPropagate, which is NaN or +Inf where the block holds a NaN or an
// infinity): kFinite gives such a block nan_block_scale; kPropagate block_scale.
BlockScale block_scale(ScaleMode m, Format f, float ieee_amax, const TensorScale& t, NonFinitePolicy p);

}  // namespace nibble
