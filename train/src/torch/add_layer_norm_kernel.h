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

// Its backward: from gx (x's gradient, BF16), gh (h_out's, FP32; null where
// h_out has none), h_out and the forward's mean and rstd, dh = gh + the
// LayerNorm's input gradient (h's gradient, FP32), dy = dh rounded to BF16
// (y's), and the gradients of w and b (d floats each). Two passes over the
// rows (by rows for dh and dy, by columns for the gamma/beta sums) in place
// of ATen's five; gx and h_out 16-byte aligned. The gamma/beta sums go
// through `partial`, add_layer_norm_backward_partial_floats floats of
// scratch, and are added in a fixed order: the same bits every run.
int64_t add_layer_norm_backward_partial_floats(int64_t rows, int d);
void add_layer_norm_backward_bf16(const uint16_t* gx, const float* gh, const float* h_out, const float* mean,
                                  const float* rstd, const float* w, float* dh, uint16_t* dy, float* dw, float* db,
                                  float* partial, int64_t rows, int d, cudaStream_t stream);

}  // namespace nibble::train
