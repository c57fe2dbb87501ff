// The mma.sync GEMM: the bit-exact block-scaled GEMM on warp-level mma.sync, its operands
// staged raw in shared memory by a cp.async pipeline and decoded in registers
// at the mma. Reference: golden dot_rows / gemm.
//
// Per output (m, n) and per k-block beta in increasing k, golden computes
//   P = sum qa*qb (exact integer), s = fl(sa*sb), r = fl(P * 2^u * s), acc = fl(acc + r)
// with u = lsb_a + lsb_b. Here (the INT8 path):
//   * codes are decoded to int8 in each format's own units (|q| <= 12) (a
//     16-entry table per format, built on the host from golden decode, applied
//     with two byte-permutes per 4 codes);
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
// With E4M3 scales on both operands (nvfp4) the FP16 path removes the
// CUDA-core work: every scaled element q * s * 2^lsb has at most 8 significant
// bits and lies in [2^-11, 2688], so it is exact in FP16; the decode turns the
// codes into these values and FP16 mma.sync (FP32 accumulate, C = 0) sums one
// block. All products of a block are integer multiples of 2^u*sa*sb below
// 2^15 of them and the block sum stays below 2^21 of them, so no alignment step
// of the tensor core drops a bit: the mma returns r exactly, and the epilogue
// is acc = __fadd_rn(acc, r). (32-wide blocks chain two k16 mmas, the second
// adding to the first's exact partial sum.) The bit-exact tests check this on
// the device for every format pair.
//
// Data movement (layout and index math in nibble/cuda/detail/gemm_mma_sync_layout.h,
// checked on the host by gemm_layout_test):
//   * a 3-stage cp.async pipeline of 128 k per stage: raw packed codes (64 B
//     per row per stage, 16-byte copies, zero-filled past the last row / past
//     codes_ld) and raw scale codes
//     (the row's 4..32 B window of its scale row: one 4/8/16-byte copy or two
//     16-byte copies). Nothing is decoded on the way in, so a stage is 4x
//     smaller than one decoded to int8 (8x than one decoded to FP16).
//   * codes are decoded in registers right before the mma (two byte-permutes
//     per 4 codes; for E4M3 x E4M3, then to scaled FP16); scale codes
//     through a 256-entry decode table per operand built in shared memory at
//     kernel start (FP32 scales are read as bits).
//   * CTA 128 x 128, 4 warps of 64 x 64 (32 mma tiles, 128 accumulators per
//     thread), __launch_bounds__
//     (128, 2): 98 KiB shared memory and <= 255 registers let two CTAs share an SM.
//   * one __syncthreads per 128-k stage: wait for stage st, barrier (which also
//     proves every warp is done with the buffer of stage st - 1), issue the
//     copies of stage st + 2 into that buffer, compute stage st.
//
// Per output and k-block the epilogue is golden's, operation for operation
// and in increasing k: INT8 path P * 2^u = fl(d - M), s = fl(sa * sb),
// acc = fl(acc + fl(P * 2^u * s)); FP16 path acc = fl(acc + r).
//
// Traffic per CTA stage: 2 x 128 rows x 64 B of codes + 2 x 128 x (4..32) B of
// scales = 17..24 KiB for 128 x 128 x 128 MACs. At 8192^3 each operand (32 MiB
// of codes, 4 MiB of 1-byte or 16 MiB of FP32 1x16 scales) is read by 64 CTA
// rows/columns: 4.3 GB of codes + 0.5..2.1 GB of scales, mostly from L2
// (~1 ms at ~5 TB/s, overlapped with the ~4 ms of epilogue arithmetic of the
// 16-wide INT8 path; see docs/results/kernels.md#gemm-the-contracts-own-adds-take-as-long-as-cublass-whole-gemm).
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <stdexcept>

#include "gemm_mma.cuh"
#include "gemm_stage.cuh"
#include "gemm_mma_sync.h"
#include "nibble/cuda/check.h"
#include "nibble/cuda/detail/gemm_mma_sync_layout.h"
#include "nibble/cuda/quant_math.h"

namespace nibble::cuda::detail {
namespace {

using namespace mma_sync;  // tile constants and layout

// One k-block of the INT8 path: exact block sums on the tensor core, golden's
// three roundings on the CUDA cores.
template <int kStep>
__device__ __forceinline__ void int8_block(const Args& g, const uint8_t* stage, const uint32_t* lut_a,
                                           const uint32_t* lut_b, int bi, int warp_m, int warp_n, int group,
                                           int quad, float (&acc)[4][8][4]) {
  const int fb = int8_fragment_byte(kStep, bi, quad);
  const int col_a = scale_column(kStep, bi, g.a.block_cols_log2);
  const int col_b = scale_column(kStep, bi, g.b.block_cols_log2);
  uint32_t af[4][4];
  float sa[4][2];
#pragma unroll
  for (int mi = 0; mi < 4; ++mi) {
    const int r = warp_m + mi * 16 + group;
    if constexpr (kStep == 32) {
      const uint32_t lo = load_u32(stage + code_offset(0, r, fb));
      const uint32_t hi = load_u32(stage + code_offset(0, r + 8, fb));
      // [0], [1]: elements 8q..8q+3 (k slots 4q..4q+3); [2], [3]: elements 8q+4..8q+7 (k slots 16+4q..)
      mma_sync::decode_codes8(lo, g.a.lut, af[mi][0], af[mi][2]);
      mma_sync::decode_codes8(hi, g.a.lut, af[mi][1], af[mi][3]);
    } else {
      af[mi][0] = mma_sync::decode_codes4(load_u16(stage + code_offset(0, r, fb)), g.a.lut);
      af[mi][1] = mma_sync::decode_codes4(load_u16(stage + code_offset(0, r + 8, fb)), g.a.lut);
      af[mi][2] = 0u;
      af[mi][3] = 0u;
    }
    sa[mi][0] = __uint_as_float(scale_word(stage + scale_offset(0, r), col_a, g.a.scale_bytes, lut_a));
    sa[mi][1] = __uint_as_float(scale_word(stage + scale_offset(0, r + 8), col_a, g.a.scale_bytes, lut_a));
  }
#pragma unroll
  for (int ni = 0; ni < 8; ++ni) {
    const int n = warp_n + ni * 8 + group;
    uint32_t bf[2];
    if constexpr (kStep == 32) {
      const uint32_t w = load_u32(stage + code_offset(1, n, fb));
      mma_sync::decode_codes8(w, g.b.lut, bf[0], bf[1]);
    } else {
      bf[0] = mma_sync::decode_codes4(load_u16(stage + code_offset(1, n, fb)), g.b.lut);
      bf[1] = 0u;
    }
    const int col = warp_n + ni * 8 + 2 * quad;
    const float sb[2] = {
        __uint_as_float(scale_word(stage + scale_offset(1, col), col_b, g.b.scale_bytes, lut_b)),
        __uint_as_float(scale_word(stage + scale_offset(1, col + 1), col_b, g.b.scale_bytes, lut_b))};
#pragma unroll
    for (int mi = 0; mi < 4; ++mi) {
      uint32_t d[4];
      if constexpr (kStep == 32) {
        mma_k32(d, af[mi], bf, g.magic);
      } else {
        mma_k16(d, af[mi], bf, g.magic);
      }
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const float p_scaled = __fsub_rn(__uint_as_float(d[e]), g.magic_value);  // P * 2^u, exact
        const float s = __fmul_rn(sa[mi][e / 2], sb[e % 2]);
        acc[mi][ni][e] = __fadd_rn(acc[mi][ni][e], __fmul_rn(p_scaled, s));
      }
    }
  }
}

// One k-block of the FP16 path (E4M3 scales on both operands): codes become
// exact FP16 values q * s * 2^lsb in registers; the mma returns r exactly.
template <int kStep>
__device__ __forceinline__ void half_block(const Args& g, const uint8_t* stage, const uint32_t* lut_a,
                                           const uint32_t* lut_b, int bi, int warp_m, int warp_n, int group,
                                           int quad, float (&acc)[4][8][4]) {
  constexpr int kChunks = kStep / 16;
  const int col_a = scale_column(kStep, bi, g.a.block_cols_log2);
  const int col_b = scale_column(kStep, bi, g.b.block_cols_log2);
  uint32_t af[kChunks][4][4];
#pragma unroll
  for (int mi = 0; mi < 4; ++mi) {
    const int r = warp_m + mi * 16 + group;
    const uint32_t s_lo = lut_a[stage[scale_offset(0, r) + col_a]];
    const uint32_t s_hi = lut_a[stage[scale_offset(0, r + 8) + col_a]];
#pragma unroll
    for (int ch = 0; ch < kChunks; ++ch) {
      const int fb = half_fragment_byte(kStep, bi, ch, quad);
      // a0/a2: row g, k slots 2q,2q+1 / 2q+8,2q+9 = elements 4q,4q+1 / 4q+2,4q+3; a1/a3: row g+8.
      units_to_scaled_half(mma_sync::decode_codes4(load_u16(stage + code_offset(0, r, fb)), g.a.lut),
                           *reinterpret_cast<const __half2*>(&s_lo), af[ch][mi][0], af[ch][mi][2]);
      units_to_scaled_half(mma_sync::decode_codes4(load_u16(stage + code_offset(0, r + 8, fb)), g.a.lut),
                           *reinterpret_cast<const __half2*>(&s_hi), af[ch][mi][1], af[ch][mi][3]);
    }
  }
#pragma unroll
  for (int ni = 0; ni < 8; ++ni) {
    const int n = warp_n + ni * 8 + group;
    const uint32_t s_n = lut_b[stage[scale_offset(1, n) + col_b]];
    uint32_t bf[kChunks][2];
#pragma unroll
    for (int ch = 0; ch < kChunks; ++ch) {
      const int fb = half_fragment_byte(kStep, bi, ch, quad);
      units_to_scaled_half(mma_sync::decode_codes4(load_u16(stage + code_offset(1, n, fb)), g.b.lut),
                           *reinterpret_cast<const __half2*>(&s_n), bf[ch][0], bf[ch][1]);
    }
#pragma unroll
    for (int mi = 0; mi < 4; ++mi) {
      float r[4] = {0.0f, 0.0f, 0.0f, 0.0f};
#pragma unroll
      for (int ch = 0; ch < kChunks; ++ch) {
        const float partial[4] = {r[0], r[1], r[2], r[3]};
        mma_f16(r, af[ch][mi], bf[ch], partial);  // C = 0, then the exact partial sum
      }
#pragma unroll
      for (int e = 0; e < 4; ++e) acc[mi][ni][e] = __fadd_rn(acc[mi][ni][e], r[e]);
    }
  }
}

// kStep: the k-block length (16 or 32). kHalf: the FP16 datapath (E4M3 x E4M3).
template <int kStep, bool kHalf>
__global__ void __launch_bounds__(kThreads, 2) multistage_gemm_kernel(const Args g) {
  extern __shared__ __align__(16) uint8_t smem[];
  uint32_t* lut_a = reinterpret_cast<uint32_t*>(smem + kStages * kStageBytes);
  uint32_t* lut_b = lut_a + kLutEntries;
  const int tid = static_cast<int>(threadIdx.x);
  const int warp = tid / 32;
  const int lane = tid % 32;
  const int group = lane / 4;
  const int quad = lane % 4;
  const int warp_m = (warp / 2) * kWarpM;
  const int warp_n = (warp % 2) * kWarpN;
  const int64_t m0 = static_cast<int64_t>(blockIdx.y) * kBM;
  const int64_t n0 = static_cast<int64_t>(blockIdx.x) * kBN;
  constexpr int kBlocksPerStage = kBK / kStep;
  const int64_t stages = mma_sync::k_stages(g.k);

  // Prologue: the first kStages - 1 stages in flight (one commit group each,
  // empty past the end, so that group s always holds stage s).
#pragma unroll
  for (int s = 0; s < kStages - 1; ++s) {
    if (s < stages) load_stage<kThreads>(g, smem + s * kStageBytes, m0, n0, static_cast<int64_t>(s) * kBK);
    cp_async_commit();
  }

  // Scale decode tables (visible after the first barrier in the loop). The
  // FP16 path stores half2 of dec(s) * 2^lsb (exact: see the top of this file), the INT8
  // path the binary32 bits of dec(s). FP32 scales do not use them.
  for (int code = tid; code < kLutEntries; code += kThreads) {
    if constexpr (kHalf) {
      const __half2 ha = __float2half2_rn(__fmul_rn(math::decode_scale_code(ScaleFormat::kE4M3, static_cast<uint32_t>(code)), g.a.unit));
      const __half2 hb = __float2half2_rn(__fmul_rn(math::decode_scale_code(ScaleFormat::kE4M3, static_cast<uint32_t>(code)), g.b.unit));
      lut_a[code] = *reinterpret_cast<const uint32_t*>(&ha);
      lut_b[code] = *reinterpret_cast<const uint32_t*>(&hb);
    } else {
      lut_a[code] = __float_as_uint(math::decode_scale_code(g.a.scale_format, static_cast<uint32_t>(code)));
      lut_b[code] = __float_as_uint(math::decode_scale_code(g.b.scale_format, static_cast<uint32_t>(code)));
    }
  }

  float acc[4][8][4];
#pragma unroll
  for (int mi = 0; mi < 4; ++mi)
#pragma unroll
    for (int ni = 0; ni < 8; ++ni)
#pragma unroll
      for (int e = 0; e < 4; ++e) acc[mi][ni][e] = 0.0f;

  for (int64_t st = 0; st < stages; ++st) {
    cp_async_wait<kStages - 2>();  // this thread's copies of stage st have landed
    __syncthreads();               // everyone's have; everyone is done with stage st - 1's buffer
    const int64_t next = st + kStages - 1;
    if (next < stages) load_stage<kThreads>(g, smem + (next % kStages) * kStageBytes, m0, n0, next * kBK);
    cp_async_commit();

    const uint8_t* stage = smem + (st % kStages) * kStageBytes;
#pragma unroll 2
    for (int bi = 0; bi < kBlocksPerStage; ++bi) {
      if (st * kBlocksPerStage + bi >= g.k_blocks) break;
      if constexpr (kHalf) {
        half_block<kStep>(g, stage, lut_a, lut_b, bi, warp_m, warp_n, group, quad, acc);
      } else {
        int8_block<kStep>(g, stage, lut_a, lut_b, bi, warp_m, warp_n, group, quad, acc);
      }
    }
  }
  cp_async_wait<0>();
  store_outputs(g, acc, m0 + warp_m, n0 + warp_n, group, quad);
}

template <int kStep, bool kHalf>
void launch(const Args& g, int64_t m, int64_t n, cudaStream_t stream) {
  auto* kernel = &multistage_gemm_kernel<kStep, kHalf>;
  NIBBLE_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmemBytes));
  // Ask for the largest shared-memory carveout, so that two CTAs (2 x 99 KiB) fit.
  NIBBLE_CUDA_CHECK(
      cudaFuncSetAttribute(kernel, cudaFuncAttributePreferredSharedMemoryCarveout, cudaSharedmemCarveoutMaxShared));
  const dim3 grid(static_cast<unsigned>((n + kBN - 1) / kBN), static_cast<unsigned>((m + kBM - 1) / kBM));
  if (grid.y > 65535u) throw std::invalid_argument("gemm: too many rows for one launch");
  kernel<<<grid, kThreads, kSmemBytes, stream>>>(g);
  NIBBLE_CUDA_CHECK_LAUNCH("multistage_gemm_kernel");
}

}  // namespace

void gemm_mma_sync(const DeviceQuantized& a, const DeviceQuantized& b, const OutputPtr& c, cudaStream_t stream) {
  const Args g = args_of(a, b, c);
  const int step = k_step(a, b);
  if (e4m3_scales(a, b)) {
    step == 32 ? launch<32, true>(g, a.rows, b.rows, stream) : launch<16, true>(g, a.rows, b.rows, stream);
    return;
  }
  step == 32 ? launch<32, false>(g, a.rows, b.rows, stream) : launch<16, false>(g, a.rows, b.rows, stream);
}

}  // namespace nibble::cuda::detail
