// The residual add and LayerNorm of a transformer block in one pass over the
// rows (internal to the training harness; no torch here, so that nvcc never
// reads libtorch's headers): h_out = h + float(y), x = LayerNorm(h_out) * w + b
// rounded to BF16, and each row's mean and 1 / sqrt(var + eps) for the
// backward. Rows of d FP32 (h, h_out, w, b) and BF16 (y, x: uint16_t bits)
// values, contiguous.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace nibble::train {

// Widths the kernel takes: a multiple of 32, at most kAddLayerNormMaxWidth.
inline constexpr int kAddLayerNormMaxWidth = 1024;
inline bool add_layer_norm_width_ok(int64_t d) { return d > 0 && d % 32 == 0 && d <= kAddLayerNormMaxWidth; }

void add_layer_norm_bf16(const float* h, const uint16_t* y, const float* w, const float* b, float* h_out,
                         uint16_t* x, float* mean, float* rstd, int64_t rows, int d, float eps,
                         cudaStream_t stream);

}  // namespace nibble::train
