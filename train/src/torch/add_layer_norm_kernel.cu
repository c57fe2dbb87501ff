// The fused residual add and LayerNorm (add_layer_norm_kernel.h). Unfused, the
// step reads and writes the FP32 residual stream three times per LayerNorm
// (the add, the norm, the BF16 cast); here once: one warp per row, the row in
// registers, mean and variance by two passes over them (no Welford: the row is
// already held), warp shuffles for the sums.
#include <cuda_bf16.h>

#include <stdexcept>
#include <string>

#include "add_layer_norm_kernel.h"

namespace nibble::train {
namespace {

constexpr int kWarps = 8;  // rows per CTA
constexpr int kMaxPerLane = kAddLayerNormMaxWidth / 32;

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xFFFFFFFFu, v, o);
  return v;
}

__global__ void __launch_bounds__(32 * kWarps) add_layer_norm_kernel(const float* __restrict__ h,
                                                                     const __nv_bfloat16* __restrict__ y,
                                                                     const float* __restrict__ w,
                                                                     const float* __restrict__ b,
                                                                     float* __restrict__ h_out,
                                                                     __nv_bfloat16* __restrict__ x,
                                                                     float* __restrict__ mean_out,
                                                                     float* __restrict__ rstd_out, int64_t rows,
                                                                     int d, float eps) {
  const int lane = static_cast<int>(threadIdx.x % 32);
  const int64_t row = static_cast<int64_t>(blockIdx.x) * kWarps + threadIdx.x / 32;
  if (row >= rows) return;
  const int per_lane = d / 32;
  const int64_t base = row * d;
  float v[kMaxPerLane];
  float sum = 0.0f;
#pragma unroll
  for (int i = 0; i < kMaxPerLane; ++i) {
    if (i < per_lane) {
      const int64_t at = base + 32 * i + lane;
      v[i] = __fadd_rn(h[at], __bfloat162float(y[at]));
      h_out[at] = v[i];
      sum += v[i];
    }
  }
  const float mean = __fdiv_rn(warp_sum(sum), static_cast<float>(d));
  float sq = 0.0f;
#pragma unroll
  for (int i = 0; i < kMaxPerLane; ++i) {
    if (i < per_lane) {
      const float c = v[i] - mean;
      sq += c * c;
    }
  }
  const float rstd = rsqrtf(__fdiv_rn(warp_sum(sq), static_cast<float>(d)) + eps);
#pragma unroll
  for (int i = 0; i < kMaxPerLane; ++i) {
    if (i < per_lane) {
      const int col = 32 * i + lane;
      x[base + col] = __float2bfloat16_rn((v[i] - mean) * rstd * w[col] + b[col]);
    }
  }
  if (lane == 0) {
    mean_out[row] = mean;
    rstd_out[row] = rstd;
  }
}

}  // namespace

void add_layer_norm_bf16(const float* h, const uint16_t* y, const float* w, const float* b, float* h_out,
                         uint16_t* x, float* mean, float* rstd, int64_t rows, int d, float eps,
                         cudaStream_t stream) {
  if (!add_layer_norm_width_ok(d)) throw std::invalid_argument("add_layer_norm_bf16: width " + std::to_string(d));
  if (rows == 0) return;
  const int64_t blocks = (rows + kWarps - 1) / kWarps;
  add_layer_norm_kernel<<<static_cast<unsigned>(blocks), 32 * kWarps, 0, stream>>>(
      h, reinterpret_cast<const __nv_bfloat16*>(y), w, b, h_out, reinterpret_cast<__nv_bfloat16*>(x), mean, rstd,
      rows, d, eps);
  const cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess) throw std::runtime_error(std::string("add_layer_norm_bf16: ") + cudaGetErrorString(e));
}

}  // namespace nibble::train
