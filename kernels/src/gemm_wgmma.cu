// The wgmma GEMM: the mma.sync kernel's raw-code stages, with the per-block
// partial sums taken from the asynchronous warpgroup mma (wgmma, sm_90a)
// instead of mma.sync, in warp-specialized persistent CTAs.
//
// The contract's cost on Hopper is the one binary32 add per output per
// k-block (docs/results/kernels.md#gemm-the-contracts-own-adds-take-as-long-as-cublass-whole-gemm):
// those adds alone take about as long as cuBLAS's whole BF16 GEMM. The
// mma.sync kernel spends about 3.3 instructions per add (mma.sync issue,
// fragment reads and decode of both operands per warp tile); this kernel
// takes the mma off the issue path and decodes each operand once per CTA:
//   * CTA 128 x 128, one CTA per SM (227 KiB of shared memory), 384 threads:
//     a producer warpgroup and two consumer warpgroups of 64 x 128 outputs
//     (of 64 x 64 on half tiles, below);
//     setmaxnreg moves registers from the producer to the consumers
//     (RoleRegs); the CTAs are persistent, each taking every gridDim.x-th
//     tile, so that a tile's first stages are copied and decoded while the
//     tile before it ends (Tiles), or, with the caller's workspace where the
//     tiles are not a multiple of the SMs, a run of tiles and stages of its
//     own, a tile split between two CTAs handing its partial sums over
//     (wgmma::Schedule, the ordered split). Where those tiles would leave SMs idle,
//     half tiles of 128 x 64 (two consumer warpgroups of 64 x 64, the same
//     producer and stages, 64 rows of B) give each SM one (wgmma::auto_tiles,
//     wgmma::TileShape); an output of at most 64 rows with more of those than
//     SMs runs them on the operands swapped (C^T = B A^T: tiles of 64 x 128
//     of C, every row one of C's, stored transposed: Args::c_transposed);
//   * the producer copies raw stage st + 1 (cp.async) and decodes stage st
//     (128 k) into shared memory, in the layout wgmma reads
//     (nibble/cuda/detail/gemm_wgmma_layout.h); named barriers hand the
//     decoded buffers back and forth (two on the E4M3 datapath, three on the
//     scaled one: wgmma::RingOf), so the decode of stage st runs while the
//     consumers compute stage st - 1 (or st - 2);
//   * the wgmma of a k-block (C = 0, then chained for 32-wide blocks) gives
//     the block's partial sums exactly, by the argument of gemm_mma_sync.cu's
//     FP16 path (the products of a block are integer multiples of one power of two, and
//     the sum stays below 2^21 of them).
// Two datapaths:
//   * E4M3 scales on both operands (kFoldB): A as the FP16 integers q (its
//     units), B as the FP16 values q * sb * 2^lsb_b, so the wgmma gives
//     P' = P * 2^lsb_b * sb; the epilogue is acc = fma(P', sa * 2^lsb_a, acc):
//     the fused multiply-add forms P * 2^u * fl(sa * sb) exactly (E4M3
//     scales: sa * sb is exact) and rounds once, so it is golden's
//     acc = fl(acc + r), and A's scale costs no instruction of its own. The
//     producer decodes B and A's scales; the consumers decode their own A
//     fragments from the raw stage into registers (wgmma's register-A form),
//     and run each block as kParts n-parts of m64n32k16 with kDepth of them in
//     flight while they add another (consume_e4m3);
//   * every other pair (FP32, UE8M0 or mixed scales): A and B as their values
//     q * 2^lsb, so the wgmma gives P' = P * 2^u exactly, and the epilogue is
//     golden's three roundings, s = fl(sa * sb), r = fl(P' * s),
//     acc = fl(acc + r). The producer decodes B and both operands' scales (to
//     binary32, into the raw stage; binary32 scales of blocks one k-block
//     wide need only B's moved, kFp32Scales); the consumers decode their A
//     fragments and run the E4M3 datapath's n-part pipeline (consume_scaled).
// UE8M0 scales on both operands whose codes all lie in [wgmma::kFmaCodeLo,
// kFmaCodeHi] make s a power of two and r exact, so the product and the add
// are one FMA, acc = fma(P', s, acc); where B's codes also fold into its FP16
// values (wgmma::ue8m0_fold_codes) the pair runs the E4M3 datapath, A and B as
// their values, sb folded into B and sa the epilogue's factor; where A's fold
// and B's do not, the same with the operands swapped (C^T = B A^T, each output
// the same sum of the same block products in the same k order), C stored
// transposed. A check kernel reads both operands' scale codes first, on the
// call's stream, and every CTA picks its datapath from the verdict
// (with_fma_check, wgmma_gemm_kernel_ue8m0): the E4M3 datapath on the
// operands or on them swapped, the scaled one with FMAs, or the scaled one.
// Measured: docs/results/kernels.md#design-choices-measured.
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <map>
#include <mutex>
#include <stdexcept>
#include <type_traits>
#include <utility>

#include "gemm_mma.cuh"
#include "gemm_stage.cuh"
#include "gemm_wgmma.h"
#include "nibble/cuda/check.h"
#include "nibble/cuda/detail/gemm_wgmma_layout.h"
#include "nibble/cuda/quant_math.h"

#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define NIBBLE_WGMMA 1
#else
#define NIBBLE_WGMMA 0
#endif

namespace nibble::cuda::detail {
namespace {

using mma_sync::kLutEntries;
using mma_sync::kStageBytes;
using mma_sync::kStages;

// ---- wgmma ---------------------------------------------------------------------

// D (64 x 32, FP32) = A (64 x 16, four f16x2 registers per thread) * B (16 x
// 32, FP16 in shared memory, K-major, described by nibble/cuda/detail/gemm_wgmma_layout.h)
// [+ D]: one n-part of a consumer of either datapath (wgmma::TileShape).
// kAccumulate = false: D = A * B (scale-d 0: D is only written); true:
// D += A * B. D is a read-write operand either way: each partial-sum array
// then keeps one set of registers from wgmma to wgmma, which is what lets
// ptxas keep a wgmma in flight while other instructions read the other arrays.
template <bool kAccumulate>
__device__ __forceinline__ void wgmma_rs(float (&d)[16], const uint32_t (&a)[4], uint64_t desc_b) {
  asm volatile(
      "wgmma.mma_async.sync.aligned.m64n32k16.f32.f16.f16 "
      "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15}, {%16,%17,%18,%19}, %20, %21, 1, 1, 0;\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
        "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc_b), "n"(kAccumulate ? 1 : 0));
}

__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
template <int kPending>
__device__ __forceinline__ void wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(kPending) : "memory");
}
// Pins the registers of d at this point of the program: reads of a wgmma's
// result stay after its wait, and no write moves past the wgmma.
template <int kN>
__device__ __forceinline__ void fence_operand(float (&d)[kN]) {
#pragma unroll
  for (int i = 0; i < kN; ++i) asm volatile("" : "+f"(d[i])::"memory");
}
// Shared-memory writes by ordinary stores, made visible to wgmma's reads.
__device__ __forceinline__ void fence_proxy_async() { asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory"); }

__device__ __forceinline__ uint32_t hmul2_bits(uint32_t x, uint32_t s) {
  const __half2 r = __hmul2(*reinterpret_cast<const __half2*>(&x), *reinterpret_cast<const __half2*>(&s));
  return *reinterpret_cast<const uint32_t*>(&r);
}

// One 16-k slice of a row of B (16 codes, two words) to its two 16-byte
// chunks of FP16 (the k-halves), through the FP16 table `high`, in the k
// order of A's register fragments (nibble/cuda/detail/gemm_wgmma_layout.h);
// kFoldB: each value times the half2 sb.
template <bool kFoldB>
__device__ __forceinline__ void decode_slice(uint32_t w0, uint32_t w1, const uint32_t (&high)[4], uint32_t sb,
                                             uint4 (&chunk)[2]) {
  uint32_t pairs[8];  // pair p: codes 2p, 2p + 1 of the slice, as half2
#pragma unroll
  for (int word = 0; word < 2; ++word) {
    uint32_t h[4];
    wgmma::decode_codes8_half(word == 0 ? w0 : w1, high, h);
#pragma unroll
    for (int j = 0; j < 4; ++j) pairs[4 * word + j] = kFoldB ? hmul2_bits(h[j], sb) : h[j];
  }
#pragma unroll
  for (int half = 0; half < 2; ++half) {
    chunk[half] = make_uint4(pairs[wgmma::chunk_pair(half, 0)], pairs[wgmma::chunk_pair(half, 1)],
                             pairs[wgmma::chunk_pair(half, 2)], pairs[wgmma::chunk_pair(half, 3)]);
  }
}

// Decodes row n of B of a stage (the consumers decode A themselves), in two
// passes of 32 raw bytes (two 16-byte loads each; kPasses 2: both, from pass
// 0; 1: pass pass0 alone, where two threads share the row), per 16-k slice
// two chunks of 8 codes (the k-halves), through B's FP16 table
// (g.b.half_high), in the k order of A's register fragments
// (nibble/cuda/detail/gemm_wgmma_layout.h). E4M3 datapath (kFoldB): as units * sb *
// 2^lsb_b (the slice's scale from lut_b; with UE8M0 scales folded the table
// is of values and lut_b of sb alone, the same product); scaled datapath: as
// its values, units * 2^lsb_b. Every slice of the passes is decoded (no
// branch between them); those past the last k-block (the last stage's
// padding) are then overwritten with zeros: the consumers run whole stages.
template <bool kFoldB, int kPasses>
__device__ __forceinline__ void decode_row(const Args& g, const uint8_t* stage, int n, int pass0, uint8_t* dec,
                                           const uint32_t* lut_b, int slices) {
  constexpr int kOp = 1;  // B
  constexpr int kPassSlices = wgmma::kSlices / 2;  // a pass: half the row, 32 raw bytes
  static_assert(kPasses == 1 || kPasses == 2, "the whole row, or one half");
  const Operand& o = g.b;
#pragma unroll
  for (int p = 0; p < kPasses; ++p) {
    const int pass = pass0 + p;
    uint32_t w[2 * kPassSlices];
#pragma unroll
    for (int c = 0; c < 2; ++c) {
      const uint4 q = *reinterpret_cast<const uint4*>(stage + code_offset(kOp, n, 32 * pass + 16 * c));
      w[4 * c] = q.x;
      w[4 * c + 1] = q.y;
      w[4 * c + 2] = q.z;
      w[4 * c + 3] = q.w;
    }
    uint32_t sb[kPassSlices];
    if constexpr (kFoldB) {
#pragma unroll
      for (int i = 0; i < kPassSlices; ++i) {
        const int s = kPassSlices * pass + i;
        sb[i] = lut_b[stage[scale_offset(kOp, n) + ((s * wgmma::kSliceK) >> o.block_cols_log2)]];
      }
    }
#pragma unroll
    for (int i = 0; i < kPassSlices; ++i) {
      const int s = kPassSlices * pass + i;
      uint4 chunk[2];
      decode_slice<kFoldB>(w[2 * i], w[2 * i + 1], o.half_high, kFoldB ? sb[i] : 0u, chunk);
#pragma unroll
      for (int half = 0; half < 2; ++half) *reinterpret_cast<uint4*>(dec + wgmma::decoded_offset(n, s, half)) = chunk[half];
    }
  }
  for (int s = kPasses == 2 ? slices : max(slices, kPassSlices * pass0); s < kPassSlices * (pass0 + kPasses); ++s) {
    *reinterpret_cast<uint4*>(dec + wgmma::decoded_offset(n, s, 0)) = make_uint4(0u, 0u, 0u, 0u);
    *reinterpret_cast<uint4*>(dec + wgmma::decoded_offset(n, s, 1)) = make_uint4(0u, 0u, 0u, 0u);
  }
}

// ---- B decoded once per call (wgmma::predecode_b) -------------------------------
// Thread (row n, slice s of the call's k) writes what decode_row writes for
// it on the scaled datapath: the slice's codes as they lie in the raw stage
// (zero past the row's codes_ld bytes and past B's rows), decoded to their
// FP16 values, and zero for slices past the last k-block.
__global__ void predecode_b_kernel(const Operand b, int64_t rows, int64_t stages, int64_t k_blocks, int step,
                                   uint8_t* out) {
  constexpr int kSlicesPerStage = wgmma::kSlices;
  const int64_t items = rows * stages * kSlicesPerStage;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < items;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t slice = i % (stages * kSlicesPerStage), n = i / (stages * kSlicesPerStage);
    const int64_t st = slice / kSlicesPerStage;
    const int s = static_cast<int>(slice % kSlicesPerStage);
    const int64_t byte = slice * (wgmma::kSliceK / 2);  // of the row's codes
    uint4 chunk[2] = {make_uint4(0u, 0u, 0u, 0u), make_uint4(0u, 0u, 0u, 0u)};
    if (slice * wgmma::kSliceK < k_blocks * step) {  // a slice of the data
      uint2 w = make_uint2(0u, 0u);
      if (n < b.rows && byte < b.codes_ld) w = *reinterpret_cast<const uint2*>(b.codes + n * b.codes_ld + byte);
      decode_slice<false>(w.x, w.y, b.half_high, 0u, chunk);
    }
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      *reinterpret_cast<uint4*>(out + wgmma::predecoded_offset(rows, st, n, s, half)) = chunk[half];
    }
  }
}

// The scaled datapath multiplies the operands' values: each code's FP16 value
// with its format's unit folded in, high bytes only (operand_of's table is the
// E4M3 datapath's, without the unit).
void use_scaled_values(const DeviceQuantized& q, Operand& o) {
  if (!wgmma::half_high_table(q.config.format, o.half_high, lsb_exp(q.config.format))) {
    throw std::logic_error("gemm: a code's value needs the low byte of its FP16");
  }
}

void launch_predecode_b(const Operand& b, int64_t rows, int64_t stages, int64_t k_blocks, int step, int sms,
                        uint8_t* out, cudaStream_t stream) {
  const int64_t items = rows * stages * wgmma::kSlices;
  constexpr int kThreads = 256;
  const int64_t blocks = std::min<int64_t>((items + kThreads - 1) / kThreads, int64_t{sms} * 16);
  predecode_b_kernel<<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(b, rows, stages, k_blocks, step, out);
  NIBBLE_CUDA_CHECK_LAUNCH("predecode_b_kernel");
}

// The producer's copy of stage st of the decoded B of a tile's rows n0.. into
// decoded buffer `dst`: per atom, its S::kCols rows of 128 bytes as they lie.
template <class S>
__device__ __forceinline__ void copy_decoded_b(const Args& g, int64_t n0, int st, uint8_t* dst) {
  constexpr int kAtoms = kBK / wgmma::kAtomK;
  constexpr int kBytes = S::kCols * 128;  // of an atom
  static_assert(kBytes % (16 * wgmma::kProducerThreads) == 0, "whole 16-byte copies per thread");
  const int tid = static_cast<int>(threadIdx.x);
#pragma unroll
  for (int atom = 0; atom < kAtoms; ++atom) {
    const uint8_t* src = g.b_decoded + ((static_cast<int64_t>(st) * kAtoms + atom) * g.b_decoded_rows + n0) * 128;
    uint8_t* to = dst + atom * wgmma::kAtomBytes;
#pragma unroll
    for (int i = 16 * tid; i < kBytes; i += 16 * wgmma::kProducerThreads) cp_async_16(to + i, src + i, true);
  }
}

// ---- the scaled datapath (every scale pair but E4M3 x E4M3) ----------------------
// The producer decodes row t's scales of A and B for every k-block of the
// stage to binary32, into the raw stage (layout: nibble/cuda/detail/gemm_wgmma_layout.h),
// 0 past the last k-block (blocks: those holding data). A row's window is
// read whole before it is overwritten; B's words land in the code rows'
// padding, which no other thread reads before the consumers.
template <int kStep>
__device__ __forceinline__ void decode_scales(const Args& g, uint8_t* stage, int t, const uint32_t* lut_a,
                                              const uint32_t* lut_b, int blocks) {
  constexpr int kBlocks = kBK / kStep;
  uint32_t sa[kBlocks], sb[kBlocks];
#pragma unroll
  for (int bi = 0; bi < kBlocks; ++bi) {
    sa[bi] = scale_word(stage + scale_offset(0, t), (bi * kStep) >> g.a.block_cols_log2, g.a.scale_bytes, lut_a);
    sb[bi] = scale_word(stage + scale_offset(1, t), (bi * kStep) >> g.b.block_cols_log2, g.b.scale_bytes, lut_b);
  }
#pragma unroll
  for (int bi = 0; bi < kBlocks; ++bi) {
    *reinterpret_cast<uint32_t*>(stage + wgmma::a_scale_offset(t, bi)) = bi < blocks ? sa[bi] : 0u;
    *reinterpret_cast<uint32_t*>(stage + wgmma::b_scale_offset(bi, t)) = bi < blocks ? sb[bi] : 0u;
  }
}

// decode_scales where both operands have binary32 scales and blocks kStep
// wide (kFp32Scales: one scale per k-block, its word the operand's own): A's
// window already holds word bi at wgmma::a_scale_offset(t, bi), so only its
// blocks past the last k-block are zeroed (the last stage); B's window is
// loaded whole and its words moved to their padding slots (0 past the last
// k-block).
template <int kStep>
__device__ __forceinline__ void fp32_scales(uint8_t* stage, int t, int blocks) {
  constexpr int kBlocks = kBK / kStep;
  static_assert(kBlocks % 4 == 0, "a stage's window is whole 16-byte loads");
  uint32_t sb[kBlocks];
#pragma unroll
  for (int i = 0; i < kBlocks / 4; ++i) {
    const uint4 w = *reinterpret_cast<const uint4*>(stage + scale_offset(1, t) + 16 * i);
    sb[4 * i] = w.x;
    sb[4 * i + 1] = w.y;
    sb[4 * i + 2] = w.z;
    sb[4 * i + 3] = w.w;
  }
#pragma unroll
  for (int bi = 0; bi < kBlocks; ++bi) {
    *reinterpret_cast<uint32_t*>(stage + wgmma::b_scale_offset(bi, t)) = bi < blocks ? sb[bi] : 0u;
  }
  if (blocks < kBlocks) {
#pragma unroll
    for (int bi = 0; bi < kBlocks; ++bi) {
      if (bi >= blocks) *reinterpret_cast<uint32_t*>(stage + wgmma::a_scale_offset(t, bi)) = 0u;
    }
  }
}

// The binary32 A scales of k-block bi for rows row0 and row0 + 8.
__device__ __forceinline__ void a_scales_decoded(const uint8_t* stage, int bi, int row0, float (&sa)[2]) {
  sa[0] = *reinterpret_cast<const float*>(stage + wgmma::a_scale_offset(row0, bi));
  sa[1] = *reinterpret_cast<const float*>(stage + wgmma::a_scale_offset(row0 + 8, bi));
}

// Decoded buffer buf holds B at buf * kDecodedBytes on both datapaths (A
// comes from registers); on the E4M3 datapath its decoded A scales go to the
// room after the two (the scaled datapath keeps both scales in the raw stage).
__host__ __device__ constexpr int e4m3_a_scales_offset(int buf) { return (2 + buf) * wgmma::kDecodedBytes; }
static_assert(wgmma::kAScaleBytes <= wgmma::kDecodedBytes, "a stage's A scales fit a decoded buffer's room");

// The E4M3 datapath's A scales of a stage, decoded by producer thread t (row
// t of A): dec(s) * 2^lsb_a per k-block, 0 past the last k-block, into the
// layout the consumers load in pairs of rows (wgmma::a_scale_word).
template <int kChunks>
__device__ __forceinline__ void decode_a_scales(const Args& g, const uint8_t* stage, int t, const uint32_t* lut_a,
                                                int blocks, uint8_t* dst) {
  constexpr int kBlocksPerStage = kBK / (kChunks * wgmma::kSliceK);
#pragma unroll
  for (int bi = 0; bi < kBlocksPerStage; ++bi) {
    const uint32_t word = lut_a[stage[scale_offset(0, t) + ((bi * kChunks * wgmma::kSliceK) >> g.a.block_cols_log2)]];
    *reinterpret_cast<uint32_t*>(dst + 4 * wgmma::a_scale_word(bi, t)) = bi < blocks ? word : 0u;
  }
}

// ---- warp specialization ---------------------------------------------------------
// Named barriers (0 is __syncthreads): kFull + buf, the producer's decoded
// stage in buffer buf is ready (and its raw stage has landed); kEmpty + buf,
// the consumers are done with it (and with the raw stage they read); kProducer,
// the producer warpgroup's own (every copy of a raw stage has landed).
// Room for three decoded buffers (kBufs).
constexpr int kFull = 1;
constexpr int kEmpty = 4;
constexpr int kProducer = 7;
// The diagnostic builds below make one side's bar.arrive a bar.sync, never both.
#if NIBBLE_WGMMA_SYNC_HANDBACK && NIBBLE_WGMMA_SYNC_READY
#error "NIBBLE_WGMMA_SYNC_HANDBACK and NIBBLE_WGMMA_SYNC_READY together deadlock"
#endif
// Registers per thread after the split (setmaxnreg). Both datapaths: the
// producer decodes B, the consumers hold acc, kParts partial sums of 16 and
// two blocks' A fragments (about 160); the producer also holds its copies'
// sources (but the scaled datapath's with other scales than binary32), the
// scaled consumers a part's B scales. The CTA starts
// with kLaunchRegs per thread (the register file over 384 threads, in
// setmaxnreg's steps of 8); what the producer gives back is all the
// consumers can take: setmaxnreg.inc waits until the CTA's pool has it.
// Scaled datapath: 104 / 200 for 16-wide blocks, 120 / 192 for 32-wide ones,
// each the faster of the two splits for its width
// (docs/results/kernels.md#design-choices-measured), though ptxas -v then
// shows the 32-wide consumers spilling 24 bytes (8 at 104 / 200);
// kFp32Scales runs the same splits. No other role
// spills. Half tiles take the same splits: their consumers hold half the
// sums, and no role spills.
constexpr int kLaunchRegs = 65536 / wgmma::kThreads / 8 * 8;
template <bool kFoldB, int kStep>
struct RoleRegs {
  static constexpr bool kScaled16 = !kFoldB && kStep == 16;
  static constexpr int kProducer = kFoldB ? 152 : (kScaled16 ? 104 : 120);
  static constexpr int kConsumer = kFoldB ? 176 : (kScaled16 ? 200 : 192);
  static_assert(wgmma::kProducerThreads * kProducer + wgmma::kConsumerThreads * kConsumer <=
                    wgmma::kThreads * kLaunchRegs,
                "the consumers take no more registers than the producer gives back");
};

__device__ __forceinline__ void bar_sync(int id, int count) {
  asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(count) : "memory");
}
__device__ __forceinline__ void bar_arrive(int id, int count) {
  asm volatile("bar.arrive %0, %1;\n" ::"r"(id), "r"(count) : "memory");
}
template <int kRegs>
__device__ __forceinline__ void set_max_regs_dec() {
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(kRegs));
}
template <int kRegs>
__device__ __forceinline__ void set_max_regs_inc() {
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(kRegs));
}

// ---- persistent CTAs (the schedule: nibble/cuda/detail/gemm_wgmma_layout.h) ---------------------
using wgmma::Schedule;
using wgmma::Segment;
using wgmma::Tiles;

// The decoded buffers of a datapath's ring (wgmma::RingOf): the E4M3
// datapath's decoded A scales take the room of two more, so it runs two; the
// scaled datapath runs three, its fourth raw stage in the last room.
template <bool kFoldB>
inline constexpr int kBufs = kFoldB ? 2 : 3;

// Raw stage `raw` of a ring: the first kStages at the start of shared memory,
// a three-buffer ring's fourth in decoded buffer wgmma::kFourthRawSlot's room.
template <class Byte>
__device__ __forceinline__ Byte* raw_stage(Byte* smem, Byte* decoded, int raw) {
  return raw < kStages ? smem + raw * kStageBytes : decoded + wgmma::kFourthRawSlot * wgmma::kDecodedBytes;
}

// The consumers' side of the ring: each stage they are done with goes back to
// the producer (wgmma::consumers_hand_back). The named barriers count the CTA's
// threads, wgmma::kThreads.
template <int kB>
struct ConsumerRing : wgmma::RingOf<kB> {
  int cta_stages;
  __device__ __forceinline__ explicit ConsumerRing(const Schedule& sched) : cta_stages(sched.total_stages()) {}
  __device__ __forceinline__ void hand_back() {
    const int buf = this->buf;
    if (wgmma::consumers_hand_back<kB>(this->stage, cta_stages)) {
#if NIBBLE_WGMMA_SYNC_HANDBACK
      // A diagnostic build (-DNIBBLE_WGMMA_SYNC_HANDBACK=1 in CMAKE_CUDA_FLAGS): the
      // consumers wait at the barrier instead of arriving, a full rendezvous with the
      // producer's wait for this buffer, so compute-sanitizer's racecheck sees the
      // hand-back as a synchronization whether or not it models arrive/sync pairs.
      // Slower, same results; the producer never waits at kFull, so this cannot deadlock.
      bar_sync(kEmpty + buf, wgmma::kThreads);
#else
      bar_arrive(kEmpty + buf, wgmma::kThreads);
#endif
    }
    this->advance();
  }
};

// The k-blocks of stage st that hold data (the last stage may be short).
template <int kBlocksPerStage>
__device__ __forceinline__ int stage_blocks(const Args& g, int64_t st) {
  const int64_t left = g.k_blocks - st * kBlocksPerStage;
  return left < kBlocksPerStage ? static_cast<int>(left) : kBlocksPerStage;
}

// The producer warpgroup: copies raw stage G + 1 of the CTA's stage count G
// while it decodes stage G into decoded buffer G % kBufs, once the consumers
// are done with stage G - kBufs (its decoded buffer, and the raw buffer stage
// G + 1 goes into); stage G + 1 is the next tile's first where G is a tile's
// last.
// Thread t takes row t: B's row (the consumers decode A themselves, from the
// raw stage) and the scales (E4M3 datapath: A's alone; scaled: both, or with
// binary32 scales of kStep-wide blocks, kFp32Scales, B's moved and the padding
// zeroed). The producer holds its copies' sources in registers, but where the
// scaled datapath decodes other scale widths, whose producer works them out
// per stage (holding them there measured slower for mx-floor). On half
// tiles (64 columns: S::kCols) threads t and t + 64 decode the two
// halves of B's row t % 64, and the stage holds 64 rows of B and of its
// scales (StageCopies' kBRows).
template <class S, int kStep, bool kFoldB, bool kFp32Scales>
__device__ __forceinline__ void produce(const Args& g, const Tiles& tiles, uint8_t* smem, uint8_t* decoded,
                                        const uint32_t* lut_a, const uint32_t* lut_b) {
  constexpr int kCta = wgmma::kThreads;
  constexpr int kChunks = kStep / wgmma::kSliceK;
  constexpr int kBlocksPerStage = kBK / kStep;
  constexpr int kPasses = 2 * S::kCols / wgmma::kProducerThreads;  // of each row of B this thread decodes
  static_assert(!(kFoldB && kFp32Scales), "kFp32Scales is a case of the scaled datapath");
  using Copies = std::conditional_t<kFoldB || kFp32Scales, StageCopies<wgmma::kProducerThreads, S::kCols>,
                                    StageLoads<wgmma::kProducerThreads, S::kCols>>;
  const int tid = static_cast<int>(threadIdx.x);
  const int b_row = tid % S::kCols, b_pass0 = kPasses == 2 ? 0 : tid / S::kCols;
  const Schedule sched(tiles, g.split_per, static_cast<int>(blockIdx.x), static_cast<int>(gridDim.x));
  const int segments = sched.segments();
  if (segments > 0 && tiles.stages > 0) {
    const Segment s = sched.segment(0);
    Copies(g, tiles.m0(s.tile), tiles.n0(s.tile)).issue(g, smem, static_cast<int64_t>(s.k0) * kBK);
  }
  cp_async_commit();
  wgmma::RingOf<kBufs<kFoldB>> ring;
  for (int i = 0; i < segments; ++i) {
    // The tile's copies, unchanged over the segment's stages (the compiler
    // may keep what they work out from it); its first stage is already issued.
    const Segment s = sched.segment(i);
    const Copies copies(g, tiles.m0(s.tile), tiles.n0(s.tile));
    for (int st = s.k0; st < s.k1; ++st) {
      if (wgmma::producer_waits<kBufs<kFoldB>>(ring.stage)) bar_sync(kEmpty + ring.buf, kCta);
      if (!kFoldB && g.b_decoded != nullptr) {  // B decoded once: this stage's, into its free buffer
        copy_decoded_b<S>(g, tiles.n0(s.tile), st, decoded + ring.buf * wgmma::kDecodedBytes);
        cp_async_commit();
      }
      uint8_t* next = raw_stage(smem, decoded, ring.next_raw());
      if (st + 1 < s.k1) {
        copies.issue(g, next, static_cast<int64_t>(st + 1) * kBK);
      } else if (i + 1 < segments) {
        const Segment n = sched.segment(i + 1);
        Copies(g, tiles.m0(n.tile), tiles.n0(n.tile)).issue(g, next, static_cast<int64_t>(n.k0) * kBK);
      }
      cp_async_commit();
      cp_async_wait<1>();  // this thread's copies of stage G (and of its decoded B) have landed
      bar_sync(kProducer, wgmma::kProducerThreads);  // every producer thread's have
      uint8_t* stage = raw_stage(smem, decoded, ring.raw);
      const int blocks = stage_blocks<kBlocksPerStage>(g, st);
      if (kFoldB || g.b_decoded == nullptr) {
        decode_row<kFoldB, kPasses>(g, stage, b_row, b_pass0, decoded + ring.buf * wgmma::kDecodedBytes, lut_b,
                                    blocks * kChunks);
      }
      if constexpr (kFoldB) {
        decode_a_scales<kChunks>(g, stage, tid, lut_a, blocks, decoded + e4m3_a_scales_offset(ring.buf));
      } else if constexpr (kFp32Scales) {
        fp32_scales<kStep>(stage, tid, blocks);
      } else {
        decode_scales<kStep>(g, stage, tid, lut_a, lut_b, blocks);
      }
      fence_proxy_async();  // the decoded stage, written by ordinary stores, visible to the consumers' wgmmas
#if NIBBLE_WGMMA_SYNC_READY
      // The other diagnostic build (-DNIBBLE_WGMMA_SYNC_READY=1): the producer waits at
      // kFull with the consumers instead of arriving, so racecheck sees the ready signal
      // as a rendezvous too. Not with NIBBLE_WGMMA_SYNC_HANDBACK: both waiting deadlocks
      // (the consumers wait at stage G's hand-back while the producer waits at G + 1's).
      bar_sync(kFull + ring.buf, kCta);
#else
      bar_arrive(kFull + ring.buf, kCta);  // also: raw stage G has landed (the consumers read A there)
#endif
      ring.advance();
    }
  }
  cp_async_wait<0>();
}

using wgmma::ConsumerPlace;
using wgmma::FullTile;
using wgmma::HalfTile;
using wgmma::kPartRegs;

// This thread's place among the consumers.
__device__ __forceinline__ ConsumerPlace consumer_thread() {
  return wgmma::consumer_place(static_cast<int>(threadIdx.x) - wgmma::kProducerThreads);
}

// A consumer thread's outputs of tile `tile` (store_outputs), where the call's
// C has them: transposed where g's operands are the call's swapped.
template <class S>
__device__ __forceinline__ void store_tile(const Args& g, const Tiles& tiles, int tile, const ConsumerPlace& c,
                                           const float (&acc)[S::kAcc]) {
  const auto& fragments = reinterpret_cast<const float(&)[1][S::kCols / 8][4]>(acc);
  const int64_t m0 = tiles.m0(tile) + c.warp_row, n0 = tiles.n0(tile);
  if (g.c_transposed) {
    store_outputs<true>(g, fragments, m0, n0, c.group, c.quad);
  } else {
    store_outputs<false>(g, fragments, m0, n0, c.group, c.quad);
  }
}

// ---- the E4M3 datapath's consumers -------------------------------------------------
// A consumer thread's A fragments of k-block bi: one per 16-k slice, gathered
// from the raw stage (one word of each of its two rows, one permute) and
// decoded to A's FP16 units in registers (nibble/cuda/detail/gemm_wgmma_layout.h).
template <int kChunks>
__device__ __forceinline__ void a_fragments(const Args& g, const uint8_t* stage, int row0, int quad, int bi,
                                            uint32_t (&a)[kChunks][4]) {
#pragma unroll
  for (int c = 0; c < kChunks; ++c) {
    const int slice = bi * kChunks + c;
    const uint32_t x = load_u32(stage + wgmma::a_fragment_offset(row0, slice, quad));
    const uint32_t y = load_u32(stage + wgmma::a_fragment_offset(row0 + 8, slice, quad));
    wgmma::decode_a_fragment(math::byte_perm(x, y, wgmma::a_fragment_selector(quad)), g.a.half_high, a[c]);
  }
}

// The n-part pipeline (wgmma::TileShape: kParts n-parts) keeps kParts - 1 of them
// in flight while the CUDA cores add another.
template <int kParts>
inline constexpr int kDepth = kParts - 1;

// wgmma_wait<n> for an n (below kDepth) known once the loop around it is
// unrolled.
template <int kDepthT>
__device__ __forceinline__ void wgmma_wait_for(int pending) {
  static_assert(kDepthT <= 3, "wgmma_wait_for names every count below kDepth");
  switch (pending) {
    case 0: wgmma_wait<0>(); break;
    case 1: wgmma_wait<1>(); break;
    case 2: wgmma_wait<2>(); break;
    default: wgmma_wait<kDepthT>(); break;
  }
}

// The wgmma(s) of an n-part of k-block bi into q, one commit group: kChunks
// wgmmas of 16 k, the first with C = 0, the next adding. The caller has
// fenced. desc_b: the stage's descriptor of the part's rows of B.
template <int kChunks>
__device__ __forceinline__ void issue_part(float (&q)[kPartRegs], const uint32_t (&a)[kChunks][4], uint64_t desc_b,
                                           int bi) {
  wgmma_rs<false>(q, a[0], desc_b + wgmma::slice_step(bi * kChunks));
  if constexpr (kChunks == 2) wgmma_rs<true>(q, a[1], desc_b + wgmma::slice_step(bi * kChunks + 1));
  wgmma_commit();
}

// acc[kPartRegs part + j] = fma(q[j], sa of the output's row, ...): the
// contract's add of one n-part of a block (the m64n32k16 accumulator layout:
// element j is row group + 8 ((j / 2) % 2), column 8 (j / 4) + 2 quad + j % 2
// of the part).
template <int kAcc>
__device__ __forceinline__ void add_part(float (&acc)[kAcc], int part, float (&q)[kPartRegs], const float (&sa)[2]) {
  fence_operand(q);
#pragma unroll
  for (int j = 0; j < kPartRegs; ++j) {
    acc[kPartRegs * part + j] = __fmaf_rn(q[j], sa[(j / 2) % 2], acc[kPartRegs * part + j]);
  }
}

// ---- the n-part pipeline both datapaths' consumers run ----------------------------

// acc and the kParts partial-sum buffers, zeroed.
template <int kAcc, int kParts>
__device__ __forceinline__ void zero_sums(float (&acc)[kAcc], float (&q)[kParts][kPartRegs]) {
#pragma unroll
  for (int j = 0; j < kAcc; ++j) acc[j] = 0.0f;
#pragma unroll
  for (int p = 0; p < kParts; ++p) {
#pragma unroll
    for (int j = 0; j < kPartRegs; ++j) q[p][j] = 0.0f;
  }
}

// A stage's start: the parts' descriptors of decoded buffer buf's B (the
// tile's columns, the same for both warpgroups), the wait for the producer to
// fill it, block 0's A fragments, and the stage's first kDepth steps issued.
template <int kChunks, int kParts>
__device__ __forceinline__ void start_stage(const Args& g, const uint8_t* stage, uint32_t dec_base, int buf,
                                            const ConsumerPlace& c, uint32_t (&a)[2][kChunks][4],
                                            float (&q)[kParts][kPartRegs], uint64_t (&desc)[kParts]) {
  const uint32_t dec_b = dec_base + static_cast<uint32_t>(buf * wgmma::kDecodedBytes);
#pragma unroll
  for (int p = 0; p < kParts; ++p) desc[p] = wgmma::rows_descriptor(dec_b, wgmma::part_col0(p));
  bar_sync(kFull + buf, wgmma::kThreads);
  a_fragments<kChunks>(g, stage, c.row0, c.quad, 0, a[0]);
#pragma unroll
  for (int t = 0; t < kDepth<kParts>; ++t) {
    wgmma_fence();
    issue_part<kChunks>(q[t], a[0], desc[t], 0);
  }
}

// Step t's move: issue step t + kDepth (decoding its block's A fragments at
// its first part), then wait until step t's wgmma has completed.
template <int kChunks, int kSteps, int kParts>
__device__ __forceinline__ void advance(const Args& g, const uint8_t* stage, const ConsumerPlace& c, int t,
                                        uint32_t (&a)[2][kChunks][4], float (&q)[kParts][kPartRegs],
                                        const uint64_t (&desc)[kParts]) {
  constexpr int kDepthP = kDepth<kParts>;
  const int tn = t + kDepthP;
  if (tn < kSteps) {
    const int bn = tn / kParts, pn = tn % kParts;
    if (pn == 0) a_fragments<kChunks>(g, stage, c.row0, c.quad, bn, a[bn % 2]);
    wgmma_fence();
    issue_part<kChunks>(q[pn], a[bn % 2], desc[pn], bn);
    wgmma_wait<kDepthP>();
  } else {
    wgmma_wait_for<kDepthP>(kSteps - 1 - t);
  }
}

// ---- the ordered split's hand-over of partial sums (wgmma::Schedule) -------------
// A head segment leaves its consumers' sums in its CTA's slot of the
// workspace and then raises the slot's flag; the tail of the same tile, on
// the CTA before it, waits for the flag, lowers it again (every call leaves
// the flags as it found them, zero) and resumes from the sums. Each
// consumer thread keeps its own outputs in both CTAs (the same place in the
// tile), so its sums go to and come from its own words, one coalesced
// access per register. The sums pass through L2 only (st.cg, ld.cg).
constexpr int kConsumersOnly = 8;  // named barrier of the consumer warpgroups alone

__device__ __forceinline__ uint32_t load_acquire(const uint32_t* p) {
  uint32_t v;
  asm volatile("ld.acquire.gpu.global.u32 %0, [%1];\n" : "=r"(v) : "l"(p) : "memory");
  return v;
}
__device__ __forceinline__ void store_release(uint32_t* p, uint32_t v) {
  asm volatile("st.release.gpu.global.u32 [%0], %1;\n" ::"l"(p), "r"(v) : "memory");
}

template <int kAcc>
__device__ __forceinline__ void hand_off(const Args& g, int slot, const float (&acc)[kAcc]) {
  const int ctid = static_cast<int>(threadIdx.x) - wgmma::kProducerThreads;
  float* sums = g.split_sums + static_cast<int64_t>(slot) * wgmma::kSplitSlotFloats;
#pragma unroll
  for (int j = 0; j < kAcc; ++j) __stcg(sums + j * wgmma::kConsumerThreads + ctid, acc[j]);
  bar_sync(kConsumersOnly, wgmma::kConsumerThreads);  // every consumer's sums are written
  if (ctid == 0) {
    __threadfence();
    store_release(g.split_flags + slot, 1u);
  }
}

template <int kAcc>
__device__ __forceinline__ void resume_from(const Args& g, int slot, float (&acc)[kAcc]) {
  const int ctid = static_cast<int>(threadIdx.x) - wgmma::kProducerThreads;
  if (ctid == 0) {
    while (load_acquire(g.split_flags + slot) == 0u) __nanosleep(256);
    g.split_flags[slot] = 0u;
  }
  bar_sync(kConsumersOnly, wgmma::kConsumerThreads);
  const float* sums = g.split_sums + static_cast<int64_t>(slot) * wgmma::kSplitSlotFloats;
#pragma unroll
  for (int j = 0; j < kAcc; ++j) acc[j] = __ldcg(sums + j * wgmma::kConsumerThreads + ctid);
}

// A segment's start: acc zero, or the head's sums for a tail; the partial
// sums q zero.
template <int kAcc, int kParts>
__device__ __forceinline__ void start_segment(const Args& g, const Schedule& sched, const Segment& s,
                                              float (&acc)[kAcc], float (&q)[kParts][kPartRegs]) {
  zero_sums(acc, q);
  if (s.resume) resume_from(g, sched.cta + 1, acc);
}

// A segment's end: the tile's outputs stored, or a head's sums handed off.
template <class S>
__device__ __forceinline__ void end_segment(const Args& g, const Tiles& tiles, const Schedule& sched,
                                            const Segment& s, const ConsumerPlace& c, const float (&acc)[S::kAcc]) {
  if (s.handoff) {
    hand_off(g, sched.cta, acc);
  } else {
    store_tile<S>(g, tiles, s.tile, c, acc);
  }
}

// ---- the scaled datapath's consumers ---------------------------------------------

// A thread's B scales of one n-part: one per two of its kPartRegs outputs
// (a column's two rows share it).
constexpr int kPartScales = kPartRegs / 2;

// The B scales of n-part `part` of k-block bi for this thread's columns:
// sb[2 i' + e] of column wgmma::part_col(c, part, 4 i' + e), one 16-byte load
// per 16 columns (wgmma::part_scale_slot).
__device__ __forceinline__ void b_scales_of_part(const uint8_t* stage, int bi, int part, const ConsumerPlace& c,
                                                 float (&sb)[kPartScales]) {
  const int m0 = wgmma::part_scale_slot(part);
#pragma unroll
  for (int h = 0; h < kPartScales / 4; ++h) {
    const float4 w = *reinterpret_cast<const float4*>(stage + wgmma::b_scales_offset(bi, c.quad, m0 + h));
    sb[4 * h] = w.x;
    sb[4 * h + 1] = w.y;
    sb[4 * h + 2] = w.z;
    sb[4 * h + 3] = w.w;
  }
}

// Golden's three roundings per output and block, for one n-part: s =
// fl(sa * sb), r = fl(P' * s) (P' = P * 2^(lsb_a + lsb_b), exact from the
// wgmma of the operands' values), acc = fl(acc + r); kFma (UE8M0 scales
// whose codes all pass wgmma::fma_scale_code): r is exact, and the step is
// acc = fma(P', s, acc). Element j of the part is row row0 + 8 ((j / 2) % 2),
// column 8 (j / 4) + 2 quad + j % 2 of the part.
template <bool kFma, int kAcc>
__device__ __forceinline__ void add_part_scaled(float (&acc)[kAcc], int part, float (&q)[kPartRegs],
                                                const float (&sa)[2], const float (&sb)[kPartScales]) {
  fence_operand(q);
#pragma unroll
  for (int j = 0; j < kPartRegs; ++j) {
    float& a = acc[kPartRegs * part + j];
    const float s = __fmul_rn(sa[(j / 2) % 2], sb[2 * (j / 4) + j % 2]);
    a = kFma ? __fmaf_rn(q[j], s, a) : __fadd_rn(a, __fmul_rn(q[j], s));
  }
}

// The scales step u of a stage needs (the A scales at a block's first part),
// into buffers u % 2 (B) and its block's % 2 (A).
template <int kParts>
__device__ __forceinline__ void scales_of_step(const uint8_t* stage, int u, const ConsumerPlace& c,
                                               float (&sa)[2][2], float (&sb)[2][kPartScales]) {
  const int bi = u / kParts, part = u % kParts;
  if (part == 0) a_scales_decoded(stage, bi, c.row0, sa[bi % 2]);
  b_scales_of_part(stage, bi, part, c, sb[u % 2]);
}

// A consumer warpgroup of the scaled datapath (its 64 x S::kCols outputs:
// ConsumerPlace): the E4M3 consumers' pipeline (below: A's fragments decoded
// into registers, n-parts with kDepth in flight, no data-dependent exit),
// with both scales applied per output. As there, a stage's last step is
// added at the top of the next stage, once that stage's first kDepth wgmmas
// are issued, so the tensor cores do not wait for those adds; its scales,
// which lie in the raw stage the producer may then overwrite, go with it in
// registers (sa_last, sb_last); deferring that step measured faster for
// UFP4's FP32 1x16 (docs/results/kernels.md#design-choices-measured). Blocks
// past the data have zero B and zero
// scales (the producer writes them), so they add a zero (acc is never -0: it
// starts at +0 and a sum is -0 only from two -0; with kFma, fma(0, 0, acc) is
// acc as well), and so does the deferred step before a tile's first stage (q
// and the carried scales zero).
template <class S, int kStep, bool kFma>
__device__ __forceinline__ void consume_scaled(const Args& g, const Tiles& tiles, const uint8_t* smem,
                                               const uint8_t* decoded) {
  constexpr int kParts = S::kParts;
  constexpr int kChunks = kStep / wgmma::kSliceK;
  constexpr int kSteps = kBK / kStep * kParts;
  // 16-wide blocks load each step's scales a step ahead, so that the shared
  // loads' latency hides behind a step (faster for FP32 1x16). A 32-wide
  // block's steps take twice the mma, and the same measured slower for
  // mx-floor 1x32 (docs/results/kernels.md#design-choices-measured).
  constexpr bool kScalesAhead = kStep == 16;
  const ConsumerPlace c = consumer_thread();
  const uint32_t dec_base = static_cast<uint32_t>(__cvta_generic_to_shared(decoded));
  const Schedule sched(tiles, g.split_per, static_cast<int>(blockIdx.x), static_cast<int>(gridDim.x));
  ConsumerRing<kBufs<false>> ring(sched);

  const int segments = sched.segments();
  for (int i = 0; i < segments; ++i) {
    const Segment seg = sched.segment(i);
    float acc[S::kAcc];
    float q[kParts][kPartRegs];
    start_segment(g, sched, seg, acc, q);
    uint32_t a[2][kChunks][4];
    // The scales of the previous stage's last step, whose add waits for the
    // next stage's first kDepth wgmmas to be issued (+0 before the first).
    float sa_last[2] = {0.0f, 0.0f};
    float sb_last[kPartScales] = {};

    for (int st = seg.k0; st < seg.k1; ++st) {
      const int buf = ring.buf;
      const uint8_t* stage = raw_stage(smem, decoded, ring.raw);
      uint64_t desc[kParts];
      start_stage<kChunks>(g, stage, dec_base, buf, c, a, q, desc);
      wgmma_wait<kDepth<kParts>>();  // no wait (kDepth are pending), but ptxas then knows the last buffer is complete
      add_part_scaled<kFma>(acc, kParts - 1, q[kParts - 1], sa_last, sb_last);
      float sa[2][2];  // by block, and by step: two buffers, for the loads a step ahead
      float sb[2][kPartScales];
      if (kScalesAhead) scales_of_step<kParts>(stage, 0, c, sa, sb);
#pragma unroll
      for (int t = 0; t < kSteps; ++t) {
        const int bi = t / kParts, part = t % kParts;
        if (!kScalesAhead) {
          scales_of_step<kParts>(stage, t, c, sa, sb);
        } else if (t + 1 < kSteps) {
          scales_of_step<kParts>(stage, t + 1, c, sa, sb);
        }
        advance<kChunks, kSteps>(g, stage, c, t, a, q, desc);
        if (t + 1 < kSteps) {
          add_part_scaled<kFma>(acc, part, q[part], sa[bi % 2], sb[t % 2]);
        } else {
#pragma unroll
          for (int i = 0; i < 2; ++i) sa_last[i] = sa[bi % 2][i];
#pragma unroll
          for (int i = 0; i < kPartScales; ++i) sb_last[i] = sb[t % 2][i];
        }
      }
      // Every wgmma reading decoded buffer buf has completed, and this stage's
      // raw scales are read (the last step's are in registers): the producer
      // may overwrite both.
      ring.hand_back();
    }
    add_part_scaled<kFma>(acc, kParts - 1, q[kParts - 1], sa_last, sb_last);
    end_segment<S>(g, tiles, sched, seg, c, acc);
  }
}

// A consumer warpgroup of the E4M3 datapath (its 64 x S::kCols outputs:
// ConsumerPlace). A stage is kBlocksPerStage * kParts steps, step t being
// n-part t % kParts of k-block t / kParts, into buffer q[t % kParts]:
// step t issues step t + kDepth, waits for step t's wgmma and adds it, so the
// tensor cores always hold kDepth parts while the CUDA cores add. A's
// fragments of a block are decoded here (from the raw stage, into registers)
// just before its first part is issued; A's scales come from the producer.
// Blocks past the data (the last stage's padding) have zero B operands and
// a zero A scale, so they add +0, and every stage runs the same steps: the
// loop body has no data-dependent exits. A stage ends with every wgmma waited
// for (ptxas serializes all of them if one is in flight across the loop's
// back edge); its last step's adds run at the top of the next stage, once
// that stage's first kDepth steps are issued.
template <class S, int kStep>
__device__ __forceinline__ void consume_e4m3(const Args& g, const Tiles& tiles, const uint8_t* smem,
                                             const uint8_t* decoded) {
  constexpr int kParts = S::kParts;
  constexpr int kChunks = kStep / wgmma::kSliceK;
  constexpr int kSteps = kBK / kStep * kParts;
  static_assert(kDepth<kParts> < kParts, "a step's buffer is free again when it is issued");
  const ConsumerPlace c = consumer_thread();
  const uint32_t dec_base = static_cast<uint32_t>(__cvta_generic_to_shared(decoded));
  const Schedule sched(tiles, g.split_per, static_cast<int>(blockIdx.x), static_cast<int>(gridDim.x));
  ConsumerRing<kBufs<true>> ring(sched);

  const int segments = sched.segments();
  for (int i = 0; i < segments; ++i) {
    const Segment seg = sched.segment(i);
    float acc[S::kAcc];
    float q[kParts][kPartRegs];
    start_segment(g, sched, seg, acc, q);
    float sa_last[2] = {0.0f, 0.0f};  // A scales of the previous stage's last block
    uint32_t a[2][kChunks][4];

    for (int st = seg.k0; st < seg.k1; ++st) {
      const int buf = ring.buf;
      const uint8_t* stage = raw_stage(smem, decoded, ring.raw);
      const uint8_t* a_scales = decoded + e4m3_a_scales_offset(buf);
      uint64_t desc[kParts];
      start_stage<kChunks>(g, stage, dec_base, buf, c, a, q, desc);
      wgmma_wait<kDepth<kParts>>();  // no wait (kDepth are pending), but ptxas then knows the last buffer is complete
      add_part(acc, kParts - 1, q[kParts - 1], sa_last);  // the previous stage's last step (+0 before the first)
      float sa[2];
#pragma unroll
      for (int t = 0; t < kSteps; ++t) {
        const int bi = t / kParts, part = t % kParts;
        if (part == 0) {
          const float2 s2 = *reinterpret_cast<const float2*>(a_scales + 4 * wgmma::a_scale_word(bi, c.row0));
          sa[0] = s2.x;
          sa[1] = s2.y;
        }
        advance<kChunks, kSteps>(g, stage, c, t, a, q, desc);
        if (t + 1 < kSteps) {
          add_part(acc, part, q[part], sa);
        } else {
          sa_last[0] = sa[0];
          sa_last[1] = sa[1];
        }
      }
      // Every wgmma reading this stage's decoded B has completed, and its raw
      // codes and decoded scales are read: the producer may overwrite them.
      ring.hand_back();
    }
    add_part(acc, kParts - 1, q[kParts - 1], sa_last);
    end_segment<S>(g, tiles, sched, seg, c, acc);
  }
}

// The verdict fma_check_kernel writes for a UE8M0 pair: the bits of what
// fails, 0 where every code of both operands lies in the FMA's range and
// every code of each operand folds (wgmma::ue8m0_fold_codes).
constexpr uint32_t kOutsideFma = 1u;
constexpr uint32_t kOutsideFoldB = 2u;
constexpr uint32_t kOutsideFoldA = 4u;

// The datapath the wgmma kernel takes for a verdict on g's operands: golden's three
// roundings outside the FMA's range; inside it, B's scales folded where B's
// codes fold, else A's where A's do and `fold_a` (the operands swapped, C
// stored transposed: the launch allows it where that order's tiles take no
// more waves), else the scaled datapath adding by FMAs. The kernel and
// gemm_wgmma_ue8m0_path both ask here.
__host__ __device__ constexpr Ue8m0Path ue8m0_path(uint32_t verdict, bool fold_a) {
  return (verdict & kOutsideFma) != 0u               ? Ue8m0Path::kRoundings
         : (verdict & kOutsideFoldB) == 0u           ? Ue8m0Path::kFolded
         : (verdict & kOutsideFoldA) == 0u && fold_a ? Ue8m0Path::kFoldedA
                                                     : Ue8m0Path::kFma;
}

// One CTA's GEMM on one datapath: kFoldB, the E4M3 datapath (kUe8m0: its
// case of UE8M0 scales folded into B, A and B as their values); otherwise
// the scaled datapath (kFp32Scales: its binary32 case; kFmaAdds: its FMA
// epilogue), on tiles of shape S.
template <class S, int kStep, bool kFoldB, bool kFp32Scales, bool kFmaAdds, bool kUe8m0>
__device__ __forceinline__ void gemm_cta(const Args& g, uint8_t* smem) {
  constexpr int kCta = wgmma::kThreads;
  // Decoded stages [buffer][A, B], aligned to the swizzle's 1 KiB period.
  const uint32_t raw_end = static_cast<uint32_t>(__cvta_generic_to_shared(smem + kStages * kStageBytes));
  uint8_t* decoded = smem + kStages * kStageBytes + ((1024u - raw_end % 1024u) % 1024u);
  uint32_t* lut_a = reinterpret_cast<uint32_t*>(decoded + 4 * wgmma::kDecodedBytes);
  uint32_t* lut_b = lut_a + kLutEntries;
  const Tiles tiles(g.a.rows, g.b.rows, g.k, S::kRows, S::kCols);
  // A grid of half tiles sized for the call's other operand order
  // (wgmma_gemm_kernel_ue8m0) may hold CTAs without a tile: they leave at
  // once, all their threads together.
  if constexpr (S::kHalf) {
    if (static_cast<int>(blockIdx.x) >= tiles.count) return;
  }

  // Scale tables. E4M3 datapath: A's as binary32 dec(s) * 2^lsb_a (the
  // epilogue's factor), B's as half2 of dec(s) * 2^lsb_b (exact: see gemm_mma_sync.cu);
  // with UE8M0 scales (kUe8m0) the operands' tables are their values, and the
  // scales' tables dec(s) alone. Scaled datapath: the binary32 dec(s) of each
  // operand's scale format, which the producer reads (FP32 scales do not use
  // them).
  for (int code = static_cast<int>(threadIdx.x); code < kLutEntries; code += kCta) {
    if constexpr (kFoldB) {
      constexpr ScaleFormat kFormat = kUe8m0 ? ScaleFormat::kUE8M0 : ScaleFormat::kE4M3;
      const float dec = math::decode_scale_code(kFormat, static_cast<uint32_t>(code));
      lut_a[code] = __float_as_uint(kUe8m0 ? dec : __fmul_rn(dec, g.a.unit));
      const __half2 hb = __float2half2_rn(kUe8m0 ? dec : __fmul_rn(dec, g.b.unit));
      lut_b[code] = *reinterpret_cast<const uint32_t*>(&hb);
    } else {
      lut_a[code] = __float_as_uint(math::decode_scale_code(g.a.scale_format, static_cast<uint32_t>(code)));
      lut_b[code] = __float_as_uint(math::decode_scale_code(g.b.scale_format, static_cast<uint32_t>(code)));
    }
  }
  __syncthreads();

  if (threadIdx.x < wgmma::kProducerThreads) {
    set_max_regs_dec<RoleRegs<kFoldB, kStep>::kProducer>();
    produce<S, kStep, kFoldB, kFp32Scales>(g, tiles, smem, decoded, lut_a, lut_b);
  } else {
    set_max_regs_inc<RoleRegs<kFoldB, kStep>::kConsumer>();
    if constexpr (kFoldB) {
      consume_e4m3<S, kStep>(g, tiles, smem, decoded);
    } else {
      consume_scaled<S, kStep, kFmaAdds>(g, tiles, smem, decoded);
    }
  }
}

template <class S, int kStep, bool kFoldB, bool kFp32Scales>
__global__ void __launch_bounds__(wgmma::kThreads, 1) wgmma_gemm_kernel(const Args g) {
#if NIBBLE_WGMMA
  extern __shared__ __align__(128) uint8_t smem[];
  gemm_cta<S, kStep, kFoldB, kFp32Scales, false, false>(g, smem);
#else
  __trap();  // no wgmma in this build; gemm_wgmma_runs keeps every call away
#endif
}

// UE8M0 scales on both operands: g's tables the operands' values (the scaled
// datapath's), gt the same call with its operands swapped (C^T = B A^T), and
// *outside fma_check_kernel's verdict on g's operands, from which every CTA
// picks its datapath (ue8m0_path, fold_a): B's scales folded (the E4M3
// datapath's kernel, gemm_cta's kUe8m0), A's folded (the same on gt), the
// scaled datapath adding by FMAs, or golden's three roundings.
template <class S, int kStep>
__global__ void __launch_bounds__(wgmma::kThreads, 1)
    wgmma_gemm_kernel_ue8m0(const Args g, const Args gt, const uint32_t* outside, bool fold_a) {
#if NIBBLE_WGMMA
  extern __shared__ __align__(128) uint8_t smem[];
  switch (ue8m0_path(*outside, fold_a)) {
    case Ue8m0Path::kFolded: gemm_cta<S, kStep, true, false, false, true>(g, smem); break;
    case Ue8m0Path::kFoldedA: gemm_cta<S, kStep, true, false, false, true>(gt, smem); break;
    case Ue8m0Path::kFma: gemm_cta<S, kStep, false, false, true, false>(g, smem); break;
    case Ue8m0Path::kRoundings: gemm_cta<S, kStep, false, false, false, false>(g, smem); break;
  }
#else
  __trap();  // no wgmma in this build; gemm_wgmma_runs keeps every call away
#endif
}

int sm_count() {
  int device = 0, sms = 0;
  NIBBLE_CUDA_CHECK(cudaGetDevice(&device));
  NIBBLE_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  return sms;
}

// Launches kernel(g, rest...) as persistent CTAs of tiles of shape S (Tiles)
// on a device of `sms` SMs: one per SM (one fits: its shared memory), or one
// per tile where there are fewer. swapped: g with its operands swapped where
// the kernel may run that instead (UE8M0 pairs), whose half tiles may number
// more; the grid takes the larger count.
template <class S, class... Params, class... Rest>
void launch_persistent(void (*kernel)(Params...), const Args& g, const Args* swapped, int sms, cudaStream_t stream,
                       const Rest&... rest) {
  NIBBLE_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, wgmma::kSmemBytes));
  int64_t tiles = wgmma::tile_count(g.a.rows, g.b.rows, S::kRows, S::kCols);
  if (swapped != nullptr) {
    tiles = std::max(tiles, wgmma::tile_count(swapped->a.rows, swapped->b.rows, S::kRows, S::kCols));
  }
  if (tiles == 0) return;  // no outputs
  const int64_t stages = mma_sync::k_stages(g.k);
  // The ordered split's CTAs (g.split_per > 0: a call of one tile shape, no
  // swapped order), or one per SM.
  const int64_t ctas = g.split_per > 0 ? wgmma::ordered_ctas(tiles, stages, g.split_per) : std::min<int64_t>(tiles, sms);
  if (!wgmma::counts_fit(tiles, ctas, stages) || g.split_per > INT32_MAX - 2) {
    throw std::invalid_argument("gemm: too many tiles and k-stages for one launch");  // Tiles' 32-bit counts
  }
  kernel<<<static_cast<unsigned>(ctas), wgmma::kThreads, wgmma::kSmemBytes, stream>>>(g, rest...);
  NIBBLE_CUDA_CHECK_LAUNCH("wgmma_gemm_kernel");
}

// half: half tiles (wgmma::TileShape).
template <int kStep, bool kFoldB, bool kFp32Scales = false>
void launch(const Args& g, bool half, int sms, cudaStream_t stream) {
  half ? launch_persistent<HalfTile>(&wgmma_gemm_kernel<HalfTile, kStep, kFoldB, kFp32Scales>, g, nullptr, sms, stream)
       : launch_persistent<FullTile>(&wgmma_gemm_kernel<FullTile, kStep, kFoldB, kFp32Scales>, g, nullptr, sms, stream);
}

// Whether a UE8M0 call whose kernel takes operands of m and n rows may run
// them swapped on the device (ue8m0_path's fold_a), on half tiles or full.
bool fold_a_fits(int64_t m, int64_t n, bool half, int sms) {
  return half ? wgmma::other_order_fits<HalfTile>(m, n, sms) : wgmma::other_order_fits<FullTile>(m, n, sms);
}

// gt: g with its operands swapped (its CTAs pick their datapath on the
// device; gt only where fold_a_fits).
template <int kStep>
void launch_ue8m0(const Args& g, const Args& gt, const uint32_t* outside, bool half, int sms, cudaStream_t stream) {
  const bool fold_a = fold_a_fits(g.a.rows, g.b.rows, half, sms);
  const Args* swapped = fold_a ? &gt : nullptr;
  half ? launch_persistent<HalfTile>(&wgmma_gemm_kernel_ue8m0<HalfTile, kStep>, g, swapped, sms, stream, gt, outside,
                                     fold_a)
       : launch_persistent<FullTile>(&wgmma_gemm_kernel_ue8m0<FullTile, kStep>, g, swapped, sms, stream, gt, outside,
                                     fold_a);
}

// ---- the UE8M0 check (wgmma::fma_scale_code, wgmma::ue8m0_fold_codes) --------------------------
// One operand's scale codes: `rows` rows of `cols` one-byte codes, `ld` bytes
// apart (a multiple of 16: fma_candidate), and the codes that fold into its
// values [fold_lo, fold_hi].
struct FmaCheckOperand {
  const uint8_t* scales;
  int64_t rows;
  int64_t cols;
  int64_t ld;
  uint32_t fold_lo;
  uint32_t fold_hi;
};
// The fold range per format (wgmma::ue8m0_fold_codes), worked out once: the
// check runs every call. {1, 0} where no code folds.
std::pair<uint32_t, uint32_t> fold_range(Format f) {
  static const auto ranges = [] {
    std::array<std::pair<uint32_t, uint32_t>, kAllFormats.size()> r{};
    for (Format format : kAllFormats) {
      auto& [lo, hi] = r[static_cast<size_t>(format)];
      if (!wgmma::ue8m0_fold_codes(format, lo, hi)) r[static_cast<size_t>(format)] = {1u, 0u};
    }
    return r;
  }();
  return ranges[static_cast<size_t>(f)];
}
FmaCheckOperand fma_check_operand(const DeviceQuantized& q) {
  const auto [fold_lo, fold_hi] = fold_range(q.config.format);
  return {q.scales.data(), q.scale_rows, q.scale_cols, q.scales_ld * q.scale_bytes, fold_lo, fold_hi};
}

// ORs into *outside kOutsideFma if a scale code of a (blockIdx.y 0) or b (1)
// lies outside the FMA's range, kOutsideFoldA or kOutsideFoldB if one lies
// outside its operand's fold range; codes past a row's last block (the
// padding) are not the operand's and are not read as codes. Each thread takes
// 16-byte chunks of rows.
__global__ void fma_check_kernel(FmaCheckOperand a, FmaCheckOperand b, uint32_t* outside) {
  const FmaCheckOperand o = blockIdx.y == 0 ? a : b;
  const int64_t chunks = (o.cols + 15) / 16;
  const int64_t items = o.rows * chunks;
  bool out_fma = false, out_fold = false;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < items;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t r = i / chunks, c = i % chunks;
    const uint4 w = *reinterpret_cast<const uint4*>(o.scales + r * o.ld + 16 * c);
    const uint32_t words[4] = {w.x, w.y, w.z, w.w};
    const int64_t codes = o.cols - 16 * c;  // of this row, from this chunk on
#pragma unroll
    for (int j = 0; j < 16; ++j) {
      const uint32_t code = (words[j / 4] >> (8 * (j % 4))) & 0xFFu;
      out_fma = out_fma || (j < codes && !wgmma::fma_scale_code(code));
      out_fold = out_fold || (j < codes && (code < o.fold_lo || code > o.fold_hi));
    }
  }
  const bool block_fma = __syncthreads_or(out_fma) != 0, block_fold = __syncthreads_or(out_fold) != 0;
  if (threadIdx.x == 0 && (block_fma || block_fold)) {
    const uint32_t fold_bit = blockIdx.y == 0 ? kOutsideFoldA : kOutsideFoldB;
    atomicOr(outside, (block_fma ? kOutsideFma : 0u) | (block_fold ? fold_bit : 0u));
  }
}

// Whether a call on this pair checks its scale codes for the FMA: UE8M0
// scales on both operands (one byte each, rows 16-byte aligned, as
// allocate_quantized lays them out), a device with stream-ordered memory
// pools (the verdict's word comes from one: with_fma_check), and at least
// wgmma::kFmaMinMacs multiply-adds.
bool fma_candidate(const DeviceQuantized& a, const DeviceQuantized& b) {
  for (const DeviceQuantized* q : {&a, &b}) {
    if (scale_format(q->config.scale) != ScaleFormat::kUE8M0 || q->scale_bytes != 1 || q->scales_ld % 16 != 0) {
      return false;
    }
  }
  if (static_cast<double>(a.rows) * static_cast<double>(b.rows) * static_cast<double>(a.cols) < wgmma::kFmaMinMacs) {
    return false;
  }
  int device = 0, pools = 0;
  NIBBLE_CUDA_CHECK(cudaGetDevice(&device));
  NIBBLE_CUDA_CHECK(cudaDeviceGetAttribute(&pools, cudaDevAttrMemoryPoolsSupported, device));
  return pools != 0;
}

// The verdict words' memory pool of `device`: the library's own, created on
// first use and kept, with what it has allocated held rather than given
// back at each synchronization, so that a call neither maps memory nor
// changes what is free between calls.
cudaMemPool_t fma_word_pool(int device) {
  static std::mutex mutex;
  static std::map<int, cudaMemPool_t> pools;
  const std::lock_guard<std::mutex> lock(mutex);
  const auto found = pools.find(device);
  if (found != pools.end()) return found->second;
  cudaMemPoolProps props{};
  props.allocType = cudaMemAllocationTypePinned;
  props.location.type = cudaMemLocationTypeDevice;
  props.location.id = device;
  cudaMemPool_t pool = nullptr;
  NIBBLE_CUDA_CHECK(cudaMemPoolCreate(&pool, &props));
  uint64_t keep = UINT64_MAX;
  NIBBLE_CUDA_CHECK(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep));
  pools.emplace(device, pool);
  return pool;
}

// Runs f(outside) on `stream` with `outside` the device word fma_check_kernel
// has written for the pair, taken from fma_word_pool for the call and given
// back after it (stream-ordered: calls on other streams take other words).
template <class F>
void with_fma_check(const DeviceQuantized& a, const DeviceQuantized& b, cudaStream_t stream, F&& f) {
  int device = 0;
  NIBBLE_CUDA_CHECK(cudaGetDevice(&device));
  void* word = nullptr;
  NIBBLE_CUDA_CHECK(cudaMallocFromPoolAsync(&word, sizeof(uint32_t), fma_word_pool(device), stream));
  auto* outside = static_cast<uint32_t*>(word);
  try {
    NIBBLE_CUDA_CHECK(cudaMemsetAsync(outside, 0, sizeof(uint32_t), stream));
    const FmaCheckOperand oa = fma_check_operand(a), ob = fma_check_operand(b);
    const int64_t items = std::max(oa.rows * ((oa.cols + 15) / 16), ob.rows * ((ob.cols + 15) / 16));
    constexpr int kThreads = 256;
    const int64_t blocks = std::min<int64_t>((items + kThreads - 1) / kThreads, 1024);
    if (blocks > 0) {
      fma_check_kernel<<<dim3(static_cast<unsigned>(blocks), 2), kThreads, 0, stream>>>(oa, ob, outside);
      NIBBLE_CUDA_CHECK_LAUNCH("fma_check_kernel");
    }
    f(outside);
  } catch (...) {
    cudaFreeAsync(word, stream);
    throw;
  }
  NIBBLE_CUDA_CHECK(cudaFreeAsync(word, stream));
}

}  // namespace

bool gemm_wgmma_decode_b(const DeviceQuantized& b, int step, DecodedB& out, cudaStream_t stream) {
  const ScaleFormat scales = scale_format(b.config.scale);
  if (!gemm_wgmma_runs(b, b) || scales == ScaleFormat::kE4M3 || scales == ScaleFormat::kUE8M0) return false;
  if (step != 16 && step != 32) throw std::invalid_argument("decode_b_ahead: the k-block width must be 16 or 32");
  if (step > block_cols(b.config.block)) {
    throw std::invalid_argument("decode_b_ahead: the k-block width is longer than b's blocks");
  }
  const int64_t bytes = wgmma::predecoded_bytes(b.rows, b.cols);
  if (bytes > wgmma::kPredecodeMaxBytes) return false;
  Operand o = operand_of(b);
  use_scaled_values(b, o);
  if (out.bytes.bytes() != static_cast<size_t>(bytes)) out.bytes = DeviceBuffer<uint8_t>(static_cast<size_t>(bytes));
  out.of = &b;
  out.step = step;
  out.rows = wgmma::predecoded_rows(b.rows);
  out.stages = mma_sync::k_stages(b.cols);
  launch_predecode_b(o, out.rows, out.stages, (b.cols + step - 1) / step, step, sm_count(), out.bytes.data(), stream);
  return true;
}

bool gemm_wgmma_runs(const DeviceQuantized& a, const DeviceQuantized& b) {
#ifndef NIBBLE_GEMM_WGMMA_BUILT
  return false;  // this nvcc has no sm_90a (kernels/CMakeLists.txt)
#endif
  int device = 0, major = 0, minor = 0;
  NIBBLE_CUDA_CHECK(cudaGetDevice(&device));
  NIBBLE_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
  NIBBLE_CUDA_CHECK(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device));
  return major == 9 && minor == 0;
}

namespace {

// The launch gemm_wgmma makes for a pair (the caller has checked gemm_wgmma_runs).
enum class Launch { kE4m3, kFp32, kUe8m0, kScaled };
Launch launch_of(const DeviceQuantized& a, const DeviceQuantized& b) {
  if (e4m3_scales(a, b)) return Launch::kE4m3;
  const int step = k_step(a, b);
  if (scale_format(a.config.scale) == ScaleFormat::kFP32 && scale_format(b.config.scale) == ScaleFormat::kFP32 &&
      block_cols(a.config.block) == step && block_cols(b.config.block) == step) {
    return Launch::kFp32;  // binary32 scales on both operands, one per k-block: fp32_scales
  }
  return fma_candidate(a, b) ? Launch::kUe8m0 : Launch::kScaled;
}

// How the wgmma kernel runs a call on a and b: its tiles (`tiles` where it names a shape,
// else wgmma::auto_tiles), and the operands in the kernel's order, swapped on
// 64 x 128 tiles (C then stored transposed).
// With a workspace (`split`), every launch but the UE8M0 pairs' (whose CTAs
// may run the call's operands in either order) may take the ordered split
// (wgmma::split_tiles: per, the units per CTA).
struct Plan {
  GemmTiles shape;
  bool swapped;
  const DeviceQuantized& first;
  const DeviceQuantized& second;
  int64_t per;
  bool half() const { return shape != GemmTiles::kFull; }
};
Plan plan_for(const DeviceQuantized& a, const DeviceQuantized& b, GemmTiles tiles, int sms, bool split = false) {
  const Launch how = launch_of(a, b);
  const int half_cost = how == Launch::kFp32 || how == Launch::kScaled ? wgmma::kHalfTileCostScaled
                                                                       : wgmma::kHalfTileCostE4m3;
  wgmma::TilePlan t{tiles != GemmTiles::kAuto ? tiles : wgmma::auto_tiles(a.rows, b.rows, sms, half_cost), 0};
  if (split && how != Launch::kUe8m0) t = wgmma::split_tiles(a.rows, b.rows, a.cols, sms, half_cost, tiles);
  const bool swapped = t.shape == GemmTiles::kWide;
  return {t.shape, swapped, swapped ? b : a, swapped ? a : b, t.per};
}

}  // namespace

wgmma::TilePlan gemm_wgmma_tiles(const DeviceQuantized& a, const DeviceQuantized& b, GemmTiles tiles,
                                 bool workspace) {
  const Plan p = plan_for(a, b, tiles, sm_count(), workspace);
  return {p.shape, p.per};
}

Ue8m0Path gemm_wgmma_ue8m0_path(const DeviceQuantized& a, const DeviceQuantized& b, GemmTiles tiles) {
  if (!gemm_wgmma_runs(a, b) || !fma_candidate(a, b)) return Ue8m0Path::kRoundings;
  const int sms = sm_count();
  const Plan p = plan_for(a, b, tiles, sms);
  uint32_t outside = kOutsideFma;
  with_fma_check(p.first, p.second, nullptr, [&](const uint32_t* word) {
    NIBBLE_CUDA_CHECK(cudaMemcpyAsync(&outside, word, sizeof outside, cudaMemcpyDeviceToHost, nullptr));
  });
  NIBBLE_CUDA_CHECK(cudaStreamSynchronize(nullptr));
  const bool fold_a = fold_a_fits(p.first.rows, p.second.rows, p.half(), sms);
  const Ue8m0Path path = ue8m0_path(outside, fold_a);  // wgmma_gemm_kernel_ue8m0's choice, on the kernel's order
  if (!p.swapped) return path;
  return path == Ue8m0Path::kFolded ? Ue8m0Path::kFoldedA : path == Ue8m0Path::kFoldedA ? Ue8m0Path::kFolded : path;
}

void gemm_wgmma(const DeviceQuantized& a, const DeviceQuantized& b, const OutputPtr& c, cudaStream_t stream,
                GemmTiles tiles, const GemmWorkspace& workspace) {
  const int sms = sm_count();
  const bool split = workspace.data != nullptr;
  if (split && static_cast<int64_t>(workspace.bytes) < wgmma::workspace_bytes(sms)) {
    throw std::invalid_argument("gemm: the workspace is smaller than gemm_workspace_bytes()");
  }
  const Plan p = plan_for(a, b, tiles, sms, split);
  const bool half = p.half();
  Args g = args_of(p.first, p.second, c);
  g.c_transposed = p.swapped;
  if (p.per > 0) {
    g.split_per = p.per;
    g.split_flags = static_cast<uint32_t*>(workspace.data);
    g.split_sums = reinterpret_cast<float*>(static_cast<uint8_t*>(workspace.data) + wgmma::split_flag_bytes(sms));
  }
  const bool step32 = k_step(a, b) == 32;
  const Launch how = launch_of(a, b);
  if (how == Launch::kE4m3) {
    step32 ? launch<32, true>(g, half, sms, stream) : launch<16, true>(g, half, sms, stream);
    return;
  }
  use_scaled_values(p.first, g.a);
  use_scaled_values(p.second, g.b);
  if (split && (how == Launch::kFp32 || how == Launch::kScaled) && wgmma::predecode_b(g.a.rows, g.b.rows, g.k)) {
    const int64_t rows = wgmma::predecoded_rows(g.b.rows), stages = mma_sync::k_stages(g.k);
    const DecodedB* ahead = workspace.b_decoded;
    if (ahead != nullptr && ahead->of == &p.second && ahead->step == k_step(a, b) && ahead->rows == rows &&
        ahead->stages == stages) {
      g.b_decoded = ahead->bytes.data();
    } else {
      auto* out = static_cast<uint8_t*>(workspace.data) + wgmma::split_workspace_bytes(sms);
      launch_predecode_b(g.b, rows, stages, g.k_blocks, k_step(a, b), sms, out, stream);
      g.b_decoded = out;
    }
    g.b_decoded_rows = rows;
  }
  if (how == Launch::kFp32) {
    step32 ? launch<32, false, true>(g, half, sms, stream) : launch<16, false, true>(g, half, sms, stream);
  } else if (how == Launch::kUe8m0) {
    Args gt = g;  // the operands swapped: the same call with g's A scales the ones to fold
    std::swap(gt.a, gt.b);
    gt.c_transposed = !g.c_transposed;
    with_fma_check(p.first, p.second, stream, [&](const uint32_t* outside) {
      step32 ? launch_ue8m0<32>(g, gt, outside, half, sms, stream)
             : launch_ue8m0<16>(g, gt, outside, half, sms, stream);
    });
  } else {
    step32 ? launch<32, false>(g, half, sms, stream) : launch<16, false>(g, half, sms, stream);
  }
}

}  // namespace nibble::cuda::detail
