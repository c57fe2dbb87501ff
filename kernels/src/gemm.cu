// The bit-exact block-scaled GEMM, version 1 (the one copy; library and
// bench-kernels both call it through nibble/cuda/gemm.h, which also selects
// version 2, gemm_v2.cu: same arithmetic, cp.async multistage data movement).
// Reference: golden dot_rows / gemm.
//
// Per output (m, n) and per k-block beta in increasing k, golden computes
//   P = sum qa*qb (exact integer), s = fl(sa*sb), r = fl(P * 2^u * s), acc = fl(acc + r)
// with u = lsb_a + lsb_b. Here:
//   * codes are decoded to int8 in each format's own units (|q| <= 12) when a
//     stage is staged into shared memory (a 16-entry table per format, built on
//     the host from golden decode, applied with two byte-permutes per 4 codes);
//   * one INT8 mma.sync per (16x8 tile, k-block) gives P exactly: m16n8k32 for
//     32-wide blocks, m16n8k16 for 16-wide. Within a block the k order does not
//     matter (an exact integer sum), so each thread takes 8 (or 4) consecutive
//     k of a row for its fragment registers, the same k for A and B;
//   * the accumulator input of that mma is the integer bit pattern of
//     M = 1.5 * 2^(23+u), so the tensor core returns the bits of the float
//     M + P * 2^u (|P| < 2^13 keeps it in M's binade) and one exact subtraction
//     gives P * 2^u as a float: no int-to-float conversion;
//   * CUDA cores then do s = __fmul_rn(sa, sb), r = __fmul_rn(P2u, s),
//     acc = __fadd_rn(acc, r), block after block (FP32 and UE8M0 scales, and
//     mixed scale formats, whose products may round).
//
// With E4M3 scales on both operands (nvfp4) a second datapath removes the
// CUDA-core work: every scaled element q * s * 2^lsb has at most 8 significant
// bits and lies in [2^-11, 2688], so it is exact in FP16; staging writes these
// values to shared memory and FP16 mma.sync (FP32 accumulate, C = 0) sums one
// block. All products of a block are integer multiples of 2^u*sa*sb below
// 2^15 of them and the block sum stays below 2^21 of them, so no alignment step
// of the tensor core drops a bit: the mma returns r exactly, and the epilogue
// is acc = __fadd_rn(acc, r). (32-wide blocks chain two k16 mmas, the second
// adding to the first's exact partial sum.) The bit-exact tests check this on
// the device for every format pair.
//
// Tiling: CTA 128x128 outputs, 8 warps as 2 (M) x 4 (N), warp tile 64x32
// (4 x 4 mma tiles, 64 accumulators per thread); stages of 64 k, double
// buffered through registers: the next stage's codes (16 B per thread per
// operand) and scale codes are loaded from global memory before the current
// stage is computed, then decoded into the other shared-memory buffer.
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <stdexcept>
#include <string>

#include "nibble/cuda/check.h"
#include "nibble/cuda/gemm.h"
#include "nibble/cuda/gemm_v2_layout.h"
#include "nibble/cuda/quant_math.h"
#include "gemm_mma.cuh"
#include "gemm_stage.cuh"
#include "gemm_v2.h"
#include "gemm_v3.h"

namespace nibble::cuda {
namespace {

using detail::Args;
using detail::mma_f16;
using detail::mma_k16;
using detail::mma_k32;
using detail::Operand;
using detail::store_outputs;
using detail::units_to_scaled_half;

constexpr int kBM = 128;
constexpr int kBN = 128;
constexpr int kBK = 64;
constexpr int kThreads = 256;

template <int kStep>
struct Tiling {
  static constexpr int kBlocksPerStage = kBK / kStep;
  // Row stride of a decoded stage (64 int8 + padding): the fragment loads
  // (4 B for k16, 8 B for k32) of 8 rows x 4 threads hit 32 distinct banks.
  static constexpr int kRowBytes = kStep == 16 ? 80 : 96;
  static constexpr int kCodeBytes = (kBM + kBN) * kRowBytes;
  static constexpr int kScaleFloats = (kBM + kBN) * kBlocksPerStage;
  static constexpr int kStageBytes = kCodeBytes + kScaleFloats * 4;
  static constexpr int kSmemBytes = 2 * kStageBytes;
  static constexpr int kScalesPerThread = kBM * kBlocksPerStage / kThreads;
};

// Four codes (the nibbles of w, element i in nibble i) -> four int8 units.
__device__ __forceinline__ uint32_t decode4(uint32_t w, const uint32_t (&lut)[4]) { return v2::decode_codes4(w, lut); }

struct StageRegs {
  uint4 a_raw;
  uint4 b_raw;
};

template <int kStep>
struct ScaleRegs {
  uint32_t a[Tiling<kStep>::kScalesPerThread];
  uint32_t b[Tiling<kStep>::kScalesPerThread];
};

__device__ __forceinline__ uint4 load_codes(const Operand& o, int64_t row, int64_t byte_offset) {
  if (row >= o.rows || byte_offset >= o.codes_ld) return make_uint4(0u, 0u, 0u, 0u);
  return *reinterpret_cast<const uint4*>(o.codes + row * o.codes_ld + byte_offset);
}

__device__ __forceinline__ uint32_t load_scale_code(const Operand& o, int64_t row, int64_t k, int64_t k_total) {
  if (row >= o.rows || k >= k_total) return 0u;
  const int64_t idx = (row >> o.block_rows_log2) * o.scales_ld + (k >> o.block_cols_log2);
  return o.scale_bytes == 4 ? reinterpret_cast<const uint32_t*>(o.scales)[idx] : o.scales[idx];
}

template <int kStep>
__device__ __forceinline__ void load_stage(const Args& g, int64_t m0, int64_t n0, int64_t k0, StageRegs& r,
                                           ScaleRegs<kStep>& s) {
  using T = Tiling<kStep>;
  const int row = static_cast<int>(threadIdx.x) / 2;
  const int64_t byte_offset = k0 / 2 + (threadIdx.x % 2) * 16;
  r.a_raw = load_codes(g.a, m0 + row, byte_offset);
  r.b_raw = load_codes(g.b, n0 + row, byte_offset);
#pragma unroll
  for (int i = 0; i < T::kScalesPerThread; ++i) {
    const int item = static_cast<int>(threadIdx.x) + i * kThreads;
    const int srow = item / T::kBlocksPerStage;
    const int64_t k = k0 + (item % T::kBlocksPerStage) * kStep;
    s.a[i] = load_scale_code(g.a, m0 + srow, k, g.k);
    s.b[i] = load_scale_code(g.b, n0 + srow, k, g.k);
  }
}

template <int kStep>
__device__ __forceinline__ void store_stage(const Args& g, uint8_t* stage, const StageRegs& r,
                                            const ScaleRegs<kStep>& s) {
  using T = Tiling<kStep>;
  const int row = static_cast<int>(threadIdx.x) / 2;
  const int col = (static_cast<int>(threadIdx.x) % 2) * 32;
  const uint32_t a_words[4] = {r.a_raw.x, r.a_raw.y, r.a_raw.z, r.a_raw.w};
  const uint32_t b_words[4] = {r.b_raw.x, r.b_raw.y, r.b_raw.z, r.b_raw.w};
  uint32_t a_dec[8], b_dec[8];
#pragma unroll
  for (int j = 0; j < 8; ++j) {
    a_dec[j] = decode4(a_words[j / 2] >> (16 * (j % 2)), g.a.lut);
    b_dec[j] = decode4(b_words[j / 2] >> (16 * (j % 2)), g.b.lut);
  }
  uint8_t* a_row = stage + row * T::kRowBytes + col;
  uint8_t* b_row = stage + (kBM + row) * T::kRowBytes + col;
  reinterpret_cast<uint4*>(a_row)[0] = make_uint4(a_dec[0], a_dec[1], a_dec[2], a_dec[3]);
  reinterpret_cast<uint4*>(a_row)[1] = make_uint4(a_dec[4], a_dec[5], a_dec[6], a_dec[7]);
  reinterpret_cast<uint4*>(b_row)[0] = make_uint4(b_dec[0], b_dec[1], b_dec[2], b_dec[3]);
  reinterpret_cast<uint4*>(b_row)[1] = make_uint4(b_dec[4], b_dec[5], b_dec[6], b_dec[7]);
  float* scales = reinterpret_cast<float*>(stage + T::kCodeBytes);
#pragma unroll
  for (int i = 0; i < T::kScalesPerThread; ++i) {
    const int item = static_cast<int>(threadIdx.x) + i * kThreads;
    scales[item] = math::decode_scale_code(g.a.scale_format, s.a[i]);
    scales[kBM * T::kBlocksPerStage + item] = math::decode_scale_code(g.b.scale_format, s.b[i]);
  }
}

// ---- the FP16 datapath (E4M3 scales on both operands) -------------------------------
// A decoded stage: 64 k of FP16 values per row (128 B) + 32 B padding, so the
// 8-byte fragment loads of 8 rows x 4 threads hit distinct banks.
constexpr int kHalfRowBytes = 160;
constexpr int kHalfStageBytes = (kBM + kBN) * kHalfRowBytes;
constexpr int kHalfSmemBytes = 2 * kHalfStageBytes;

struct HalfScaleRegs {
  uint32_t a[2];  // scale codes of the thread's two 16-element groups
  uint32_t b[2];
};

__device__ __forceinline__ void load_half_stage(const Args& g, int64_t m0, int64_t n0, int64_t k0,
                                                StageRegs& r, HalfScaleRegs& s) {
  const int row = static_cast<int>(threadIdx.x) / 2;
  const int64_t k = k0 + (threadIdx.x % 2) * 32;
  r.a_raw = load_codes(g.a, m0 + row, k / 2);
  r.b_raw = load_codes(g.b, n0 + row, k / 2);
#pragma unroll
  for (int i = 0; i < 2; ++i) {
    s.a[i] = load_scale_code(g.a, m0 + row, k + 16 * i, g.k);
    s.b[i] = load_scale_code(g.b, n0 + row, k + 16 * i, g.k);
  }
}

__device__ __forceinline__ void store_half_operand(const Operand& o, float unit, uint8_t* row_ptr, uint4 raw,
                                                   const uint32_t (&codes)[2]) {
  const uint32_t words[4] = {raw.x, raw.y, raw.z, raw.w};
#pragma unroll
  for (int grp = 0; grp < 2; ++grp) {
    // dec(s) * 2^lsb: an E4M3 value times a power of two in [2^-2, 1], exact in FP16.
    const float sf = __fmul_rn(math::decode_scale_code(ScaleFormat::kE4M3, codes[grp]), unit);
    const __half2 scale = __float2half2_rn(sf);
    uint32_t out[8];
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const uint32_t units4 = decode4(words[2 * grp + j / 2] >> (16 * (j % 2)), o.lut);
      units_to_scaled_half(units4, scale, out[2 * j], out[2 * j + 1]);
    }
    reinterpret_cast<uint4*>(row_ptr + grp * 32)[0] = make_uint4(out[0], out[1], out[2], out[3]);
    reinterpret_cast<uint4*>(row_ptr + grp * 32)[1] = make_uint4(out[4], out[5], out[6], out[7]);
  }
}

__device__ __forceinline__ void store_half_stage(const Args& g, uint8_t* stage, const StageRegs& r,
                                                 const HalfScaleRegs& s) {
  const int row = static_cast<int>(threadIdx.x) / 2;
  const int col = (static_cast<int>(threadIdx.x) % 2) * 64;
  store_half_operand(g.a, g.a.unit, stage + row * kHalfRowBytes + col, r.a_raw, s.a);
  store_half_operand(g.b, g.b.unit, stage + (kBM + row) * kHalfRowBytes + col, r.b_raw, s.b);
}

// kStep: the k-block length (16 or 32); a 32-wide block is two chained k16 mmas.
template <int kStep>
__global__ void __launch_bounds__(kThreads, 1) e4m3_scaled_gemm_kernel(const Args g) {
  extern __shared__ __align__(16) uint8_t smem[];
  const int warp = static_cast<int>(threadIdx.x) / 32;
  const int lane = static_cast<int>(threadIdx.x) % 32;
  const int group = lane / 4;
  const int quad = lane % 4;
  const int warp_m = (warp / 4) * 64;
  const int warp_n = (warp % 4) * 32;
  const int64_t m0 = static_cast<int64_t>(blockIdx.y) * kBM;
  const int64_t n0 = static_cast<int64_t>(blockIdx.x) * kBN;
  constexpr int kBlocksPerStage = kBK / kStep;
  constexpr int kChunks = kStep / 16;

  float acc[4][4][4];
#pragma unroll
  for (int mi = 0; mi < 4; ++mi)
#pragma unroll
    for (int ni = 0; ni < 4; ++ni)
#pragma unroll
      for (int e = 0; e < 4; ++e) acc[mi][ni][e] = 0.0f;

  const int64_t stages = (g.k + kBK - 1) / kBK;
  StageRegs regs;
  HalfScaleRegs sregs;
  load_half_stage(g, m0, n0, 0, regs, sregs);
  store_half_stage(g, smem, regs, sregs);
  __syncthreads();

  for (int64_t st = 0; st < stages; ++st) {
    const uint8_t* stage = smem + (st % 2) * kHalfStageBytes;
    const bool more = st + 1 < stages;
    if (more) load_half_stage(g, m0, n0, (st + 1) * kBK, regs, sregs);
#pragma unroll
    for (int bi = 0; bi < kBlocksPerStage; ++bi) {
      if (st * kBlocksPerStage + bi >= g.k_blocks) break;
      uint32_t af[kChunks][4][4], bf[kChunks][4][2];
#pragma unroll
      for (int ch = 0; ch < kChunks; ++ch) {
        const int byte0 = (bi * kChunks + ch) * 32 + 8 * quad;  // 16 k of FP16 = 32 B per row
#pragma unroll
        for (int mi = 0; mi < 4; ++mi) {
          const int r = warp_m + mi * 16 + group;
          const uint2 l = *reinterpret_cast<const uint2*>(stage + r * kHalfRowBytes + byte0);
          const uint2 h = *reinterpret_cast<const uint2*>(stage + (r + 8) * kHalfRowBytes + byte0);
          af[ch][mi][0] = l.x;
          af[ch][mi][1] = h.x;
          af[ch][mi][2] = l.y;
          af[ch][mi][3] = h.y;
        }
#pragma unroll
        for (int ni = 0; ni < 4; ++ni) {
          const int n = warp_n + ni * 8 + group;
          const uint2 v = *reinterpret_cast<const uint2*>(stage + (kBM + n) * kHalfRowBytes + byte0);
          bf[ch][ni][0] = v.x;
          bf[ch][ni][1] = v.y;
        }
      }
#pragma unroll
      for (int mi = 0; mi < 4; ++mi) {
#pragma unroll
        for (int ni = 0; ni < 4; ++ni) {
          float r[4] = {0.0f, 0.0f, 0.0f, 0.0f};
#pragma unroll
          for (int ch = 0; ch < kChunks; ++ch) {
            const float partial[4] = {r[0], r[1], r[2], r[3]};
            mma_f16(r, af[ch][mi], bf[ch][ni], partial);  // C = 0, then the exact partial sum
          }
#pragma unroll
          for (int e = 0; e < 4; ++e) acc[mi][ni][e] = __fadd_rn(acc[mi][ni][e], r[e]);
        }
      }
    }
    if (more) store_half_stage(g, smem + ((st + 1) % 2) * kHalfStageBytes, regs, sregs);
    __syncthreads();
  }
  store_outputs(g, acc, m0 + warp_m, n0 + warp_n, group, quad);
}

template <int kStep>
__global__ void __launch_bounds__(kThreads, 1) block_scaled_gemm_kernel(const Args g) {
  using T = Tiling<kStep>;
  extern __shared__ __align__(16) uint8_t smem[];
  const int warp = static_cast<int>(threadIdx.x) / 32;
  const int lane = static_cast<int>(threadIdx.x) % 32;
  const int group = lane / 4;   // mma groupID
  const int quad = lane % 4;    // mma threadID_in_group
  const int warp_m = (warp / 4) * 64;
  const int warp_n = (warp % 4) * 32;
  const int64_t m0 = static_cast<int64_t>(blockIdx.y) * kBM;
  const int64_t n0 = static_cast<int64_t>(blockIdx.x) * kBN;

  float acc[4][4][4];
#pragma unroll
  for (int mi = 0; mi < 4; ++mi)
#pragma unroll
    for (int ni = 0; ni < 4; ++ni)
#pragma unroll
      for (int e = 0; e < 4; ++e) acc[mi][ni][e] = 0.0f;

  const int64_t stages = (g.k + kBK - 1) / kBK;
  StageRegs regs;
  ScaleRegs<kStep> sregs;
  load_stage<kStep>(g, m0, n0, 0, regs, sregs);
  store_stage<kStep>(g, smem, regs, sregs);
  __syncthreads();

  for (int64_t st = 0; st < stages; ++st) {
    const uint8_t* stage = smem + (st % 2) * T::kStageBytes;
    const bool more = st + 1 < stages;
    if (more) load_stage<kStep>(g, m0, n0, (st + 1) * kBK, regs, sregs);

    const float* a_scales = reinterpret_cast<const float*>(stage + T::kCodeBytes);
    const float* b_scales = a_scales + kBM * T::kBlocksPerStage;
#pragma unroll
    for (int bi = 0; bi < T::kBlocksPerStage; ++bi) {
      if (st * T::kBlocksPerStage + bi >= g.k_blocks) break;
      uint32_t af[4][4], bf[4][2];
      float sa[4][2], sb[4][2];
#pragma unroll
      for (int mi = 0; mi < 4; ++mi) {
        const int r = warp_m + mi * 16 + group;
        const uint8_t* lo = stage + r * T::kRowBytes;
        const uint8_t* hi = stage + (r + 8) * T::kRowBytes;
        if constexpr (kStep == 32) {
          const uint2 l = *reinterpret_cast<const uint2*>(lo + bi * 32 + 8 * quad);
          const uint2 h = *reinterpret_cast<const uint2*>(hi + bi * 32 + 8 * quad);
          af[mi][0] = l.x;
          af[mi][1] = h.x;
          af[mi][2] = l.y;
          af[mi][3] = h.y;
        } else {
          af[mi][0] = *reinterpret_cast<const uint32_t*>(lo + bi * 16 + 4 * quad);
          af[mi][1] = *reinterpret_cast<const uint32_t*>(hi + bi * 16 + 4 * quad);
          af[mi][2] = 0u;
          af[mi][3] = 0u;
        }
        sa[mi][0] = a_scales[r * T::kBlocksPerStage + bi];
        sa[mi][1] = a_scales[(r + 8) * T::kBlocksPerStage + bi];
      }
#pragma unroll
      for (int ni = 0; ni < 4; ++ni) {
        const int n = warp_n + ni * 8 + group;
        const uint8_t* row = stage + (kBM + n) * T::kRowBytes;
        if constexpr (kStep == 32) {
          const uint2 v = *reinterpret_cast<const uint2*>(row + bi * 32 + 8 * quad);
          bf[ni][0] = v.x;
          bf[ni][1] = v.y;
        } else {
          bf[ni][0] = *reinterpret_cast<const uint32_t*>(row + bi * 16 + 4 * quad);
          bf[ni][1] = 0u;
        }
        const int col = warp_n + ni * 8 + 2 * quad;
        sb[ni][0] = b_scales[col * T::kBlocksPerStage + bi];
        sb[ni][1] = b_scales[(col + 1) * T::kBlocksPerStage + bi];
      }
#pragma unroll
      for (int mi = 0; mi < 4; ++mi) {
#pragma unroll
        for (int ni = 0; ni < 4; ++ni) {
          uint32_t d[4];
          if constexpr (kStep == 32) {
            mma_k32(d, af[mi], bf[ni], g.magic);
          } else {
            mma_k16(d, af[mi], bf[ni], g.magic);
          }
#pragma unroll
          for (int e = 0; e < 4; ++e) {
            const float p_scaled = __fsub_rn(__uint_as_float(d[e]), g.magic_value);  // P * 2^u, exact
            const float s = __fmul_rn(sa[mi][e / 2], sb[ni][e % 2]);
            acc[mi][ni][e] = __fadd_rn(acc[mi][ni][e], __fmul_rn(p_scaled, s));
          }
        }
      }
    }
    if (more) store_stage<kStep>(g, smem + ((st + 1) % 2) * T::kStageBytes, regs, sregs);
    __syncthreads();
  }

  store_outputs(g, acc, m0 + warp_m, n0 + warp_n, group, quad);
}

template <int kStep>
void launch_int8(const Args& g, int64_t m, int64_t n, cudaStream_t stream) {
  using T = Tiling<kStep>;
  auto* kernel = &block_scaled_gemm_kernel<kStep>;
  NIBBLE_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, T::kSmemBytes));
  const dim3 grid(static_cast<unsigned>((n + kBN - 1) / kBN), static_cast<unsigned>((m + kBM - 1) / kBM));
  if (grid.y > 65535u) throw std::invalid_argument("gemm: too many rows for one launch");
  kernel<<<grid, kThreads, T::kSmemBytes, stream>>>(g);
  NIBBLE_CUDA_CHECK_LAUNCH("block_scaled_gemm_kernel");
}

template <int kStep>
void launch_half(const Args& g, int64_t m, int64_t n, cudaStream_t stream) {
  auto* kernel = &e4m3_scaled_gemm_kernel<kStep>;
  NIBBLE_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, kHalfSmemBytes));
  const dim3 grid(static_cast<unsigned>((n + kBN - 1) / kBN), static_cast<unsigned>((m + kBM - 1) / kBM));
  if (grid.y > 65535u) throw std::invalid_argument("gemm: too many rows for one launch");
  kernel<<<grid, kThreads, kHalfSmemBytes, stream>>>(g);
  NIBBLE_CUDA_CHECK_LAUNCH("e4m3_scaled_gemm_kernel");
}

}  // namespace

const char* name(GemmKernel kernel) {
  switch (kernel) {
    case GemmKernel::kV1: return "v1";
    case GemmKernel::kV2: return "v2";
    case GemmKernel::kV3: return "v3";
  }
  return "?";
}

GemmKernel gemm_kernel_for(const DeviceQuantized& a, const DeviceQuantized& b, GemmKernel kernel) {
  return kernel == GemmKernel::kV3 && !detail::gemm_v3_runs(a, b) ? GemmKernel::kV2 : kernel;
}

const char* gemm_datapath(const DeviceQuantized& a, const DeviceQuantized& b, GemmKernel kernel, GemmTiles tiles) {
  const bool e4m3 = detail::e4m3_scales(a, b);
  if (gemm_kernel_for(a, b, kernel) == GemmKernel::kV3) {
    if (e4m3) return "FP16 wgmma";
    switch (detail::gemm_v3_ue8m0_path(a, b, tiles)) {
      case detail::Ue8m0Path::kFolded: return "FP16 wgmma, UE8M0 folded";
      case detail::Ue8m0Path::kFoldedA: return "FP16 wgmma, UE8M0 folded into A";
      case detail::Ue8m0Path::kFma: return "FP16 wgmma, scaled, FMA";
      case detail::Ue8m0Path::kRoundings: break;
    }
    return "FP16 wgmma, scaled";
  }
  return e4m3 ? "FP16 mma" : "INT8 mma";
}

const char* gemm_tile_shape(const DeviceQuantized& a, const DeviceQuantized& b, GemmKernel kernel, GemmTiles tiles) {
  if (gemm_kernel_for(a, b, kernel) != GemmKernel::kV3) return "128x128";
  switch (detail::gemm_v3_tiles(a, b, tiles)) {
    case GemmTiles::kHalf: return "128x64";
    case GemmTiles::kWide: return "64x128";
    case GemmTiles::kAuto:  // resolved: not returned
    case GemmTiles::kFull: break;
  }
  return "128x128";
}

namespace {

void run_gemm(const DeviceQuantized& a, const DeviceQuantized& b, const detail::OutputPtr& c, cudaStream_t stream,
              GemmKernel kernel, GemmTiles tiles) {
  if (a.cols != b.cols) {
    throw std::invalid_argument("gemm: contraction lengths differ (" + std::to_string(a.cols) + " vs " +
                                std::to_string(b.cols) + ")");
  }
  if (!(a.config.rht == b.config.rht) || (a.config.rht.enabled() && a.config.seed != b.config.seed)) {
    throw std::invalid_argument("gemm: operands must share the RHT size, bf16 option and seed");
  }
  switch (gemm_kernel_for(a, b, kernel)) {
    case GemmKernel::kV3: detail::gemm_v3(a, b, c, stream, tiles); return;
    case GemmKernel::kV2: detail::gemm_v2(a, b, c, stream); return;
    case GemmKernel::kV1: break;
  }
  const Args g = detail::args_of(a, b, c);
  const int step = detail::k_step(a, b);
  if (detail::e4m3_scales(a, b)) {
    step == 32 ? launch_half<32>(g, a.rows, b.rows, stream) : launch_half<16>(g, a.rows, b.rows, stream);
    return;
  }
  step == 32 ? launch_int8<32>(g, a.rows, b.rows, stream) : launch_int8<16>(g, a.rows, b.rows, stream);
}

}  // namespace

void gemm(const DeviceQuantized& a, const DeviceQuantized& b, float* c, cudaStream_t stream, GemmKernel kernel,
          GemmTiles tiles) {
  detail::OutputPtr out;
  out.f32 = c;
  run_gemm(a, b, out, stream, kernel, tiles);
}

void gemm_bf16(const DeviceQuantized& a, const DeviceQuantized& b, uint16_t* c, cudaStream_t stream,
               GemmKernel kernel, GemmTiles tiles) {
  detail::OutputPtr out;
  out.bf16 = c;
  run_gemm(a, b, out, stream, kernel, tiles);
}

std::vector<float> gemm_to_host(const DeviceQuantized& a, const DeviceQuantized& b, GemmKernel kernel,
                                GemmTiles tiles) {
  DeviceBuffer<float> c(static_cast<size_t>(a.rows * b.rows));
  gemm(a, b, c.data(), nullptr, kernel, tiles);
  return c.download();
}

}  // namespace nibble::cuda
