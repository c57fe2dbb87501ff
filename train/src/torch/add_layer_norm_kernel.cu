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

// The backward of add_layer_norm_kernel, as three kernels: the rows
// (dh and dy), the columns (the CTAs' partial sums of the gamma and beta
// gradients over their chunks of rows) and the sum of the partials. Each
// row kernel warp holds one row, as the forward does, and no accumulator, so
// that many rows are in flight; the gamma/beta sums read the rows again, by
// columns, and add in a fixed order (no atomics: the same bits every run).
//
// Rows: with xhat = (h_out - mean) rstd and a = gx w,
//   dh = gh + rstd (a - mean(a) - xhat mean(a xhat)),  dy = BF16(dh).
// kPer: values per lane in registers (d / 32 at most kPer); kGh: whether h_out
// has a gradient. The loads of a lane's kPer values are unconditional (a
// value past d re-reads the lane's first column and is then dropped), so that
// they are all in flight at once: loads under the per-value test of d / 32
// went out one after another.
template <int kPer, bool kGh>
__global__ void __launch_bounds__(32 * kWarps) add_layer_norm_backward_rows_kernel(
    const __nv_bfloat16* __restrict__ gx, const float* __restrict__ gh, const float* __restrict__ h_out,
    const float* __restrict__ mean_in, const float* __restrict__ rstd_in, const float* __restrict__ w,
    float* __restrict__ dh, __nv_bfloat16* __restrict__ dy, int64_t rows, int d) {
  const int lane = static_cast<int>(threadIdx.x % 32);
  const int64_t row = static_cast<int64_t>(blockIdx.x) * kWarps + threadIdx.x / 32;
  if (row >= rows) return;
  const int per_lane = d / 32;
  const int64_t base = row * d;
  const float mean = mean_in[row], rstd = rstd_in[row];
  float a[kPer], xh[kPer];
  float s1 = 0.0f, s2 = 0.0f;
#pragma unroll
  for (int i = 0; i < kPer; ++i) {
    const bool live = i < per_lane;
    const int col = 32 * (live ? i : 0) + lane;
    const float x = (h_out[base + col] - mean) * rstd;
    const float g = __bfloat162float(gx[base + col]) * w[col];
    xh[i] = live ? x : 0.0f;
    a[i] = live ? g : 0.0f;
    s1 += a[i];
    s2 += a[i] * xh[i];
  }
  const float inv_d = 1.0f / static_cast<float>(d);
  const float m1 = warp_sum(s1) * inv_d, m2 = warp_sum(s2) * inv_d;
  float v[kPer];
#pragma unroll
  for (int i = 0; i < kPer; ++i) {
    v[i] = (a[i] - m1 - xh[i] * m2) * rstd;
    if constexpr (kGh) v[i] += gh[base + 32 * (i < per_lane ? i : 0) + lane];
  }
#pragma unroll
  for (int i = 0; i < kPer; ++i) {
    if (i < per_lane) {
      const int col = 32 * i + lane;
      dh[base + col] = v[i];
      dy[base + col] = __float2bfloat16_rn(v[i]);
    }
  }
}

// The rows kernel for width d: a few widths compiled, so that registers stay
// few (d = 768: three CTAs on an SM). The forward keeps one kernel for every
// width: it measured faster so, with its loads under the per-value test,
// than with them unconditional (more registers, fewer CTAs).
using RowsKernel = void (*)(const __nv_bfloat16*, const float*, const float*, const float*, const float*,
                            const float*, float*, __nv_bfloat16*, int64_t, int);
template <bool kGh>
RowsKernel rows_kernel(int d) {
  if (d <= 256) return add_layer_norm_backward_rows_kernel<8, kGh>;
  if (d <= 512) return add_layer_norm_backward_rows_kernel<16, kGh>;
  if (d <= 768) return add_layer_norm_backward_rows_kernel<24, kGh>;
  return add_layer_norm_backward_rows_kernel<kMaxPerLane, kGh>;
}

// Columns: CTA (x, y) sums gx xhat and gx over rows y kChunkRows ..
// (y + 1) kChunkRows - 1 for columns x kColTile .. + kColTile - 1, thread
// (ty, tx) four consecutive columns of every kRowLanes-th row, the row lanes
// then added in order: partial row y holds the chunk's gamma sums, then its
// beta sums (2 d floats).
constexpr int kColTile = 64;
constexpr int kColLanes = kColTile / 4;
constexpr int kRowLanes = 32 * kWarps / kColLanes;
constexpr int kChunkRows = 256;
__global__ void __launch_bounds__(32 * kWarps) add_layer_norm_backward_columns_kernel(
    const __nv_bfloat16* __restrict__ gx, const float* __restrict__ h_out, const float* __restrict__ mean_in,
    const float* __restrict__ rstd_in, float* __restrict__ partial, int64_t rows, int d) {
  __shared__ float4 red[2][kRowLanes][kColLanes];
  const int tx = static_cast<int>(threadIdx.x % kColLanes), ty = static_cast<int>(threadIdx.x / kColLanes);
  const int col = static_cast<int>(blockIdx.x) * kColTile + 4 * tx;
  const int64_t r0 = static_cast<int64_t>(blockIdx.y) * kChunkRows;
  const int64_t r1 = r0 + kChunkRows < rows ? r0 + kChunkRows : rows;
  float4 sw = make_float4(0.0f, 0.0f, 0.0f, 0.0f), sb = sw;
  if (col < d) {
#pragma unroll 4
    for (int64_t r = r0 + ty; r < r1; r += kRowLanes) {
      const float mean = mean_in[r], rstd = rstd_in[r];
      const float4 h = *reinterpret_cast<const float4*>(h_out + r * d + col);
      const uint2 gb = *reinterpret_cast<const uint2*>(gx + r * d + col);
      const float2 g01 = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(&gb.x));
      const float2 g23 = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(&gb.y));
      sw.x += g01.x * ((h.x - mean) * rstd);
      sw.y += g01.y * ((h.y - mean) * rstd);
      sw.z += g23.x * ((h.z - mean) * rstd);
      sw.w += g23.y * ((h.w - mean) * rstd);
      sb.x += g01.x;
      sb.y += g01.y;
      sb.z += g23.x;
      sb.w += g23.y;
    }
  }
  red[0][ty][tx] = sw;
  red[1][ty][tx] = sb;
  __syncthreads();
  if (ty < 2 && col < d) {
    float4 s = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
#pragma unroll
    for (int k = 0; k < kRowLanes; ++k) {
      const float4 v = red[ty][k][tx];
      s.x += v.x;
      s.y += v.y;
      s.z += v.z;
      s.w += v.w;
    }
    *reinterpret_cast<float4*>(partial + static_cast<int64_t>(blockIdx.y) * 2 * d + ty * d + col) = s;
  }
}

// dw and db: thread c of 2 d adds column c of the chunks' partial rows in chunk order.
__global__ void add_layer_norm_backward_sum_kernel(const float* __restrict__ partial, int64_t chunks, int d,
                                                   float* __restrict__ dw, float* __restrict__ db) {
  const int c = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (c >= 2 * d) return;
  float s = 0.0f;
#pragma unroll 8
  for (int64_t k = 0; k < chunks; ++k) s += partial[k * 2 * d + c];
  (c < d ? dw[c] : db[c - d]) = s;
}

void check_launch(const char* name) {
  const cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess) throw std::runtime_error(std::string(name) + ": " + cudaGetErrorString(e));
}

}  // namespace

int64_t add_layer_norm_backward_partial_floats(int64_t rows, int d) {
  return (rows + kChunkRows - 1) / kChunkRows * 2 * d;
}

void add_layer_norm_backward_bf16(const uint16_t* gx, const float* gh, const float* h_out, const float* mean,
                                  const float* rstd, const float* w, float* dh, uint16_t* dy, float* dw, float* db,
                                  float* partial, int64_t rows, int d, cudaStream_t stream) {
  if (!add_layer_norm_width_ok(d)) {
    throw std::invalid_argument("add_layer_norm_backward_bf16: width " + std::to_string(d));
  }
  if (reinterpret_cast<uintptr_t>(gx) % 16 != 0 || reinterpret_cast<uintptr_t>(h_out) % 16 != 0) {
    throw std::invalid_argument("add_layer_norm_backward_bf16: gx and h_out must be 16-byte aligned");
  }
  const auto bf = [](const uint16_t* p) { return reinterpret_cast<const __nv_bfloat16*>(p); };
  const int64_t chunks = (rows + kChunkRows - 1) / kChunkRows;
  if (rows > 0) {
    const RowsKernel kernel = gh != nullptr ? rows_kernel<true>(d) : rows_kernel<false>(d);
    kernel<<<static_cast<unsigned>((rows + kWarps - 1) / kWarps), 32 * kWarps, 0, stream>>>(
        bf(gx), gh, h_out, mean, rstd, w, dh, reinterpret_cast<__nv_bfloat16*>(dy), rows, d);
    check_launch("add_layer_norm_backward_bf16 (rows)");
    const dim3 grid(static_cast<unsigned>((d + kColTile - 1) / kColTile), static_cast<unsigned>(chunks));
    add_layer_norm_backward_columns_kernel<<<grid, 32 * kWarps, 0, stream>>>(bf(gx), h_out, mean, rstd, partial, rows,
                                                                            d);
    check_launch("add_layer_norm_backward_bf16 (columns)");
  }
  constexpr int kSumThreads = 128;
  add_layer_norm_backward_sum_kernel<<<static_cast<unsigned>((2 * d + kSumThreads - 1) / kSumThreads), kSumThreads, 0,
                                       stream>>>(partial, chunks, d, dw, db);
  check_launch("add_layer_norm_backward_bf16 (sums)");
}

void add_layer_norm_bf16(const float* h, const uint16_t* y, const float* w, const float* b, float* h_out,
                         uint16_t* x, float* mean, float* rstd, int64_t rows, int d, float eps,
                         cudaStream_t stream) {
  if (!add_layer_norm_width_ok(d)) throw std::invalid_argument("add_layer_norm_bf16: width " + std::to_string(d));
  if (rows == 0) return;
  const int64_t blocks = (rows + kWarps - 1) / kWarps;
  add_layer_norm_kernel<<<static_cast<unsigned>(blocks), 32 * kWarps, 0, stream>>>(
      h, reinterpret_cast<const __nv_bfloat16*>(y), w, b, h_out, reinterpret_cast<__nv_bfloat16*>(x), mean, rstd,
      rows, d, eps);
  check_launch("add_layer_norm_bf16");
}

}  // namespace nibble::train
