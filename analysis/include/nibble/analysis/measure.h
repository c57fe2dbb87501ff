// One quantizer configuration applied to one tensor, and what it did to it.
//
// With an RHT in the configuration, everything is measured in the rotated
// domain: dequantize(quantize(x, cfg)) is compared with rht_rows(copy of x).
// dequantize() returns rotated values, and the rotation is orthogonal, so
// SQNR, NMSE and alpha are the same in either domain up to binary32 rounding
// of the transform; applying the inverse transform to q would add that
// rounding to the quantization error being measured. The per-level biases and
// magnitude error, which are not rotation-invariant, belong in the rotated
// domain anyway: those are the values that were rounded onto the grid.
#pragma once

#include <cstdint>
#include <vector>

#include "nibble/quantize.h"
#include "nibble/stats.h"

namespace nibble::analysis {

struct Measurement {
  ErrorMetrics metrics;
  double code_entropy_bits = 0.0;
  double b_eff = 0.0;  // effective_level_fraction of the codes
  std::vector<MeasuredLevelBias> level_bias;
};

// x as the quantizer saw it: rotated by cfg's RHT along cols, or unchanged.
std::vector<float> reference_domain(const float* x, int64_t rows, int64_t cols, const QuantConfig& cfg);

// The reference in the scaled domain of q: each element divided, in double,
// by its block's decode scale times the per-tensor decode scale. This is the
// quantizer's fl(x * encode) without its last rounding (encode = fl(1/decode)
// for fp32 scales), so one ulp of the scaled value apart at most. Elements of
// an all-zero block, whose scale is 0, come out NaN; their codes are 0.
std::vector<double> scaled_reference(const QuantizedTensor& q, const float* reference);

// Quantize x ([rows, cols], row-major) with cfg, dequantize, and measure.
Measurement measure_quantization(const float* x, int64_t rows, int64_t cols, const QuantConfig& cfg);

}  // namespace nibble::analysis
