// Quantize / dequantize kernels (the one copy; the library and bench-kernels
// both call these through nibble/cuda/quantize.h). Reference: golden quantize().
//
// Work split. A CTA of 256 threads owns a 32-row x 128-col tile of x. Every
// thread owns one "group": 16 consecutive elements along the contraction axis,
// which is exactly one Philox call (SR) and one RHT16. A warp covers 16 lines x
// 32 contraction elements, lane = 2 * line + half, so the other members of a
// block are reachable by shuffles: a 1x32 block is lanes {l, l^1}, a 16x16 block
// the 16 lanes with the same `half` (xor 2, 4, 8, 16).
//   row-wise pass: lines are rows. A warp reads its 16 x 32 sub-tile by whole
//     128-byte lines (each 16-byte load instruction covers four rows' full
//     sectors; a thread's own 64-byte group would touch half of 32 sectors per
//     instruction), stores it to the shared tile and reads its group back.
//     Warps whose sub-tile crosses the tensor's edge load their groups directly.
//   column-wise pass: lines are columns; each thread reads 16 rows of one
//     column back from the shared tile.
//   Shared tile: rows of 132 floats (16-byte aligned), element (r, c) at column
//   c ^ (r & 16), so the row pass's 16-byte accesses and the column pass's
//   reads (rows r and r + 16 in one instruction) are both conflict-free.
// Wide rows (row-wise output alone, blocks one row tall, at least 512
// columns): a CTA owns 8 rows x 512 columns instead, a warp one row and lane g
// its g-th group (a 1x32 block is lanes {g, g^1}). Each lane loads its own
// group (one 32-byte sector of BF16, two of FP32: the second load
// instruction of a sector finds it in L1) rather than the warp staging its
// row by whole lines through shared memory, whose stores, reads, swizzled
// addresses and barrier cost ~22 instructions of a group's ~415. The warp
// writes its row's codes and block scales as contiguous runs (256 B of
// codes, 32 to 128 B of scales per store instruction; in 32 x 128 tiles a
// warp's codes and scales go to 16 rows, a few bytes each). CTAs start along
// the tile rows. Its kernels are one per recipe: the scale mode, the RHT and
// the block width are compile-time constants there (FixedRecipe).
// Both ways (a column-wise output, blocks one row tall): a CTA owns 64 rows x
// 128 columns, stages them once in shared memory and quantizes two row
// groups and two column groups per thread (quantize_both_ways), one kernel per
// recipe as for wide rows. The 32 x 128 tiles above serve 16x16 blocks and
// the row-wise output alone where wide rows do not apply.
// Traffic per element: 4 B read (2 for BF16), 0.5 B of codes written per
// direction plus one scale code per block (1 or 4 B per 16/32/256 elements).
// nvfp4 reads x twice: an amax pass (the same kernel, walking the tiles
// backwards so that the main pass begins on what L2 still holds), then
// tensor_scale_kernel, then the main pass, chained by programmatic dependent
// launch.
#include <cuda_runtime.h>

#include <algorithm>
#include <limits>
#include <map>
#include <mutex>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "nibble/cuda/check.h"
#include "nibble/cuda/quant_math.h"
#include "nibble/cuda/quantize.h"
#include "nibble/philox.h"
#include "nibble/rht.h"

#include "cp_async.cuh"

namespace nibble::cuda {
namespace {

constexpr int kTileRows = 32;
constexpr int kTileCols = 128;
constexpr int kThreads = 256;
constexpr int kSmemStride = kTileCols + 4;
constexpr int kWideCols = 512;  // wide rows: one warp's 32 groups
constexpr int kWideTileRows = kThreads / 32;  // wide rows: one row per warp

struct Output {
  uint8_t* codes = nullptr;
  int64_t codes_ld = 0;
  uint8_t* scales = nullptr;
  int64_t scales_ld = 0;
  int scale_bytes = 0;
  uint64_t groups_per_line = 0;  // 16-element groups per line: Philox counters are line * this + group
  float* tensor = nullptr;  // kTensorFloats: {amax, S_enc, g, nvfp4 table} (quantize.h)
};

struct QuantizeArgs {
  const void* x;
  bool bf16;
  bool vector_loads;  // rows start on 16-byte boundaries: 16-byte loads allowed
  uint32_t wide_tiles_inside;  // wide rows: tile columns inside the tensor, loaded by 16 bytes (else 0)
  int64_t rows;
  int64_t cols;
  math::ScaleFacts scale;
  int block_rows;
  int block_cols;
  int block_rows_log2;  // block sizes are powers of two: no 64-bit divisions per group
  int block_cols_log2;
  uint32_t sr_keep;  // math::sr_keep_mask(sr_bits)
  bool rht;
  bool rht_bf16;
  math::RhtSigns rht_signs;  // where the RHT negates elements: factors and odd sign bits (kernel parameters)
  math::PhiloxRoundKeys philox_keys;  // of the seed (SR)
  uint32_t stream;
  bool rowwise;
  bool colwise;
  bool keep_sign;  // the signed-zero policy (golden quantizer_code)
  bool propagate;  // the non-finite policy 'propagate' (golden scale.h)
  Output out[2];  // [0] row-wise, [1] column-wise
};

__device__ __forceinline__ float bf16_bits_to_float(uint32_t b) { return __uint_as_float(b << 16); }
// The two BF16 of a 32-bit word (element 0 in the low half) as floats.
__device__ __forceinline__ float2 bf16x2_to_float2(uint32_t w) {
  return make_float2(bf16_bits_to_float(w & 0xFFFFu), __uint_as_float(w & 0xFFFF0000u));
}

// The eight BF16 of a 16-byte chunk (element 0 in the low half of w.x) as
// floats v[first .. first + 7].
__device__ __forceinline__ void widen_bf16x8(uint4 w, float (&v)[16], int first) {
  const uint32_t words[4] = {w.x, w.y, w.z, w.w};
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const float2 f = bf16x2_to_float2(words[i]);
    v[first + 2 * i] = f.x;
    v[first + 2 * i + 1] = f.y;
  }
}

// Programmatic dependent launch (sm_90; no-ops elsewhere). nvfp4 runs three
// kernels in a row: the amax pass, tensor_scale_kernel and the main pass. Each
// of the first two lets the next one launch as soon as all its CTAs have
// started, and the next one waits for it to finish (and its writes to be
// visible) only where it reads what it wrote: the main pass loads its tile
// first, so its first CTAs fill the SMs during the amax pass's last wave and
// the launches between the three kernels.
__device__ __forceinline__ void allow_dependent_launch() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}
__device__ __forceinline__ void wait_for_previous_kernel() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

// v = p[0 .. 15] by two 16-byte loads (p: 16 BF16, 16-byte aligned), widened.
__device__ __forceinline__ void load_16_bf16(const uint16_t* p, float (&v)[16]) {
#pragma unroll
  for (int q = 0; q < 2; ++q) widen_bf16x8(reinterpret_cast<const uint4*>(p)[q], v, 8 * q);
}

// v = p[0 .. 15] by four 16-byte loads (p 16-byte aligned; global or shared).
__device__ __forceinline__ void load_16_floats(const float* p, float (&v)[16]) {
#pragma unroll
  for (int q = 0; q < 4; ++q) {
    const float4 f = reinterpret_cast<const float4*>(p)[q];
    v[4 * q] = f.x;
    v[4 * q + 1] = f.y;
    v[4 * q + 2] = f.z;
    v[4 * q + 3] = f.w;
  }
}

// The 16 elements x[r, c0 .. c0+15], zero outside the tensor.
__device__ __forceinline__ void load_row_group(const QuantizeArgs& a, int64_t r, int64_t c0, float (&v)[16]) {
#pragma unroll
  for (int j = 0; j < 16; ++j) v[j] = 0.0f;
  if (r >= a.rows || c0 >= a.cols) return;
  const bool full = c0 + 16 <= a.cols && a.vector_loads;
  if (!a.bf16) {
    const float* p = static_cast<const float*>(a.x) + r * a.cols + c0;
    if (full) {
      load_16_floats(p, v);
    } else {
      for (int j = 0; j < 16 && c0 + j < a.cols; ++j) v[j] = p[j];
    }
  } else {
    const uint16_t* p = static_cast<const uint16_t*>(a.x) + r * a.cols + c0;
    if (full) {
      load_16_bf16(p, v);
    } else {
      for (int j = 0; j < 16 && c0 + j < a.cols; ++j) v[j] = bf16_bits_to_float(p[j]);
    }
  }
}

using Tile = float[kTileRows][kSmemStride];

// Element (r, c) of the shared tile. Rows r0 .. r0 + 15 with r0 % 16 == 0 share
// one swizzle, so a 16-row band's accesses are one base pointer plus constants.
__device__ __forceinline__ float* tile_at(Tile& tile, int r, int c) { return &tile[r][c ^ (r & 16)]; }

// Four elements of x as four floats at s (16-byte aligned): four FP32 (16
// bytes) as they are, or four BF16 (8 bytes) widened.
__device__ __forceinline__ void store_four(float* s, uint4 w) { *reinterpret_cast<uint4*>(s) = w; }
__device__ __forceinline__ void store_four(float* s, uint2 w) {
  const float2 f0 = bf16x2_to_float2(w.x);
  const float2 f1 = bf16x2_to_float2(w.y);
  *reinterpret_cast<float4*>(s) = make_float4(f0.x, f0.y, f1.x, f1.y);
}

// One 16-byte chunk of x as floats in the shared tile: four FP32 as they are,
// or eight BF16 widened (two 16-byte stores).
__device__ __forceinline__ void store_chunk(float* s, uint4 w, float) { store_four(s, w); }
__device__ __forceinline__ void store_chunk(float* s, uint4 w, uint16_t) {
  store_four(s, make_uint2(w.x, w.y));
  store_four(s + 4, make_uint2(w.z, w.w));
}

// The warp's 16 x 32 sub-tile x[r0 .., c0 ..] (shared tile position tr0, tc0;
// tr0 % 16 == 0, tc0 % 32 == 0) into the shared tile, by whole lines: each
// 16-byte load instruction reads 4 rows of 128 bytes (FP32) or 8 rows of 64
// bytes (BF16), lane l taking one chunk of one row. T: float or uint16_t (BF16
// bits). The caller checked that the sub-tile lies inside x and that 16-byte
// loads are allowed.
template <typename T>
__device__ __forceinline__ void stage_subtile(const T* x, int64_t cols, Tile& tile, int tr0, int tc0, int64_t r0,
                                              int64_t c0, int lane) {
  constexpr int kChunk = 16 / static_cast<int>(sizeof(T));  // elements per 16-byte load
  constexpr int kLanesPerRow = 32 / kChunk;
  constexpr int kRowsPerLoad = 32 / kLanesPerRow;
  constexpr int kLoads = 16 / kRowsPerLoad;
  const int row = lane / kLanesPerRow, col = kChunk * (lane % kLanesPerRow);
  const T* p = x + (r0 + row) * cols + c0 + col;
  float* s = tile_at(tile, tr0 + row, tc0 + col);
  uint4 w[kLoads];
#pragma unroll
  for (int i = 0; i < kLoads; ++i) w[i] = *reinterpret_cast<const uint4*>(p + kRowsPerLoad * i * cols);
#pragma unroll
  for (int i = 0; i < kLoads; ++i) store_chunk(s + kRowsPerLoad * i * kSmemStride, w[i], T{});
}

// max(m, |x|) that returns NaN when either is NaN (max.NaN: SM 8.0 and later,
// which the GEMM's cp.async and mma need as well).
__device__ __forceinline__ float max_nan_abs(float m, float x) {
  float r;
  asm("max.NaN.f32 %0, %1, %2;" : "=f"(r) : "f"(m), "f"(fabsf(x)));
  return r;
}

// max(m, x) of non-negative values (or NaN) that returns NaN when either is NaN.
__device__ __forceinline__ float max_nan(float m, float x) {
  float r;
  asm("max.NaN.f32 %0, %1, %2;" : "=f"(r) : "f"(m), "f"(x));
  return r;
}

__device__ __forceinline__ float warp_max(float x, int first_mask, int last_mask) {
  for (int m = first_mask; m <= last_mask; m *= 2) x = max_nan(x, __shfl_xor_sync(0xFFFFFFFFu, x, m));
  return x;
}

// The largest |x| over the CTA (finite, or NaN/+Inf under the propagate policy,
// whose group maxima keep them), one atomic per CTA (a per-warp atomic on the one
// address serializes ~10^5 updates in L2). All threads call it.
__device__ __forceinline__ void cta_amax_to(float amax, float* tensor, float (&partial)[kThreads / 32]) {
  amax = warp_max(amax, 1, 16);
  if ((threadIdx.x & 31) == 0) partial[threadIdx.x / 32] = amax;
  __syncthreads();
  if (threadIdx.x == 0) {
    float m = 0.0f;
#pragma unroll
    for (int w = 0; w < kThreads / 32; ++w) m = max_nan(m, partial[w]);
    // Non-negative floats order as their bit patterns, +Inf above them and the
    // (positive) NaN max.NaN returns above +Inf.
    if (!(m <= 0.0f)) atomicMax(reinterpret_cast<unsigned int*>(tensor), __float_as_uint(m));
  }
}

// What a kernel knows of its recipe at compile time. Tile layouts read the
// scale mode and the RHT from their arguments (one kernel per format and
// rounding serves every recipe); the wide-rows and both-ways kernels, one per
// recipe, have them as constants, so that a group runs none of the other
// recipes' branches (about 50 of its ~500 instructions), and their blocks are
// one row tall and kBlockCols wide.
struct ArgsRecipe {
  static constexpr bool kOneRowBlocks = false;
  static constexpr bool kClamp = true;
  static constexpr bool kNegateOddOnRead = false;
  __device__ static ScaleMode scale(const QuantizeArgs& a) { return a.scale.mode; }
  __device__ static ScaleFormat scale_format(const QuantizeArgs& a) { return a.scale.format; }
  __device__ static bool rht(const QuantizeArgs& a) { return a.rht; }
  __device__ static int block_cols(const QuantizeArgs& a) { return a.block_cols; }
  __device__ static const math::ScaleFacts& scale_facts(const QuantizeArgs& a) { return a.scale; }
};
template <ScaleMode kScale, bool kRht, int kBlockCols>
struct FixedRecipe {
  static_assert(kBlockCols == 16 || kBlockCols == 32, "fixed recipes have 1x16 or 1x32 blocks");
  static constexpr bool kOneRowBlocks = true;
  static constexpr bool kClamp = !math::products_within_grid(kScale);  // FP32 scales: no clamps
  // With the RHT, the kernel flips the odd elements' signs as it reads a group
  // (negate_odd_on_read), and process_group runs the butterflies alone.
  static constexpr bool kNegateOddOnRead = kRht;
  static constexpr bool kNoRht = !kRht;
  static constexpr int kScaleBytes = info(::nibble::scale_format(kScale)).bits / 8;
  __device__ static constexpr ScaleMode scale(const QuantizeArgs&) { return kScale; }
  __device__ static constexpr ScaleFormat scale_format(const QuantizeArgs&) { return ::nibble::scale_format(kScale); }
  __device__ static constexpr bool rht(const QuantizeArgs&) { return kRht; }
  __device__ static constexpr int block_cols(const QuantizeArgs&) { return kBlockCols; }
  __device__ static constexpr int block_cols_log2(const QuantizeArgs&) { return kBlockCols == 32 ? 5 : 4; }
  __device__ static math::ScaleFacts scale_facts(const QuantizeArgs& a) {
    math::ScaleFacts facts = a.scale;
    facts.mode = kScale;
    return facts;
  }
};

// What a group leaves to be stored: its two words of codes and its block's
// scale code (kAmaxOnly: its amax under the non-finite policy instead: the
// largest finite magnitude, or with 'propagate' NaN/+Inf where it holds one).
struct GroupResult {
  float amax = 0.0f;
  uint32_t lo = 0;
  uint32_t hi = 0;
  uint32_t scale_code = 0;
};

// Without a tensor scale (every mode but nvfp4) the first group writes the
// tensor's {amax 0 (not computed), S_enc 1, g 1}.
__device__ __forceinline__ void store_unit_tensor_scale(const Output& o) {
  o.tensor[kTensorAmax] = 0.0f;
  o.tensor[kTensorEncode] = 1.0f;
  o.tensor[kTensorDecode] = 1.0f;
}

// Block scale code number idx of scale codes of kBytes bytes each (1 or 4),
// from scales; and of an output, whose width is known at run time.
template <int kBytes>
__device__ __forceinline__ void store_scale_code(uint8_t* scales, int64_t idx, uint32_t code) {
  static_assert(kBytes == 1 || kBytes == 4, "scale codes are 1 or 4 bytes");
  if constexpr (kBytes == 4) {
    reinterpret_cast<uint32_t*>(scales)[idx] = code;
  } else {
    scales[idx] = static_cast<uint8_t>(code);
  }
}
__device__ __forceinline__ void store_scale_code(const Output& o, int64_t idx, uint32_t code) {
  if (o.scale_bytes == 4) {
    store_scale_code<4>(o.scales, idx, code);
  } else {
    store_scale_code<1>(o.scales, idx, code);
  }
}

// The stores of a group anywhere in the tensor (arguments as process_group's;
// mode: the recipe's scale mode): its codes (groups past the end of a line but
// inside codes_ld write the zero padding) and, from the block's first group
// where it lies inside the tensor, the block's scale code.
__device__ __forceinline__ void store_group(const QuantizeArgs& a, const Output& o, const GroupResult& g, int64_t line,
                                            int64_t lines, int64_t k0, int64_t klen, ScaleMode mode) {
  const bool live = line < lines && k0 < klen;
  if (line < lines && k0 / 2 < o.codes_ld) {
    *reinterpret_cast<uint2*>(o.codes + line * o.codes_ld + k0 / 2) = make_uint2(g.lo, g.hi);
  }
  const bool block_leader = (k0 & (a.block_cols - 1)) == 0 && (line & (a.block_rows - 1)) == 0;
  if (live && block_leader) {
    store_scale_code(o, (line >> a.block_rows_log2) * o.scales_ld + (k0 >> a.block_cols_log2), g.scale_code);
  }
  if (line == 0 && k0 == 0 && mode != ScaleMode::kNVFP4) store_unit_tensor_scale(o);
}

// One group of one direction: RHT16, then either (kAmaxOnly) the group's
// tensor-amax contribution or the block amax by shuffles, block scale,
// rounding and packing. All 32 lanes of the warp must call it. line: the
// non-contraction index; k0: the group's first contraction index; live: the
// group lies inside the tensor (the overload below tests it from the extents
// of both). R: ArgsRecipe or FixedRecipe.
template <bool kAmaxOnly, Format F, bool kStochastic, class R>
__device__ __forceinline__ GroupResult process_group(const QuantizeArgs& a, const Output& o, float (&v)[16],
                                                     int64_t line, int64_t k0, bool live) {
  const ScaleMode mode = R::scale(a);
  // nvfp4: fl(S_enc / gmax), loaded before the RHT so that its latency hides
  // behind it, once tensor_scale_kernel has written it.
  float enc_over_gmax = 0.0f;
  if (!kAmaxOnly && mode == ScaleMode::kNVFP4) {
    wait_for_previous_kernel();
    enc_over_gmax = o.tensor[kTensorEncOverGmax];
  }
  // Without BF16 rounding, the RHT's scaling by c goes to the block amax and,
  // where math::rht16_scale_folds allows, into the block's encode factor: 16
  // multiplies fewer per group, the same codes.
  const bool fold = R::rht(a) && !a.rht_bf16;
  if (R::rht(a) && live) {
    if constexpr (R::kNegateOddOnRead) {
      math::rht16_butterflies(v, a.rht_signs.even_ones);
    } else {
      math::rht16_sums(v, a.rht_signs);
    }
    if (a.rht_bf16) math::rht16_scale(v, true);
  }

  if constexpr (kAmaxOnly) {
    // The tensor amax (golden's scale_amax). Propagate: the NaN-propagating max.
    // Finite: the largest finite magnitude; fmaxf drops NaNs, so one max per
    // element serves unless an element is infinite: only then (rarely) is each
    // element tested.
    float amax = 0.0f;
    if (a.propagate) {
#pragma unroll
      for (int j = 0; j < 16; ++j) amax = max_nan_abs(amax, v[j]);
    } else {
#pragma unroll
      for (int j = 0; j < 16; ++j) amax = fmaxf(amax, fabsf(v[j]));
    }
    if (amax == INFINITY && !a.propagate) {
      amax = 0.0f;
#pragma unroll
      for (int j = 0; j < 16; ++j) {
        if (math::is_finite(v[j])) amax = fmaxf(amax, math::abs_of(v[j]));
      }
    }
    GroupResult g;
    g.amax = fold ? math::mul_rn(amax, math::kRht16Scale) : amax;
    return g;
  } else {
    // The block amax and its finiteness in one NaN-propagating max per element:
    // NaN if the block holds a NaN, +Inf if it holds an infinity, else the
    // largest |x| (|-0| = +0, as golden's amax).
    float amax = 0.0f;
#pragma unroll
    for (int j = 0; j < 16; ++j) amax = max_nan_abs(amax, v[j]);
    if (!R::kOneRowBlocks && a.block_rows == 16) {
      for (int m = 2; m <= 16; m *= 2) amax = max_nan_abs(amax, __shfl_xor_sync(0xFFFFFFFFu, amax, m));
    } else if (R::block_cols(a) == 32) {
      amax = max_nan_abs(amax, __shfl_xor_sync(0xFFFFFFFFu, amax, 1));
    }
    if (fold) amax = math::mul_rn(amax, math::kRht16Scale);
    const bool finite = amax < INFINITY;  // false for NaN too

    // nvfp4: the tensor scale, fl(S_enc / gmax) and the encode factor of every
    // block-scale code were computed once, after the amax pass (tensor_scale_kernel).
    // The propagate policy quantizes a non-finite block too (golden block_scale of
    // its NaN or +Inf amax): its scale comes from the same rules and its codes from
    // the rare path propagate_group_codes, as do those of a block whose encode
    // factor is NaN (a NaN tensor scale).
    GroupResult g;
    g.scale_code = math::nan_scale_code(R::scale_format(a));
    if ((finite || a.propagate) && live) {
      float encode;
      if (mode == ScaleMode::kNVFP4) {
        g.scale_code = math::nvfp4_scale_code(amax, enc_over_gmax);
        encode = o.tensor[kTensorEncodeTable + g.scale_code];
      } else {
        const BlockScale s =
            finite ? math::block_scale(R::scale_facts(a), amax, TensorScale{1.0f, 1.0f})
                   : math::propagate_block_scale(R::scale_facts(a), amax, TensorScale{1.0f, 1.0f});
        g.scale_code = s.code;
        encode = s.encode;
      }
      uint32_t words[4] = {0u, 0u, 0u, 0u};
      if (kStochastic) {
        const uint64_t group = static_cast<uint64_t>(line) * o.groups_per_line + (static_cast<uint64_t>(k0) >> 4);
        const auto w = math::philox_words(a.philox_keys, group, a.stream,
                                          static_cast<uint32_t>(PhiloxDomain::kStochasticRounding));
        words[0] = w[0];
        words[1] = w[1];
        words[2] = w[2];
        words[3] = w[3];
      }
      math::PackedGroup p;
      if (!finite || !(encode == encode)) {  // propagate only (rare): golden's order, each element scaled by c
        if (fold) math::rht16_scale(v, false);
        p = math::propagate_group_codes<F, kStochastic>(v, encode, words, a.sr_keep, a.keep_sign);
      } else {
        if (!fold || math::rht16_scale_folds(encode)) {
          p = math::group_codes<F, kStochastic, R::kClamp>(v, fold ? math::mul_rn(encode, math::kRht16Scale) : encode,
                                                           words, a.sr_keep);
        } else {  // rare (extreme block scales): golden's order, each element scaled by c
          math::rht16_scale(v, false);
          p = math::group_codes<F, kStochastic, R::kClamp>(v, encode, words, a.sr_keep);
        }
        if (a.keep_sign) p = math::keep_zero_signs<F>(p, v);
      }
      g.lo = p.lo;
      g.hi = p.hi;
    }
    return g;
  }
}

template <bool kAmaxOnly, Format F, bool kStochastic, class R>
__device__ __forceinline__ GroupResult process_group(const QuantizeArgs& a, const Output& o, float (&v)[16],
                                                     int64_t line, int64_t lines, int64_t k0, int64_t klen) {
  return process_group<kAmaxOnly, F, kStochastic, R>(a, o, v, line, k0, line < lines && k0 < klen);
}

// The RHT's negations of a group's odd elements as sign-bit flips (golden's
// own negation), where R asks for them as the group is read: in the BF16
// paths the flip merges with the widening of the odd element (both are bit
// operations on the high half of its word), so the negations cost nothing
// there, and as much as rht16_negate_odd's products elsewhere.
template <class R>
__device__ __forceinline__ void negate_odd_on_read(const QuantizeArgs& a, float (&v)[16]) {
  if constexpr (R::kNegateOddOnRead) {
#pragma unroll
    for (int k = 0; k < 8; ++k) v[2 * k + 1] = __uint_as_float(__float_as_uint(v[2 * k + 1]) ^ a.rht_signs.odd_bits[k]);
  }
}

// The stores of lane `lane`'s group of a wide-rows tile that lies inside the
// tensor (row r, columns c0 .. c0 + 511): every group is live, its codes are
// bytes 8 lane .. of the tile's run of row r, and its block is 1x16 or 1x32.
template <class R>
__device__ __forceinline__ void store_row_group(const QuantizeArgs& a, const Output& o, const GroupResult& g,
                                                int64_t r, int64_t c0, int lane) {
  *reinterpret_cast<uint2*>(o.codes + r * o.codes_ld + c0 / 2 + 8 * lane) = make_uint2(g.lo, g.hi);
  const int k = 16 * lane;
  if ((k & (R::block_cols(a) - 1)) == 0) {
    store_scale_code<R::kScaleBytes>(o.scales, r * o.scales_ld + ((c0 + k) >> R::block_cols_log2(a)), g.scale_code);
  }
  // The tensor's first group (r == 0, c0 + k == 0) is thread 0 of CTA (0, 0)
  // in the main pass (the only caller, which walks the tiles in launch
  // order): one test of three 32-bit indices instead of two 64-bit ones.
  if ((blockIdx.x | blockIdx.y | threadIdx.x) == 0u && R::scale(a) != ScaleMode::kNVFP4) store_unit_tensor_scale(o);
}

// A group of a 32 x 128 tile (arguments as process_group's), then what its
// pass keeps of it: the CTA's amax (partial: cta_amax_to's scratch) or the
// group's stores.
template <bool kAmaxOnly, Format F, bool kStochastic, class R>
__device__ __forceinline__ void tile_group(const QuantizeArgs& a, const Output& o, float (&v)[16], int64_t line,
                                           int64_t lines, int64_t k0, int64_t klen, float (&partial)[kThreads / 32]) {
  const GroupResult g = process_group<kAmaxOnly, F, kStochastic, R>(a, o, v, line, lines, k0, klen);
  if constexpr (kAmaxOnly) {
    cta_amax_to(g.amax, o.tensor, partial);
  } else {
    store_group(a, o, g, line, lines, k0, klen, R::scale(a));
  }
}

// The tile a CTA owns and the order the CTAs start in (launch x fastest).
enum class Layout {
  kColumnsFirst,  // 32 x 128 tiles, launch x the tile row: CTAs start down the tile columns
  kRowsFirst,     // 32 x 128 tiles, launch x the tile column: along the tile rows
  kWideRows,      // 8 x 512 tiles (row-wise output alone, 1x16 / 1x32 blocks), along the tile rows
  kBothWays,      // 64 x 128 tiles (a column-wise output, 1x16 / 1x32 blocks), down the tile columns
};

// ---- Both ways: 64 x 128 tiles for a column-wise output of one-row blocks ----
//
// A CTA quantizes its tile in both directions from one copy in shared memory,
// held as floats in rows of 128 without padding. Warp w stages rows 8w ..
// 8w + 7 (FP32 by cp.async, a whole 512-byte row per instruction; BF16
// through registers, widened, two rows per instruction) and quantizes their
// 64 row groups, two per lane (lane = 8 * row + group); after one barrier it
// quantizes columns 16w .. 16w + 15, two column groups per lane (lane = 4 *
// column + group: the four groups of a column, 64 rows, are four lanes, whose
// codes are one whole 32-byte sector of that column's line). 64 rows, against
// the 32 of the 32 x 128 tiles, make every column-wise code store a whole sector.
constexpr int kBothRows = 64;
constexpr int kBothCols = kTileCols;
static_assert(kBothRows * kBothCols == 2 * kThreads * 16, "two groups per thread and direction");

// Float offset of element (r, c) in the both-ways tile. The 16-byte chunk ch =
// c / 4 of row r lies at ch ^ (ch / 8 % 4) ^ 2 (r / 16 % 4), inside its aligned
// run of 8 chunks (128 bytes, the 32 banks), so that each access is free of
// bank conflicts: a row-pass phase (8 lanes, one row, groups 0 .. 7, chunk q
// of each) reads 8 distinct bank quads; a column-pass read (8 columns of one
// run of 8 x 4 bytes, in rows 16 g + j for g = 0 .. 3) 32 distinct banks; a
// staging phase (8 consecutive chunks of a row, or for BF16 every other chunk
// of 16) 8 distinct bank quads. Rows 16 k .. 16 k + 15 share the row's term
// (both_row_xor), and a group's four chunks stay one aligned run of four,
// chunk q at offset o ^ 4 q from chunk 0's o.
__device__ __forceinline__ int both_row_xor(int r) { return 2 * ((r >> 4) & 3); }
__device__ __forceinline__ int both_chunk_offset(int ch, int row_xor) {
  return 4 * (ch ^ ((ch >> 3) & 3) ^ row_xor);
}
__device__ __forceinline__ int both_offset(int r, int c) {
  return r * kBothCols + both_chunk_offset(c >> 2, both_row_xor(r)) + (c & 3);
}

// Warp `warp`'s rows 8 warp .. 8 warp + 7 of the tile at x[r0, c0] (inside x,
// 16-byte loads allowed) into s. FP32 by cp.async, one row per instruction,
// without registers.
__device__ __forceinline__ void stage_both_rows(const float* x, int64_t cols, float* s, int64_t r0, int64_t c0,
                                                int warp, int lane) {
  const float* p = x + (r0 + 8 * warp) * cols + c0 + 4 * lane;
  float* d = s + 8 * warp * kBothCols + both_chunk_offset(lane, both_row_xor(8 * warp));
#pragma unroll
  for (int i = 0; i < 8; ++i) detail::cp_async_16(d + i * kBothCols, p + i * cols, true);
  detail::cp_async_commit();
  detail::cp_async_wait<0>();
}
// BF16: lane l loads chunk l % 16 (eight BF16) of row 2 i + l / 16 and
// stores it widened, as float chunks 2 (l % 16) and 2 (l % 16) + 1.
__device__ __forceinline__ void stage_both_rows(const uint16_t* x, int64_t cols, float* s, int64_t r0, int64_t c0,
                                                int warp, int lane) {
  const int ch = lane & 15;
  const int row = 8 * warp + (lane >> 4);
  const uint16_t* p = x + (r0 + row) * cols + c0 + 8 * ch;
  const int o0 = row * kBothCols + both_chunk_offset(2 * ch, both_row_xor(8 * warp));
  uint4 w[4];
#pragma unroll
  for (int i = 0; i < 4; ++i) w[i] = *reinterpret_cast<const uint4*>(p + 2 * i * cols);
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    store_four(s + o0 + 2 * i * kBothCols, make_uint2(w[i].x, w[i].y));
    store_four(s + (o0 ^ 4) + 2 * i * kBothCols, make_uint2(w[i].z, w[i].w));
  }
}

// The whole tile, element by element, zero outside x (tiles on the tensor's
// edge, or rows not 16-byte aligned). All threads call it.
__device__ __forceinline__ void stage_both_edge(const QuantizeArgs& a, float* s, int64_t r0, int64_t c0) {
  for (int e = static_cast<int>(threadIdx.x); e < kBothRows * kBothCols; e += kThreads) {
    const int r = e / kBothCols, c = e % kBothCols;
    float x = 0.0f;
    if (r0 + r < a.rows && c0 + c < a.cols) {
      const int64_t i = (r0 + r) * a.cols + c0 + c;
      x = a.bf16 ? bf16_bits_to_float(static_cast<const uint16_t*>(a.x)[i]) : static_cast<const float*>(a.x)[i];
    }
    s[both_offset(r, c)] = x;
  }
}

// Group gi of tile row r (16 consecutive floats, four chunks).
__device__ __forceinline__ void read_both_row(const float* s, int r, int gi, float (&v)[16]) {
  const int o = both_offset(r, 16 * gi);
#pragma unroll
  for (int q = 0; q < 4; ++q) {
    const float4 f = *reinterpret_cast<const float4*>(s + (o ^ (4 * q)));
    v[4 * q] = f.x;
    v[4 * q + 1] = f.y;
    v[4 * q + 2] = f.z;
    v[4 * q + 3] = f.w;
  }
}

// Group g of tile column c: rows 16 g .. 16 g + 15 (one offset plus constants).
__device__ __forceinline__ void read_both_column(const float* s, int g, int c, float (&v)[16]) {
  const float* p = s + both_offset(16 * g, c);
#pragma unroll
  for (int j = 0; j < 16; ++j) v[j] = p[j * kBothCols];
}

// Where a tile that lies inside the tensor writes one output: its corner of
// the codes and of the scale codes, so that a group's stores take 32-bit
// offsets from there (quantize() keeps both-ways tiles to outputs where they fit).
struct TileOutput {
  uint8_t* codes;
  uint8_t* scales;
  uint32_t codes_ld;
  uint32_t scales_ld;
};
template <class R>
__device__ __forceinline__ TileOutput tile_output(const QuantizeArgs& a, const Output& o, int64_t line0, int64_t k0) {
  const int64_t scale_index = line0 * o.scales_ld + (k0 >> R::block_cols_log2(a));
  return {o.codes + line0 * o.codes_ld + k0 / 2, o.scales + scale_index * R::kScaleBytes,
          static_cast<uint32_t>(o.codes_ld), static_cast<uint32_t>(o.scales_ld)};
}

// The stores of a group of a tile inside the tensor (line, k: its line and
// first contraction index within the tile's corner t of the output).
template <class R>
__device__ __forceinline__ void store_both_group(const QuantizeArgs& a, const TileOutput& t, const GroupResult& g,
                                                 uint32_t line, uint32_t k) {
  *reinterpret_cast<uint2*>(t.codes + line * t.codes_ld + k / 2) = make_uint2(g.lo, g.hi);
  if ((k & (R::block_cols(a) - 1)) == 0) {
    store_scale_code<R::kScaleBytes>(t.scales, line * t.scales_ld + (k >> R::block_cols_log2(a)), g.scale_code);
  }
}

// One both-ways tile (launch x: the tile row). R: FixedRecipe. The two passes
// stay written out: one function for their common tail (negations, group,
// stores) compiled differently and measured slower for some recipes, faster
// for none (docs/results/kernels.md#design-choices-measured).
template <bool kAmaxOnly, Format F, bool kStochastic, class R>
__device__ __forceinline__ void quantize_both_ways(const QuantizeArgs& a, float* s, float (&partial)[kThreads / 32],
                                                   unsigned tile_row, unsigned tile_col) {
  const int warp = static_cast<int>(threadIdx.x / 32);
  const int lane = static_cast<int>(threadIdx.x % 32);
  const int64_t r0 = static_cast<int64_t>(tile_row) * kBothRows;
  const int64_t c0 = static_cast<int64_t>(tile_col) * kBothCols;
  const bool inside = a.vector_loads && r0 + kBothRows <= a.rows && c0 + kBothCols <= a.cols;  // CTA-uniform
  if constexpr (!kAmaxOnly) {
    // The tensor's first group is in CTA (0, 0), the first tile launched.
    if (R::scale(a) != ScaleMode::kNVFP4 && (blockIdx.x | blockIdx.y | threadIdx.x) == 0u) {
      if (a.rowwise) store_unit_tensor_scale(a.out[0]);
      store_unit_tensor_scale(a.out[1]);
    }
  }
  if (inside) {
    if (a.bf16) {
      stage_both_rows(static_cast<const uint16_t*>(a.x), a.cols, s, r0, c0, warp, lane);
    } else {
      stage_both_rows(static_cast<const float*>(a.x), a.cols, s, r0, c0, warp, lane);
    }
    __syncwarp();
  } else {
    stage_both_edge(a, s, r0, c0);
    __syncthreads();
  }

  // Without the RHT both directions see the same elements: the amax pass takes
  // the tile's largest magnitude from the row groups alone, for both outputs.
  constexpr bool kShareAmax = kAmaxOnly && R::kNoRht;
  float amax = 0.0f;  // kAmaxOnly: this thread's largest magnitude of the direction
  if (a.rowwise || kShareAmax) {
    const TileOutput t = kAmaxOnly ? TileOutput{} : tile_output<R>(a, a.out[0], r0, c0);
#pragma unroll 1
    for (int p = 0; p < 2; ++p) {
      const int r = 8 * warp + 4 * p + (lane >> 3), k = 16 * (lane & 7);
      float v[16];
      read_both_row(s, r, lane & 7, v);
      negate_odd_on_read<R>(a, v);
      const int64_t line = r0 + r, k0 = c0 + k;
      const bool live = inside || (line < a.rows && k0 < a.cols);
      const GroupResult g = process_group<kAmaxOnly, F, kStochastic, R>(a, a.out[0], v, line, k0, live);
      if constexpr (kAmaxOnly) {
        amax = max_nan(amax, g.amax);
      } else if (inside) {
        store_both_group<R>(a, t, g, r, k);
      } else {
        store_group(a, a.out[0], g, line, a.rows, k0, a.cols, R::scale(a));
      }
    }
    if constexpr (kAmaxOnly) {
      if (a.rowwise) cta_amax_to(amax, a.out[0].tensor, partial);
    }
    if constexpr (kShareAmax) {
      __syncthreads();  // partial[] read by thread 0
      cta_amax_to(amax, a.out[1].tensor, partial);
      return;
    }
  }
  __syncthreads();  // every row staged (and partial[] read by thread 0)

  amax = 0.0f;
  const TileOutput t = tile_output<R>(a, a.out[1], c0, r0);
#pragma unroll 1
  for (int p = 0; p < 2; ++p) {
    const int c = 16 * warp + 8 * p + (lane >> 2), k = 16 * (lane & 3);
    float v[16];
    read_both_column(s, lane & 3, c, v);
    negate_odd_on_read<R>(a, v);
    const int64_t line = c0 + c, k0 = r0 + k;
    const bool live = inside || (line < a.cols && k0 < a.rows);
    const GroupResult g = process_group<kAmaxOnly, F, kStochastic, R>(a, a.out[1], v, line, k0, live);
    if constexpr (kAmaxOnly) {
      amax = max_nan(amax, g.amax);
    } else if (inside) {
      store_both_group<R>(a, t, g, c, k);
    } else {
      store_group(a, a.out[1], g, line, a.cols, k0, a.rows, R::scale(a));
    }
  }
  if constexpr (kAmaxOnly) cta_amax_to(amax, a.out[1].tensor, partial);
}

// F: the element format, fixed at compile time so its grid folds into
// constants; kStochastic: the rounding, so the inner loop has no branches.
// Six CTAs per SM (40 registers, no spills; 48 by default would allow five):
// the extra warps hide more of each tile's load latency. The wide-rows RNE
// kernels run eight (32 registers; the six nvfp4 RHT16 ones spill 8 bytes),
// faster than six with BF16 input and no slower with FP32. The SR kernels stay
// at six: at 32 registers they spill, or, with the random bits drawn after the
// group's codes are folded into a few words, issue more instructions and gain
// nothing. The both-ways RNE main passes run five, no more (below), faster
// with BF16 input; the SR RHT16 ones (UFP4's dY) were no faster at five.
// Persistent CTAs, prefetching their next tile into registers or
// double-buffering tiles in shared memory through cp.async, were slower and
// were not kept. The measurements: docs/results/kernels.md#design-choices-measured.
// kLayout: the tile shape and the order the CTAs start in; quantize() says which.
// R: ArgsRecipe for the 32 x 128 tile layouts, FixedRecipe for wide rows and both ways.
constexpr int ctas_per_sm(Layout layout, bool stochastic, bool amax_only) {
  if (stochastic) return 6;
  if (layout == Layout::kWideRows) return 8;
  return layout == Layout::kBothWays && !amax_only ? 5 : 6;
}
// Where ctas_per_sm is exact it is a ceiling too: a kernel whose registers
// and shared memory would let more CTAs onto an SM is launched with the
// shared memory that leaves room for that many (cta_cap_bytes). The both-ways
// RNE main passes are exact: since uniform grids round signed values they
// fit in 40 registers, and a sixth CTA made them slower again (BF16 input on
// an H200).
constexpr bool ctas_per_sm_exact(Layout layout, bool stochastic, bool amax_only) {
  return layout == Layout::kBothWays && !stochastic && !amax_only;
}
template <bool kAmaxOnly, Format F, bool kStochastic, Layout kLayout, class R = ArgsRecipe>
__global__ void __launch_bounds__(kThreads, ctas_per_sm(kLayout, kStochastic, kAmaxOnly))
    quantize_tile_kernel(const QuantizeArgs a) {
  constexpr int kSharedFloats = kLayout == Layout::kBothWays ? kBothRows * kBothCols : kTileRows * kSmemStride;
  __shared__ alignas(16) float shared[kSharedFloats];
  Tile& tile = *reinterpret_cast<Tile*>(shared);
  __shared__ float partial[kThreads / 32];
  if constexpr (kAmaxOnly) allow_dependent_launch();
  const int warp = static_cast<int>(threadIdx.x / 32);
  const int lane = static_cast<int>(threadIdx.x % 32);
  // The amax pass walks the tiles from the last to the first, and the main
  // pass from the first: the main pass starts on the tiles the amax pass read
  // last, while they are still in L2.
  const unsigned cta_x = kAmaxOnly ? gridDim.x - 1 - blockIdx.x : blockIdx.x;
  const unsigned cta_y = kAmaxOnly ? gridDim.y - 1 - blockIdx.y : blockIdx.y;

  if constexpr (kLayout == Layout::kBothWays) {
    quantize_both_ways<kAmaxOnly, F, kStochastic, R>(a, shared, partial, cta_x, cta_y);
    return;
  }
  if constexpr (kLayout == Layout::kWideRows) {  // launch x: the tile column
    // Row indices in 32 bits (quantize() launches at most 65535 tile rows
    // here), and the warp-uniform "inside" test in two 32-bit compares: the
    // 64-bit forms cost ~10 instructions a group.
    const uint32_t r = cta_y * kWideTileRows + warp;
    const int64_t c0 = static_cast<int64_t>(cta_x) * kWideCols;
    const int64_t c = c0 + 16 * lane;
    float v[16];
    const bool inside = cta_x < a.wide_tiles_inside && r < static_cast<uint32_t>(a.rows);
    // Each path negates as it reads (in the BF16 one the flips merge with
    // the widening only there: 12 instructions a group more after the join).
    if (inside) {
      if (a.bf16) {
        load_16_bf16(static_cast<const uint16_t*>(a.x) + r * a.cols + c, v);
        negate_odd_on_read<R>(a, v);
      } else {
        load_16_floats(static_cast<const float*>(a.x) + r * a.cols + c, v);
        negate_odd_on_read<R>(a, v);
      }
    } else {
      load_row_group(a, r, c, v);
      negate_odd_on_read<R>(a, v);
    }
    const GroupResult g = process_group<kAmaxOnly, F, kStochastic, R>(a, a.out[0], v, r, a.rows, c, a.cols);
    if constexpr (kAmaxOnly) {
      cta_amax_to(g.amax, a.out[0].tensor, partial);
    } else if (inside) {
      store_row_group<R>(a, a.out[0], g, r, c0, lane);
    } else {
      store_group(a, a.out[0], g, r, a.rows, c, a.cols, R::scale(a));
    }
    return;
  }

  constexpr bool kWalkRows = kLayout == Layout::kRowsFirst;
  const int64_t tile_r0 = static_cast<int64_t>(kWalkRows ? cta_y : cta_x) * kTileRows;
  const int64_t tile_c0 = static_cast<int64_t>(kWalkRows ? cta_x : cta_y) * kTileCols;

  {
    const int sub_r = (warp / 4) * 16;
    const int sub_c = (warp % 4) * 32;
    const int tr = sub_r + lane / 2;
    const int tc = sub_c + (lane % 2) * 16;
    float v[16];
    if (a.vector_loads && tile_r0 + sub_r + 16 <= a.rows && tile_c0 + sub_c + 32 <= a.cols) {  // warp-uniform
      if (a.bf16) {
        stage_subtile(static_cast<const uint16_t*>(a.x), a.cols, tile, sub_r, sub_c, tile_r0 + sub_r,
                      tile_c0 + sub_c, lane);
      } else {
        stage_subtile(static_cast<const float*>(a.x), a.cols, tile, sub_r, sub_c, tile_r0 + sub_r, tile_c0 + sub_c,
                      lane);
      }
      __syncwarp();
      load_16_floats(tile_at(tile, tr, tc), v);  // the group's 16 floats are contiguous
    } else {
      load_row_group(a, tile_r0 + tr, tile_c0 + tc, v);
      if (a.colwise) {
#pragma unroll
        for (int j = 0; j < 16; ++j) *tile_at(tile, tr, tc + j) = v[j];
      }
    }
    if (a.rowwise) {
      tile_group<kAmaxOnly, F, kStochastic, R>(a, a.out[0], v, tile_r0 + tr, a.rows, tile_c0 + tc, a.cols, partial);
    }
  }
  if (a.colwise) {
    __syncthreads();
    const int tc = warp * 16 + lane / 2;
    const int tr = (lane % 2) * 16;
    float v[16];
#pragma unroll
    for (int j = 0; j < 16; ++j) v[j] = tile_at(tile, tr, tc)[j * kSmemStride];
    // partial[] is reused: the __syncthreads above orders this after the row-wise read.
    tile_group<kAmaxOnly, F, kStochastic, R>(a, a.out[1], v, tile_c0 + tc, a.cols, tile_r0 + tr, a.rows, partial);
  }
}

// golden tensor_scale from the finished amax pass, once per output, and what
// every block of the main pass needs from it: fl(S_enc * fl(1 / gmax)) and the
// encode factor of each of the 256 E4M3 block-scale codes. One thread per code.
constexpr int kScaleCodes = 256;
static_assert(kTensorFloats == kTensorEncodeTable + kScaleCodes, "one encode factor per E4M3 code");
__global__ void tensor_scale_kernel(math::ScaleFacts scale, float* rowwise, float* colwise) {
  allow_dependent_launch();
  wait_for_previous_kernel();  // the amax pass's maxima
  float* const outputs[2] = {rowwise, colwise};
  const uint32_t code = threadIdx.x;
  for (float* t : outputs) {
    if (t == nullptr) continue;
    const TensorScale v = math::tensor_scale(scale, t[kTensorAmax]);
    t[kTensorEncodeTable + code] = math::nvfp4_encode_of_code(code, v.decode);
    if (code == 0) {
      t[kTensorEncOverGmax] = math::mul_rn(v.encode, scale.inv_gmax);
      t[kTensorEncode] = v.encode;
      t[kTensorDecode] = v.decode;
    }
  }
}

// One thread per 8 codes (4 bytes) of a row: 32 B of floats (16 B of BF16) written per thread.
template <typename Out>
__global__ void dequantize_kernel(const uint8_t* codes, int64_t codes_ld, const uint8_t* scales, int64_t scales_ld,
                                  int scale_bytes, const float* tensor, int64_t rows, int64_t cols,
                                  math::FormatFacts format, ScaleFormat scale_format, int block_rows_log2,
                                  int block_cols_log2, Out* out) {
  const int64_t words_per_row = (cols + 7) / 8;
  const int64_t item = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (item >= rows * words_per_row) return;
  const int64_t r = item / words_per_row;
  const int64_t c0 = (item % words_per_row) * 8;
  const float g = tensor[kTensorDecode];
  const uint8_t* row_codes = codes + r * codes_ld + c0 / 2;
  for (int j = 0; j < 8 && c0 + j < cols; ++j) {
    const int64_t c = c0 + j;
    const uint32_t code = (row_codes[j / 2] >> (4 * (j % 2))) & 0xFu;
    const int64_t sidx = (r >> block_rows_log2) * scales_ld + (c >> block_cols_log2);
    const uint32_t scode = scale_bytes == 4 ? reinterpret_cast<const uint32_t*>(scales)[sidx] : scales[sidx];
    const float s = math::decode_scale_code(scale_format, scode);
    const float value = math::canonical(math::mul_rn(math::mul_rn(math::decode_value(format, code), s), g));
    if constexpr (sizeof(Out) == 2) {
      out[r * cols + c] = static_cast<Out>(math::bits_of(math::round_to_bf16(value)) >> 16);
    } else {
      out[r * cols + c] = value;
    }
  }
}

int64_t round_up(int64_t x, int64_t m) { return (x + m - 1) / m * m; }

int log2_of(int block) {  // block sizes are 1, 16 or 32
  int l = 0;
  while ((1 << l) < block) ++l;
  if ((1 << l) != block) throw std::logic_error("quantize: block size is not a power of two");
  return l;
}

// Whether the current device has programmatic dependent launch (compute
// capability 9.0 and later).
bool has_dependent_launch() {
  int device = 0, major = 0;
  NIBBLE_CUDA_CHECK(cudaGetDevice(&device));
  NIBBLE_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
  return major >= 9;
}

// Launches kernel in stream; `after_previous` (only where has_dependent_launch):
// with programmatic dependent launch, so that it may start while the previous
// kernel in the stream finishes (it then waits in wait_for_previous_kernel).
template <typename... Params, typename... Args>
void launch(void (*kernel)(Params...), dim3 grid, dim3 block, size_t shared_bytes, cudaStream_t stream,
            bool after_previous, const char* name, Args... args) {
  cudaLaunchAttribute attribute{};
  attribute.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attribute.val.programmaticStreamSerializationAllowed = 1;
  cudaLaunchConfig_t config{};
  config.gridDim = grid;
  config.blockDim = block;
  config.dynamicSmemBytes = shared_bytes;
  config.stream = stream;
  config.attrs = &attribute;
  config.numAttrs = after_previous ? 1 : 0;
  check(cudaLaunchKernelEx(&config, kernel, args...), name, __FILE__, __LINE__);
}

// The main pass of a layout and recipe R: one kernel per format of golden's
// list and rounding.
using QuantizeKernel = void (*)(QuantizeArgs);
template <Layout kLayout, class R>
struct MainPassKernel {
  bool stochastic;
  template <Format F>
  QuantizeKernel operator()() const {
    return stochastic ? quantize_tile_kernel<false, F, true, kLayout, R> : quantize_tile_kernel<false, F, false, kLayout, R>;
  }
};
template <Layout kLayout, class R>
QuantizeKernel main_pass_kernel(Format format, bool stochastic) {
  if (listed_index<kAllFormats>(format) == kAllFormats.size()) throw std::logic_error("quantize: unknown format");
  return with_listed<kAllFormats>(format, MainPassKernel<kLayout, R>{stochastic});
}

// nvfp4's amax pass (amax_only) or the main pass. The amax pass does not
// depend on the format or the rounding: one kernel per layout and R.
template <Layout kLayout, class R>
QuantizeKernel pass_kernel(bool amax_only, Format format, bool stochastic) {
  return amax_only ? quantize_tile_kernel<true, kAllFormats[0], false, kLayout, R>
                   : main_pass_kernel<kLayout, R>(format, stochastic);
}

// Wide rows and both ways: the kernels of the recipe's scale mode (one per
// mode of golden's list), RHT and block width (an amax pass for nvfp4 alone,
// the one mode with a tensor scale).
template <Layout kLayout, bool kRht, int kBlockCols>
struct FixedRecipeKernel {
  bool amax_only;
  Format format;
  bool stochastic;
  template <ScaleMode M>
  QuantizeKernel operator()() const {
    if constexpr (M == ScaleMode::kNVFP4) {
      return pass_kernel<kLayout, FixedRecipe<M, kRht, kBlockCols>>(amax_only, format, stochastic);
    } else {
      if (amax_only) throw std::logic_error("quantize: an amax pass without a tensor scale");
      return main_pass_kernel<kLayout, FixedRecipe<M, kRht, kBlockCols>>(format, stochastic);
    }
  }
};
template <Layout kLayout, bool kRht, int kBlockCols>
QuantizeKernel fixed_recipe_kernel(bool amax_only, ScaleMode mode, Format format, bool stochastic) {
  if (listed_index<kAllScaleModes>(mode) == kAllScaleModes.size()) {
    throw std::logic_error("quantize: unknown scale mode");
  }
  return with_listed<kAllScaleModes>(mode, FixedRecipeKernel<kLayout, kRht, kBlockCols>{amax_only, format, stochastic});
}
template <Layout kLayout>
QuantizeKernel fixed_recipe_kernel(const QuantizeArgs& a, bool amax_only, ScaleMode mode, Format format,
                                   bool stochastic) {
  if (a.block_cols == 32) {
    return a.rht ? fixed_recipe_kernel<kLayout, true, 32>(amax_only, mode, format, stochastic)
                 : fixed_recipe_kernel<kLayout, false, 32>(amax_only, mode, format, stochastic);
  }
  return a.rht ? fixed_recipe_kernel<kLayout, true, 16>(amax_only, mode, format, stochastic)
               : fixed_recipe_kernel<kLayout, false, 16>(amax_only, mode, format, stochastic);
}

// The dynamic shared memory that keeps `kernel` to `ctas` CTAs per SM of the
// current device: 0 where no more fit already, else enough that ctas + 1 do
// not (checked by the occupancy calculator). Worked out once per kernel and
// device.
size_t cta_cap_bytes(QuantizeKernel kernel, int ctas) {
  int device = 0;
  NIBBLE_CUDA_CHECK(cudaGetDevice(&device));
  static std::mutex mutex;
  static std::map<std::pair<QuantizeKernel, int>, size_t> cache;
  const std::lock_guard<std::mutex> lock(mutex);
  const auto found = cache.find({kernel, device});
  if (found != cache.end()) return found->second;
  int active = 0;
  NIBBLE_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&active, kernel, kThreads, 0));
  size_t bytes = 0;
  if (active > ctas) {
    int per_sm = 0, reserved = 0;
    NIBBLE_CUDA_CHECK(cudaDeviceGetAttribute(&per_sm, cudaDevAttrMaxSharedMemoryPerMultiprocessor, device));
    NIBBLE_CUDA_CHECK(cudaDeviceGetAttribute(&reserved, cudaDevAttrReservedSharedMemoryPerBlock, device));
    cudaFuncAttributes attributes{};
    NIBBLE_CUDA_CHECK(cudaFuncGetAttributes(&attributes, kernel));
    const size_t per_cta = static_cast<size_t>(per_sm) / static_cast<size_t>(ctas + 1) + 1;  // ctas + 1 don't fit
    const size_t used = attributes.sharedSizeBytes + static_cast<size_t>(reserved);
    bytes = per_cta > used ? per_cta - used : 0;
    NIBBLE_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&active, kernel, kThreads, bytes));
    if (active != ctas) {
      throw std::logic_error("quantize: " + std::to_string(bytes) + " bytes of shared memory give " +
                             std::to_string(active) + " CTAs per SM, not " + std::to_string(ctas));
    }
  }
  cache.emplace(std::make_pair(kernel, device), bytes);
  return bytes;
}

// The kernel of a layout, pass and configuration (a: its block width and RHT).
QuantizeKernel select_kernel(Layout layout, bool amax_only, const QuantConfig& cfg, const QuantizeArgs& a) {
  const bool sr = cfg.rounding == Rounding::kStochastic;
  QuantizeKernel kernel = nullptr;
  switch (layout) {
    case Layout::kColumnsFirst:
      kernel = pass_kernel<Layout::kColumnsFirst, ArgsRecipe>(amax_only, cfg.format, sr);
      break;
    case Layout::kRowsFirst:
      kernel = pass_kernel<Layout::kRowsFirst, ArgsRecipe>(amax_only, cfg.format, sr);
      break;
    case Layout::kWideRows:
      kernel = fixed_recipe_kernel<Layout::kWideRows>(a, amax_only, cfg.scale, cfg.format, sr);
      break;
    case Layout::kBothWays:
      kernel = fixed_recipe_kernel<Layout::kBothWays>(a, amax_only, cfg.scale, cfg.format, sr);
      break;
  }
  return kernel;
}

void launch_quantize(Layout layout, bool amax_only, const QuantConfig& cfg, dim3 grid, cudaStream_t stream,
                     bool after_previous, const QuantizeArgs& a) {
  const bool sr = cfg.rounding == Rounding::kStochastic;
  const QuantizeKernel kernel = select_kernel(layout, amax_only, cfg, a);
  const size_t shared_bytes = ctas_per_sm_exact(layout, sr, amax_only)
                                  ? cta_cap_bytes(kernel, ctas_per_sm(layout, sr, amax_only))
                                  : 0;
  launch(kernel, grid, kThreads, shared_bytes, stream, after_previous,
         amax_only ? "launch of quantize_tile_kernel<amax>" : "launch of quantize_tile_kernel", a);
}

Output output_of(DeviceQuantized* q) {
  Output o;
  o.codes = q->codes.data();
  o.codes_ld = q->codes_ld;
  o.scales = q->scales.data();
  o.scales_ld = q->scales_ld;
  o.scale_bytes = q->scale_bytes;
  o.groups_per_line = static_cast<uint64_t>((q->cols + 15) / 16);
  o.tensor = q->tensor.data();
  return o;
}

// Both-ways tiles store through 32-bit offsets from their corner of each
// output (TileOutput): up to kBothCols lines of codes or scale codes.
bool tile_offsets_fit(const DeviceQuantized* q) {
  if (q == nullptr) return true;
  const uint64_t widest = static_cast<uint64_t>(std::max(q->codes_ld, q->scales_ld * q->scale_bytes));
  return static_cast<uint64_t>(kBothCols) * widest < (uint64_t{1} << 32);
}

void expect_shape(const DeviceQuantized* q, int64_t rows, int64_t cols, const QuantConfig& cfg, const char* what) {
  if (q == nullptr) return;
  if (q->rows != rows || q->cols != cols || q->config.format != cfg.format || q->config.block != cfg.block ||
      q->config.scale != cfg.scale) {
    throw std::invalid_argument(std::string("quantize: the ") + what +
                                " output was not allocated for this shape and configuration");
  }
}

}  // namespace

void validate_gpu_config(const QuantConfig& cfg, int64_t rows, int64_t cols) {
  validate(cfg);
  if (rows <= 0 || cols <= 0) throw std::invalid_argument("quantize: empty tensor");
  if (cfg.rht.enabled() && cfg.rht.size != 16) {
    throw std::invalid_argument("GPU quantize fuses RHT16 only; RHT" + std::to_string(cfg.rht.size) +
                                " is not supported");
  }
}

namespace {
// Device storage for [rows, cols] under cfg, whatever its RHT size.
DeviceQuantized allocate_storage(int64_t rows, int64_t cols, const QuantConfig& cfg) {
  DeviceQuantized q;
  q.config = cfg;
  q.rows = rows;
  q.cols = cols;
  q.codes_ld = round_up((cols + 1) / 2, 16);
  q.scale_rows = (rows + block_rows(cfg.block) - 1) / block_rows(cfg.block);
  q.scale_cols = (cols + block_cols(cfg.block) - 1) / block_cols(cfg.block);
  q.scales_ld = round_up(q.scale_cols, 16);
  q.scale_bytes = info(scale_format(cfg.scale)).bits / 8;
  q.codes = DeviceBuffer<uint8_t>(static_cast<size_t>(rows * q.codes_ld));
  q.scales = DeviceBuffer<uint8_t>(static_cast<size_t>(q.scale_rows * q.scales_ld * q.scale_bytes));
  q.tensor = DeviceBuffer<float>(kTensorFloats);
  q.scales.fill_zero();
  return q;
}
}  // namespace

DeviceQuantized allocate_quantized(int64_t rows, int64_t cols, const QuantConfig& cfg) {
  validate_gpu_config(cfg, rows, cols);
  return allocate_storage(rows, cols, cfg);
}

void quantize(const void* x, InputType type, int64_t rows, int64_t cols, const QuantConfig& cfg,
              DeviceQuantized* rowwise, DeviceQuantized* colwise, cudaStream_t stream) {
  validate_gpu_config(cfg, rows, cols);
  if (rowwise == nullptr && colwise == nullptr) throw std::invalid_argument("quantize: no output requested");
  expect_shape(rowwise, rows, cols, cfg, "row-wise");
  expect_shape(colwise, cols, rows, cfg, "column-wise");
  if (cfg.rht.enabled() && rowwise != nullptr && cols % 16 != 0) {
    throw std::invalid_argument("RHT16 needs the contraction axis (" + std::to_string(cols) +
                                ") to be a multiple of 16");
  }
  if (cfg.rht.enabled() && colwise != nullptr && rows % 16 != 0) {
    throw std::invalid_argument("RHT16 of the column-wise output needs rows (" + std::to_string(rows) +
                                ") to be a multiple of 16");
  }
  QuantizeArgs a{};
  a.x = x;
  a.bf16 = type == InputType::kBFloat16;
  const int64_t row_bytes = cols * (a.bf16 ? 2 : 4);
  a.vector_loads = reinterpret_cast<uintptr_t>(x) % 16 == 0 && row_bytes % 16 == 0;
  a.rows = rows;
  a.cols = cols;
  a.scale = math::scale_facts(cfg.scale, cfg.format);
  a.block_rows = block_rows(cfg.block);
  a.block_cols = block_cols(cfg.block);
  a.block_rows_log2 = log2_of(a.block_rows);
  a.block_cols_log2 = log2_of(a.block_cols);
  a.sr_keep = math::sr_keep_mask(cfg.sr_bits);
  a.rht = cfg.rht.enabled();
  a.rht_bf16 = cfg.rht.round_bf16;
  a.rht_signs = math::rht16_signs(a.rht ? rht_signs(cfg.seed)[0] : 0u);
  a.philox_keys = math::philox_round_keys(cfg.seed);
  a.stream = cfg.stream;
  a.rowwise = rowwise != nullptr;
  a.colwise = colwise != nullptr;
  a.keep_sign = cfg.policy.zero == ZeroPolicy::kSigned;
  a.propagate = cfg.policy.nonfinite == NonFinitePolicy::kPropagate;
  if (rowwise != nullptr) a.out[0] = output_of(rowwise);
  if (colwise != nullptr) a.out[1] = output_of(colwise);

  // Tiles cover the code padding too: row-wise codes reach round_up(cols, 32)
  // columns, column-wise codes round_up(rows, 32) rows.
  // The tile shape and the order the CTAs start in (launch x fastest):
  // - wide rows (8 x 512 tiles, along the tile rows) for the row-wise output
  //   alone with blocks one row tall and rows of at least 512 columns: a
  //   warp's code and scale stores are contiguous runs of one row;
  // - else 32 x 128 tiles, down the tile columns: CTAs that run at the same time
  //   then write disjoint sectors of a row-wise scale row (a tile row holds 4
  //   or 8 bytes of it for 1-byte scales, and walking along the tile rows made
  //   those recipes slower). Where a tile row's row-wise scales fill whole
  //   32-byte sectors (FP32 scales of 16-wide blocks) and there is no
  //   column-wise output, along the tile rows: running CTAs then read whole
  //   rows of x;
  // - with a column-wise output of blocks one row tall, 64 x 128 tiles, down
  //   the tile columns, one kernel per recipe: each column-wise code store
  //   fills a whole 32-byte sector (outputs whose rows are under 32 MiB).
  const int64_t row_tiles = (rows + kTileRows - 1) / kTileRows;
  const int64_t col_tiles = (cols + kTileCols - 1) / kTileCols;
  const int64_t wide_row_tiles = (rows + kWideTileRows - 1) / kWideTileRows;
  Layout layout = Layout::kColumnsFirst;
  dim3 grid;
  if (colwise == nullptr && a.block_rows == 1 && cols >= kWideCols && wide_row_tiles <= 65535) {
    layout = Layout::kWideRows;
    a.wide_tiles_inside = a.vector_loads ? static_cast<uint32_t>(std::min<int64_t>(cols / kWideCols, UINT32_MAX)) : 0u;
    grid = dim3(static_cast<unsigned>((cols + kWideCols - 1) / kWideCols), static_cast<unsigned>(wide_row_tiles));
  } else if (colwise != nullptr && a.block_rows == 1 && tile_offsets_fit(rowwise) && tile_offsets_fit(colwise)) {
    layout = Layout::kBothWays;
    if (col_tiles > 65535) throw std::invalid_argument("quantize: the tensor has too many tiles for one launch");
    grid = dim3(static_cast<unsigned>((rows + kBothRows - 1) / kBothRows), static_cast<unsigned>(col_tiles));
  } else if (colwise == nullptr && (kTileCols / a.block_cols) * rowwise->scale_bytes % 32 == 0 &&
             row_tiles <= 65535) {
    layout = Layout::kRowsFirst;
    grid = dim3(static_cast<unsigned>(col_tiles), static_cast<unsigned>(row_tiles));
  } else {
    if (col_tiles > 65535 || row_tiles > 0x7FFFFFFF) {
      throw std::invalid_argument("quantize: the tensor has too many tiles for one launch");
    }
    grid = dim3(static_cast<unsigned>(row_tiles), static_cast<unsigned>(col_tiles));
  }
  // nvfp4: the amax pass, tensor_scale_kernel and the main pass, chained.
  const bool chained = cfg.scale == ScaleMode::kNVFP4 && has_dependent_launch();
  if (cfg.scale == ScaleMode::kNVFP4) {
    for (int d = 0; d < 2; ++d) {  // the amax pass takes atomic maxima into a zero
      if ((d == 0 && rowwise == nullptr) || (d == 1 && colwise == nullptr)) continue;
      NIBBLE_CUDA_CHECK(cudaMemsetAsync(a.out[d].tensor, 0, sizeof(float), stream));
    }
    launch_quantize(layout, true, cfg, grid, stream, false, a);
    launch(tensor_scale_kernel, dim3(1), dim3(kScaleCodes), 0, stream, chained, "launch of tensor_scale_kernel",
           a.scale, a.rowwise ? a.out[0].tensor : nullptr, a.colwise ? a.out[1].tensor : nullptr);
  }
  launch_quantize(layout, false, cfg, grid, stream, chained, a);
}

DeviceQuantized quantize_rowwise(const float* x, int64_t rows, int64_t cols, const QuantConfig& cfg) {
  DeviceQuantized q = allocate_quantized(rows, cols, cfg);
  quantize(x, InputType::kFloat32, rows, cols, cfg, &q, nullptr, nullptr);
  NIBBLE_CUDA_CHECK(cudaStreamSynchronize(nullptr));
  return q;
}

template <typename Out>
void launch_dequantize(const DeviceQuantized& q, Out* out, cudaStream_t stream) {
  const int64_t items = q.rows * ((q.cols + 7) / 8);
  constexpr int kBlock = 256;
  const int64_t blocks = (items + kBlock - 1) / kBlock;
  dequantize_kernel<Out><<<static_cast<unsigned>(blocks), kBlock, 0, stream>>>(
      q.codes.data(), q.codes_ld, q.scales.data(), q.scales_ld, q.scale_bytes, q.tensor.data(), q.rows, q.cols,
      math::format_facts(q.config.format), scale_format(q.config.scale), log2_of(block_rows(q.config.block)),
      log2_of(block_cols(q.config.block)), out);
  NIBBLE_CUDA_CHECK_LAUNCH("dequantize_kernel");
}

void dequantize(const DeviceQuantized& q, float* out, cudaStream_t stream) { launch_dequantize(q, out, stream); }

void dequantize_bf16(const DeviceQuantized& q, uint16_t* out, cudaStream_t stream) {
  launch_dequantize(q, out, stream);
}

QuantizedTensor to_host(const DeviceQuantized& q) {
  NIBBLE_CUDA_CHECK(cudaDeviceSynchronize());
  QuantizedTensor h;
  h.rows = q.rows;
  h.cols = q.cols;
  h.config = q.config;
  const std::vector<uint8_t> packed = q.codes.download();
  h.codes.resize(static_cast<size_t>(q.rows * q.cols));
  for (int64_t r = 0; r < q.rows; ++r) {
    unpack_codes(&packed[static_cast<size_t>(r * q.codes_ld)], static_cast<size_t>(q.cols),
                 &h.codes[static_cast<size_t>(r * q.cols)]);
  }
  const std::vector<uint8_t> scales = q.scales.download();
  h.scales.resize(static_cast<size_t>(q.scale_rows * q.scale_cols));
  for (int64_t br = 0; br < q.scale_rows; ++br) {
    for (int64_t bc = 0; bc < q.scale_cols; ++bc) {
      const size_t src = static_cast<size_t>((br * q.scales_ld + bc) * q.scale_bytes);
      uint32_t code = 0;
      for (int b = 0; b < q.scale_bytes; ++b) {
        code |= static_cast<uint32_t>(scales[src + static_cast<size_t>(b)]) << (8 * b);
      }
      h.scales[static_cast<size_t>(br * q.scale_cols + bc)] = code;
    }
  }
  const std::vector<float> t = q.tensor.download();
  h.tensor.encode = t[kTensorEncode];
  h.tensor.decode = t[kTensorDecode];
  return h;
}

DeviceQuantized to_device(const QuantizedTensor& h) {
  validate(h.config);
  if (h.rows <= 0 || h.cols <= 0) throw std::invalid_argument("to_device: empty tensor");
  if (h.codes.size() != static_cast<size_t>(h.rows * h.cols) ||
      h.scales.size() != static_cast<size_t>(h.block_grid_rows() * h.block_grid_cols())) {
    throw std::invalid_argument("to_device: the codes or scales do not fit a [" + std::to_string(h.rows) + ", " +
                                std::to_string(h.cols) + "] tensor");
  }
  DeviceQuantized q = allocate_storage(h.rows, h.cols, h.config);
  std::vector<uint8_t> packed(static_cast<size_t>(q.rows * q.codes_ld), 0);
  for (int64_t r = 0; r < q.rows; ++r) {
    pack_codes(&h.codes[static_cast<size_t>(r * q.cols)], static_cast<size_t>(q.cols),
               &packed[static_cast<size_t>(r * q.codes_ld)]);
  }
  q.codes.upload(packed);
  std::vector<uint8_t> scales(q.scales.size(), 0);
  for (int64_t br = 0; br < q.scale_rows; ++br) {
    for (int64_t bc = 0; bc < q.scale_cols; ++bc) {
      const uint32_t code = h.scales[static_cast<size_t>(br * q.scale_cols + bc)];
      const size_t dst = static_cast<size_t>((br * q.scales_ld + bc) * q.scale_bytes);
      for (int b = 0; b < q.scale_bytes; ++b) {
        scales[dst + static_cast<size_t>(b)] = static_cast<uint8_t>(code >> (8 * b));
      }
    }
  }
  q.scales.upload(scales);
  std::vector<float> tensor(kTensorFloats, 0.0f);
  tensor[kTensorAmax] = std::numeric_limits<float>::quiet_NaN();
  tensor[kTensorEncode] = h.tensor.encode;
  tensor[kTensorDecode] = h.tensor.decode;
  q.tensor.upload(tensor);
  return q;
}

std::vector<const void*> quantize_kernels_of(const QuantConfig& cfg) {
  QuantizeArgs a{};
  a.block_cols = block_cols(cfg.block);
  a.rht = cfg.rht.enabled();
  std::vector<const void*> kernels;
  for (Layout layout : {Layout::kColumnsFirst, Layout::kRowsFirst, Layout::kWideRows, Layout::kBothWays}) {
    kernels.push_back(reinterpret_cast<const void*>(select_kernel(layout, false, cfg, a)));
  }
  return kernels;
}

}  // namespace nibble::cuda
