// The pieces GEMM the two kernels (gemm_mma_sync.cu, gemm_wgmma.cu) share: the
// operand description, the cp.async stage of raw packed codes and scale codes
// (layout in nibble/cuda/detail/gemm_mma_sync_layout.h) and its host-side checks.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <stdexcept>

#include "nibble/cuda/detail/gemm_mma_sync_layout.h"
#include "nibble/cuda/detail/gemm_wgmma_layout.h"
#include "nibble/cuda/quant_math.h"
#include "nibble/cuda/quantize.h"
#include "cp_async.cuh"
#include "gemm_output.h"

namespace nibble::cuda::detail {

using mma_sync::code_copy;
using mma_sync::code_offset;
using mma_sync::CodeCopy;
using mma_sync::kBK;
using mma_sync::kBM;
using mma_sync::kBN;
using mma_sync::kChunksPerRow;
using mma_sync::kScaleRowBytes;
using mma_sync::scale_offset;
using mma_sync::scale_window_bytes;

struct Operand {
  const uint8_t* codes;
  int64_t codes_ld;
  const uint8_t* scales;
  int64_t scales_ld;
  int64_t rows;
  int scale_bytes;
  int block_rows_log2;  // 0 or 4
  int block_cols_log2;  // 4 or 5
  int window_bytes;     // scale bytes per row per stage: 4, 8, 16 or 32
  ScaleFormat scale_format;
  float unit;           // 2^lsb (FP16 path: folded into the scale)
  const float* tensor;  // {amax, S_enc, g}
  uint32_t lut[4];      // int8 units of codes 0..15, four per word
  uint32_t half_high[4];  // the wgmma kernel: high bytes of the FP16 units of codes 0..15, four per word
};

struct Args {
  Operand a;
  Operand b;
  int64_t k;
  int64_t k_blocks;
  uint32_t magic;     // bits of 1.5 * 2^(23+u)
  float magic_value;  // 1.5 * 2^(23+u)
  float* c;           // C in FP32, or null where c_bf16 holds it
  uint16_t* c_bf16;   // C in BF16 (each output's FP32 value by round_to_bf16), or null
  // Whether a and b are the call's operands swapped (C^T = B A^T: the wgmma GEMM's
  // 64 x 128 tiles, and UE8M0 scales folded into the call's other operand),
  // so that output (m, n) is the call's C[n][m] (store_tile in gemm_wgmma.cu).
  bool c_transposed;
  // The wgmma GEMM's ordered split (wgmma::Schedule): units (tile stages) per
  // CTA, 0 for the classic schedule; its workspace's flag words and sums
  // (wgmma::split_workspace_bytes).
  int64_t split_per;
  uint32_t* split_flags;
  float* split_sums;
  // The wgmma GEMM's B decoded once (wgmma::predecode_b), rows padded to
  // b_decoded_rows; null where the producer decodes B per stage.
  const uint8_t* b_decoded;
  int64_t b_decoded_rows;
};

// The copies of a raw stage that one of kNumThreads threads (the first
// kNumThreads of the CTA: the mma.sync kernel's 128, or the wgmma kernel's
// producer warpgroup) issues: 16-byte code copies, then one scale window per row of A and of B (scale copy j is
// row tid of operand j). A copy's source is worked out at k = 0 (code_source,
// scale_source) and moved to the stage's k when issued (issue_code,
// issue_scale); a copy past the end of a row or of the operand is a zero
// fill. Each copy's operand is known at compile time (its index picks it):
// picking g.a or g.b at run time crashes nvcc 13.0's cicc where the call sits
// in one branch of a kernel, as in the wgmma kernel's producer. kBRows: the
// rows of B the stage holds (kBN, or the wgmma kernel's half tiles' 64:
// mma_sync::code_copies).
template <int kNumThreads, int kBRows = kBN>
struct CopyPlan {
  static constexpr int kCodeCopies = mma_sync::code_copies(kNumThreads, kBRows);
  static constexpr int kScaleCopies = (kBM + kBN) / kNumThreads;
  static_assert(((kBM + kBRows) * kChunksPerRow) % kNumThreads == 0, "code copies divide evenly");
  static_assert(kNumThreads == kBM && kBM == kBN, "scale copy j is row tid of operand j");
  static_assert(kBRows == kBN || (kBRows == kBN / 2 && kBRows % 32 == 0), "B's rows: all, or the first half");
  // Whether thread tid copies a scale window of operand j (row tid of it).
  static __device__ __forceinline__ bool scale_copied(int j, int tid) {
    return kBRows == kBN || j == 0 || tid < kBRows;
  }
};

// Byte offsets within a row of codes or scales are 32-bit (operand_of checks
// that a row's codes fit).
struct CodeSource {
  const uint8_t* src;  // the copy's chunk at k = 0
  uint32_t left;       // bytes of its row from there on; 0 for a row past the operand's end
};

template <int kNumThreads>
__device__ __forceinline__ CodeSource code_source(const Args& g, int i, int tid, int64_t m0, int64_t n0) {
  const CodeCopy cc = code_copy(i, tid, kNumThreads);
  const Operand& o = cc.op == 0 ? g.a : g.b;
  const int64_t row = (cc.op == 0 ? m0 : n0) + cc.row;
  if (row >= o.rows) return {o.codes, 0u};
  return {o.codes + row * o.codes_ld + cc.chunk * 16, mma_sync::code_bytes_left(o.codes_ld, cc.chunk)};
}

template <int kNumThreads>
__device__ __forceinline__ void issue_code(uint8_t* stage, int i, int tid, CodeSource c, int64_t k0) {
  const CodeCopy cc = code_copy(i, tid, kNumThreads);
  const uint32_t byte = static_cast<uint32_t>(k0 / 2);
  const bool valid = byte < c.left;
  cp_async_16(stage + code_offset(cc.op, cc.row, cc.chunk * 16), valid ? c.src + byte : c.src, valid);
}

// Row tid's scale window of operand j at k = 0, or nullptr past the operand's end.
__device__ __forceinline__ const uint8_t* scale_source(const Args& g, int j, int tid, int64_t m0, int64_t n0) {
  const Operand& o = j == 0 ? g.a : g.b;
  const int64_t row = (j == 0 ? m0 : n0) + tid;
  return row < o.rows ? o.scales + (row >> o.block_rows_log2) * o.scales_ld * o.scale_bytes : nullptr;
}

__device__ __forceinline__ void issue_scale(const Args& g, uint8_t* stage, int j, int tid, const uint8_t* src0,
                                            int64_t k0) {
  const Operand& o = j == 0 ? g.a : g.b;
  const bool valid = src0 != nullptr;
  const uint8_t* src = valid ? src0 + static_cast<uint32_t>(k0 >> o.block_cols_log2) * o.scale_bytes : o.scales;
  uint8_t* dst = stage + scale_offset(j, tid);
  switch (o.window_bytes) {
    case 4: cp_async_small<4>(dst, src, valid); break;
    case 8: cp_async_small<8>(dst, src, valid); break;
    case 16: cp_async_16(dst, src, valid); break;
    default:
      cp_async_16(dst, src, valid);
      cp_async_16(dst + 16, valid ? src + 16 : src, valid);
      break;
  }
}

// Issues the copies of stage s (k0 = s * kBK) into buffer `stage`, each
// source worked out as it is issued (no registers held between stages).
template <int kNumThreads, int kBRows = kBN>
__device__ __forceinline__ void load_stage(const Args& g, uint8_t* stage, int64_t m0, int64_t n0, int64_t k0) {
  using Plan = CopyPlan<kNumThreads, kBRows>;
  const int tid = static_cast<int>(threadIdx.x % kNumThreads);
#pragma unroll
  for (int i = 0; i < Plan::kCodeCopies; ++i) {
    issue_code<kNumThreads>(stage, i, tid, code_source<kNumThreads>(g, i, tid, m0, n0), k0);
  }
#pragma unroll
  for (int j = 0; j < Plan::kScaleCopies; ++j) {
    if (Plan::scale_copied(j, tid)) issue_scale(g, stage, j, tid, scale_source(g, j, tid, m0, n0), k0);
  }
}

// load_stage for a tile, behind StageCopies' interface: the sources worked
// out per stage (no registers held between stages).
template <int kNumThreads, int kBRows = kBN>
struct StageLoads {
  int64_t m0;
  int64_t n0;
  __device__ __forceinline__ StageLoads(const Args&, int64_t m, int64_t n) : m0(m), n0(n) {}
  __device__ __forceinline__ void issue(const Args& g, uint8_t* stage, int64_t k0) const {
    load_stage<kNumThreads, kBRows>(g, stage, m0, n0, k0);
  }
};

// The same copies with their sources worked out once and held in registers,
// for a thread with registers to spare (the wgmma kernel's producers, but where the scaled
// datapath decodes scales of other widths than binary32's).
template <int kNumThreads, int kBRows = kBN>
struct StageCopies {
  using Plan = CopyPlan<kNumThreads, kBRows>;
  CodeSource code[Plan::kCodeCopies];
  const uint8_t* scale[Plan::kScaleCopies];

  __device__ __forceinline__ StageCopies(const Args& g, int64_t m0, int64_t n0) {
    const int tid = static_cast<int>(threadIdx.x % kNumThreads);
#pragma unroll
    for (int i = 0; i < Plan::kCodeCopies; ++i) code[i] = code_source<kNumThreads>(g, i, tid, m0, n0);
#pragma unroll
    for (int j = 0; j < Plan::kScaleCopies; ++j) scale[j] = scale_source(g, j, tid, m0, n0);
  }

  __device__ __forceinline__ void issue(const Args& g, uint8_t* stage, int64_t k0) const {
    const int tid = static_cast<int>(threadIdx.x % kNumThreads);
#pragma unroll
    for (int i = 0; i < Plan::kCodeCopies; ++i) issue_code<kNumThreads>(stage, i, tid, code[i], k0);
#pragma unroll
    for (int j = 0; j < Plan::kScaleCopies; ++j) {
      if (Plan::scale_copied(j, tid)) issue_scale(g, stage, j, tid, scale[j], k0);
    }
  }
};

__device__ __forceinline__ uint32_t load_u32(const uint8_t* p) { return *reinterpret_cast<const uint32_t*>(p); }
__device__ __forceinline__ uint32_t load_u16(const uint8_t* p) { return *reinterpret_cast<const uint16_t*>(p); }

// The decoded scale of column col of a row's window: FP32 bits, or the table entry.
__device__ __forceinline__ uint32_t scale_word(const uint8_t* window, int col, int scale_bytes, const uint32_t* lut) {
  return scale_bytes == 4 ? load_u32(window + 4 * col) : lut[window[col]];
}

inline int log2_exact(int v) {
  int l = 0;
  while ((1 << l) < v) ++l;
  if ((1 << l) != v) throw std::logic_error("gemm: block size is not a power of two");
  return l;
}

inline Operand operand_of(const DeviceQuantized& q) {
  Operand o{};
  o.codes = q.codes.data();
  o.codes_ld = q.codes_ld;
  o.scales = q.scales.data();
  o.scales_ld = q.scales_ld;
  o.rows = q.rows;
  o.scale_bytes = q.scale_bytes;
  const int br = block_rows(q.config.block), bc = block_cols(q.config.block);
  o.block_rows_log2 = log2_exact(br);
  o.block_cols_log2 = log2_exact(bc);
  o.window_bytes = scale_window_bytes(bc, q.scale_bytes);
  // The stage's scale window must be whole copies, aligned, inside the row's
  // scales_ld codes (scales_ld is a multiple of 16 codes).
  if (kBK % bc != 0 || q.scales_ld % (kBK / bc) != 0 || q.codes_ld > INT32_MAX ||
      !(o.window_bytes == 4 || o.window_bytes == 8 || o.window_bytes == 16 || o.window_bytes == 32) ||
      o.window_bytes > kScaleRowBytes || q.codes_ld % 16 != 0) {
    throw std::logic_error("gemm: unsupported operand layout");
  }
  o.scale_format = scale_format(q.config.scale);
  o.unit = math::exp2_f32(lsb_exp(q.config.format));
  o.tensor = q.tensor.data();
  mma_sync::units_table(q.config.format, o.lut);
  if (!wgmma::half_high_table(q.config.format, o.half_high)) {
    throw std::logic_error("gemm: a unit's FP16 needs its low byte");
  }
  return o;
}

// E4M3 scales on both operands: the pair whose scales both kernels fold into
// FP16 operands (gemm_mma_sync.cu's FP16 path); the others take the INT8 path (the mma.sync kernel)
// or apply both scales in the epilogue (the wgmma kernel's scaled datapath).
inline bool e4m3_scales(const DeviceQuantized& a, const DeviceQuantized& b) {
  return scale_format(a.config.scale) == ScaleFormat::kE4M3 && scale_format(b.config.scale) == ScaleFormat::kE4M3;
}

// The k-block width of the contract for this pair: the shorter block width.
inline int k_step(const DeviceQuantized& a, const DeviceQuantized& b) {
  return std::min(block_cols(a.config.block), block_cols(b.config.block));
}

// The arguments both kernels start from: operands, K, the k-blocks of the
// contract (the shorter of the two block widths), the INT8 path's magic
// constant, the output.
inline Args args_of(const DeviceQuantized& a, const DeviceQuantized& b, const OutputPtr& c) {
  Args g{};
  g.a = operand_of(a);
  g.b = operand_of(b);
  g.k = a.cols;
  const int step = k_step(a, b);
  g.k_blocks = (a.cols + step - 1) / step;
  g.magic_value = 1.5f * math::exp2_f32(23 + lsb_exp(a.config.format) + lsb_exp(b.config.format));
  g.magic = math::bits_of(g.magic_value);
  g.c = c.f32;
  g.c_bf16 = c.bf16;
  return g;
}

}  // namespace nibble::cuda::detail
