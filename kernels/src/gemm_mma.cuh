// Device pieces the GEMM kernels share: the mma.sync wrappers and the exact
// int8-units -> scaled FP16 conversion of the mma.sync kernel (gemm_mma_sync.cu, whose top
// says why each is exact), and the output epilogue of both kernels.
#pragma once

#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "nibble/cuda/quant_math.h"
#include "nibble/cuda/quantize.h"

namespace nibble::cuda::detail {

// D = A * B + c (c broadcast to all four accumulators as a bit pattern).
__device__ __forceinline__ void mma_k32(uint32_t (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2], uint32_t c) {
  asm("mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%10,%10,%10,%10};"
      : "=r"(d[0]), "=r"(d[1]), "=r"(d[2]), "=r"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]), "r"(c));
}

__device__ __forceinline__ void mma_k16(uint32_t (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2], uint32_t c) {
  asm("mma.sync.aligned.m16n8k16.row.col.s32.s8.s8.s32 {%0,%1,%2,%3}, {%4,%5}, {%6}, {%7,%7,%7,%7};"
      : "=r"(d[0]), "=r"(d[1]), "=r"(d[2]), "=r"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(b[0]), "r"(c));
}

__device__ __forceinline__ void mma_f16(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2],
                                        const float (&c)[4]) {
  asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%10,%11,%12,%13};"
      : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]), "f"(c[0]), "f"(c[1]), "f"(c[2]),
        "f"(c[3]));
}

// Four int8 units -> two half2 holding units * scale (exact): int8 x becomes
// the FP16 1024 + (x + 128) by byte placement, minus 1152.
__device__ __forceinline__ void units_to_scaled_half(uint32_t units4, __half2 scale, uint32_t& lo, uint32_t& hi) {
  const uint32_t biased = units4 ^ 0x80808080u;
  const __half2 offset = __floats2half2_rn(1152.0f, 1152.0f);
  uint32_t l = __byte_perm(biased, 0x64646464u, 0x5140u);
  uint32_t h = __byte_perm(biased, 0x64646464u, 0x7362u);
  __half2 lh = __hmul2(__hsub2(*reinterpret_cast<__half2*>(&l), offset), scale);
  __half2 hh = __hmul2(__hsub2(*reinterpret_cast<__half2*>(&h), offset), scale);
  lo = *reinterpret_cast<uint32_t*>(&lh);
  hi = *reinterpret_cast<uint32_t*>(&hh);
}

// Two outputs as the BF16 pair golden's round_to_bf16 gives (v0 in the low
// half): one cvt.rn.bf16x2 rounds both to nearest even, as round_to_bf16 does
// finite values and infinities (an overflow carries into Inf either way); a NaN,
// which the cvt makes 0x7FFF, becomes the canonical NaN's upper half.
__device__ __forceinline__ uint32_t bf16_pair_bits(float v0, float v1) {
  uint32_t r;
  asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(v1), "f"(v0));
  if (v0 != v0) r = (r & 0xFFFF0000u) | (math::bits_of(math::quiet_nan()) >> 16);
  if (v1 != v1) r = (r & 0x0000FFFFu) | (math::bits_of(math::quiet_nan()) & 0xFFFF0000u);
  return r;
}

// store_outputs where every output of the fragments lies inside C and pairs
// of adjacent columns are aligned: no per-output bounds, one row address per
// fragment row (each pair then a store at an immediate offset), BF16 by
// bf16_pair_bits. Kept apart so that the common case runs a short, branch-free
// stretch of code (the general one is several times longer, and a consumer
// warpgroup's epilogue then waits on instruction fetch).
template <typename Args, int MI, int NI>
__device__ __forceinline__ void store_inner_outputs(const Args& g, const float (&acc)[MI][NI][4], float gab,
                                                    int64_t m_base, int64_t n_base, int group, int quad) {
#pragma unroll
  for (int mi = 0; mi < MI; ++mi) {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int64_t at = (m_base + mi * 16 + group + 8 * h) * g.b.rows + n_base + 2 * quad;
      if (g.c_bf16 != nullptr) {
        uint32_t* row = reinterpret_cast<uint32_t*>(g.c_bf16 + at);
#pragma unroll
        for (int ni = 0; ni < NI; ++ni) {
          row[4 * ni] = bf16_pair_bits(__fmul_rn(acc[mi][ni][2 * h], gab), __fmul_rn(acc[mi][ni][2 * h + 1], gab));
        }
      } else {
        float2* row = reinterpret_cast<float2*>(g.c + at);
#pragma unroll
        for (int ni = 0; ni < NI; ++ni) {
          row[4 * ni] = make_float2(math::canonical(__fmul_rn(acc[mi][ni][2 * h], gab)),
                                    math::canonical(__fmul_rn(acc[mi][ni][2 * h + 1], gab)));
        }
      }
    }
  }
}

// The epilogue of both GEMM kernels: out = fl(acc * fl(ga * gb)) for a warp's
// MI x NI m16n8 accumulator fragments, stored where they lie inside C (rows and
// columns past its edges are dropped), every NaN stored as the canonical one;
// in BF16 where g.c_bf16 is set, each out rounded by round_to_bf16.
// A thread's two outputs of adjacent columns go out as one store (8 bytes, or
// 4 in BF16) where C keeps them aligned (N even, C itself aligned): a warp's
// store then fills whole 32-byte sectors, instead of half of each in two.
// kTransposed: g's operands are the call's swapped, so g's output (m, n) is
// the call's C[n][m] (the wgmma GEMM's Args::c_transposed); a warp's store there
// fills four sectors of four rows. Fragments wholly inside C with aligned pairs
// take store_inner_outputs.
template <bool kTransposed = false, typename Args, int MI, int NI>
__device__ __forceinline__ void store_outputs(const Args& g, const float (&acc)[MI][NI][4], int64_t m_base,
                                              int64_t n_base, int group, int quad) {
  const float gab = __fmul_rn(g.a.tensor[kTensorDecode], g.b.tensor[kTensorDecode]);
  const int64_t n_total = g.b.rows;
  const bool bf16 = g.c_bf16 != nullptr;
  const bool pairs = !kTransposed && n_total % 2 == 0 &&
                     (bf16 ? reinterpret_cast<uintptr_t>(g.c_bf16) % 4 : reinterpret_cast<uintptr_t>(g.c) % 8) == 0;
  if (pairs && m_base + 16 * MI <= g.a.rows && n_base + 8 * NI <= n_total) {
    store_inner_outputs(g, acc, gab, m_base, n_base, group, quad);
    return;
  }
#pragma unroll
  for (int mi = 0; mi < MI; ++mi) {
#pragma unroll
    for (int ni = 0; ni < NI; ++ni) {
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int64_t m = m_base + mi * 16 + group + 8 * h;
        const int64_t n = n_base + ni * 8 + 2 * quad;
        const float v0 = math::canonical(__fmul_rn(acc[mi][ni][2 * h], gab));
        const float v1 = math::canonical(__fmul_rn(acc[mi][ni][2 * h + 1], gab));
        if (m >= g.a.rows) continue;
        const auto at = [&](int64_t col) { return kTransposed ? col * g.a.rows + m : m * n_total + col; };
        if (bf16) {
          const uint32_t h0 = math::bits_of(math::round_to_bf16(v0)) >> 16;
          const uint32_t h1 = math::bits_of(math::round_to_bf16(v1)) >> 16;
          if (pairs && n < n_total) {  // n even, N even: n + 1 < N
            *reinterpret_cast<uint32_t*>(g.c_bf16 + at(n)) = h0 | (h1 << 16);
          } else {
            if (n < n_total) g.c_bf16[at(n)] = static_cast<uint16_t>(h0);
            if (n + 1 < n_total) g.c_bf16[at(n + 1)] = static_cast<uint16_t>(h1);
          }
        } else if (pairs && n < n_total) {
          *reinterpret_cast<float2*>(g.c + at(n)) = make_float2(v0, v1);
        } else {
          if (n < n_total) g.c[at(n)] = v0;
          if (n + 1 < n_total) g.c[at(n + 1)] = v1;
        }
      }
    }
  }
}

}  // namespace nibble::cuda::detail
