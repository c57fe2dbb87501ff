// GEMM version 3: version 2's raw-code stages, with the per-block partial
// sums taken from the asynchronous warpgroup mma (wgmma, sm_90a) instead of
// mma.sync.
//
// The contract's cost on Hopper is the one binary32 add per output per
// k-block (docs/results/kernels.md): those adds alone take about as long as
// cuBLAS's whole BF16 GEMM. Version 2 spends about 3.3 instructions per add
// (mma.sync issue, fragment reads and decode of both operands per warp tile);
// version 3 takes the mma off the issue path, decodes each operand once per
// CTA, and gives the decode to warps of its own:
//   * CTA 128 x 128, one CTA per SM (227 KiB of shared memory), 384 threads:
//     a producer warpgroup and two consumer warpgroups of 64 x 128 outputs;
//     setmaxnreg gives the producer 88 registers, the consumers 208;
//   * the producer copies raw stage st + 1 (cp.async) and decodes stage st
//     (128 k) into shared memory, in the layout wgmma reads
//     (nibble/cuda/gemm_v3_layout.h); named barriers hand the two decoded
//     buffers back and forth, so the decode of stage st runs while the
//     consumers compute stage st - 1;
//   * per k-block, one m64n128k16 wgmma per 16 k (C = 0, then chained for
//     32-wide blocks) gives the block's partial sums exactly, by the argument
//     of gemm.cu's FP16 path (the products of a block are integer multiples
//     of one power of two, and the sum stays below 2^21 of them).
// Two datapaths:
//   * E4M3 scales on both operands (kFoldB): A decoded as the FP16 integers q
//     (its units), B as the FP16 values q * sb * 2^lsb_b, so the wgmma gives
//     P' = P * 2^lsb_b * sb; the epilogue is acc = fma(P', sa * 2^lsb_a, acc):
//     the fused multiply-add forms P * 2^u * fl(sa * sb) exactly (E4M3
//     scales: sa * sb is exact) and rounds once, so it is golden's
//     acc = fl(acc + r), and A's scale costs no instruction of its own.
//     K-blocks go in pairs: both wgmmas issued, the first block's adds run
//     while the tensor cores compute the second;
//   * every other pair (FP32, UE8M0 or mixed scales): A and B decoded as
//     their values q * 2^lsb, so the wgmma gives P' = P * 2^u exactly; the
//     producer also decodes the stage's scales to binary32, and the epilogue
//     is golden's three roundings, s = fl(sa * sb), r = fl(P' * s),
//     acc = fl(acc + r). One block at a time (see block_single); the other
//     consumer warpgroup's work fills the SM while a warpgroup waits.
// Measured (docs/results/kernels.md): on the E4M3 datapath the producer's
// decode is the critical path (the consumers wait for it about 40 % of their
// time); 1.23x to 1.25x faster than version 2.
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <stdexcept>

#include "gemm_mma.cuh"
#include "gemm_stage.cuh"
#include "gemm_v3.h"
#include "nibble/cuda/check.h"
#include "nibble/cuda/gemm_v3_layout.h"
#include "nibble/cuda/quant_math.h"

#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define NIBBLE_WGMMA 1
#else
#define NIBBLE_WGMMA 0
#endif

namespace nibble::cuda::detail {
namespace {

using v2::kLutEntries;
using v2::kStageBytes;
using v2::kStages;

// ---- wgmma ---------------------------------------------------------------------
// D (64 x 128, FP32) = A (64 x 16) * B (16 x 128) [+ D], both FP16 in shared
// memory, K-major, described by nibble/cuda/gemm_v3_layout.h. (A in registers
// would be decoded while the previous block's wgmma runs, and ptxas then
// serializes every wgmma.)
// kAccumulate = false: D = A * B (scale-d 0: D is only written, and its
// operands are outputs only, so the compiler does not treat the registers as
// read); true: D += A * B.
#define NIBBLE_WGMMA_M64N128K16                                                                  \
  "wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16 "                                         \
  "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31," \
  "%32,%33,%34,%35,%36,%37,%38,%39,%40,%41,%42,%43,%44,%45,%46,%47,%48,%49,%50,%51,%52,%53,%54,%55,%56,%57,%58,%59,%60,%61,%62,%63}, " \
  "%64, %65, %66, 1, 1, 0, 0;\n"
// The 64 accumulator operands, each with constraint C ("+f" or "=f").
#define NIBBLE_WGMMA_D64(C)                                                                                          \
  C(d[0]), C(d[1]), C(d[2]), C(d[3]), C(d[4]), C(d[5]), C(d[6]), C(d[7]), C(d[8]), C(d[9]), C(d[10]), C(d[11]),       \
      C(d[12]), C(d[13]), C(d[14]), C(d[15]), C(d[16]), C(d[17]), C(d[18]), C(d[19]), C(d[20]), C(d[21]), C(d[22]),    \
      C(d[23]), C(d[24]), C(d[25]), C(d[26]), C(d[27]), C(d[28]), C(d[29]), C(d[30]), C(d[31]), C(d[32]), C(d[33]),    \
      C(d[34]), C(d[35]), C(d[36]), C(d[37]), C(d[38]), C(d[39]), C(d[40]), C(d[41]), C(d[42]), C(d[43]), C(d[44]),    \
      C(d[45]), C(d[46]), C(d[47]), C(d[48]), C(d[49]), C(d[50]), C(d[51]), C(d[52]), C(d[53]), C(d[54]), C(d[55]),    \
      C(d[56]), C(d[57]), C(d[58]), C(d[59]), C(d[60]), C(d[61]), C(d[62]), C(d[63])
template <bool kAccumulate>
__device__ __forceinline__ void wgmma_m64n128k16(float (&d)[64], uint64_t desc_a, uint64_t desc_b) {
  if constexpr (kAccumulate) {
    asm volatile(NIBBLE_WGMMA_M64N128K16 : NIBBLE_WGMMA_D64("+f") : "l"(desc_a), "l"(desc_b), "n"(1));
  } else {
    asm volatile(NIBBLE_WGMMA_M64N128K16 : NIBBLE_WGMMA_D64("=f") : "l"(desc_a), "l"(desc_b), "n"(0));
  }
}
#undef NIBBLE_WGMMA_D64
#undef NIBBLE_WGMMA_M64N128K16

__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
template <int kPending>
__device__ __forceinline__ void wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(kPending) : "memory");
}
// Pins the registers of d at this point of the program: reads of a wgmma's
// result stay after its wait, and no write moves past the wgmma.
__device__ __forceinline__ void fence_operand(float (&d)[64]) {
#pragma unroll
  for (int i = 0; i < 64; ++i) asm volatile("" : "+f"(d[i])::"memory");
}
// Shared-memory writes by ordinary stores, made visible to wgmma's reads.
__device__ __forceinline__ void fence_proxy_async() { asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory"); }

__device__ __forceinline__ uint32_t hmul2_bits(uint32_t x, uint32_t s) {
  const __half2 r = __hmul2(*reinterpret_cast<const __half2*>(&x), *reinterpret_cast<const __half2*>(&s));
  return *reinterpret_cast<const uint32_t*>(&r);
}

// Operand kOp (0: A, 1: B) of g.
template <int kOp>
__device__ __forceinline__ const Operand& operand(const Args& g) {
  if constexpr (kOp == 0) {
    return g.a;
  } else {
    return g.b;
  }
}

// Decodes row n of operand kOp of a stage: its 64 raw bytes by four 16-byte
// loads, then per 16-k slice, two chunks of 8 codes (the k-halves), through
// the operand's FP16 table (o.half_high). E4M3 datapath (kFoldB): A as its
// units, B as units * sb * 2^lsb_b (the slice's scale from lut_b); scaled
// datapath: both as their values, units * 2^lsb. Slices past the last k-block
// are left alone.
template <int kOp, bool kFoldB>
__device__ __forceinline__ void decode_row(const Args& g, const uint8_t* stage, int n, uint8_t* dec,
                                           const uint32_t* lut_b, int slices) {
  constexpr bool kScaled = kOp == 1 && kFoldB;
  const Operand& o = operand<kOp>(g);
  uint32_t w[16];
#pragma unroll
  for (int c = 0; c < 4; ++c) {
    const uint4 q = *reinterpret_cast<const uint4*>(stage + code_offset(kOp, n, 16 * c));
    w[4 * c] = q.x;
    w[4 * c + 1] = q.y;
    w[4 * c + 2] = q.z;
    w[4 * c + 3] = q.w;
  }
  uint32_t sb[v3::kSlices];
  if constexpr (kScaled) {
#pragma unroll
    for (int s = 0; s < v3::kSlices; ++s) {
      sb[s] = lut_b[stage[scale_offset(kOp, n) + ((s * v3::kSliceK) >> o.block_cols_log2)]];
    }
  }
#pragma unroll
  for (int s = 0; s < v3::kSlices; ++s) {
    if (s >= slices) break;
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      uint32_t h[4];
      v3::decode_codes8_half(w[2 * s + half], o.half_high, h);
      if constexpr (kScaled) {
#pragma unroll
        for (int j = 0; j < 4; ++j) h[j] = hmul2_bits(h[j], sb[s]);
      }
      *reinterpret_cast<uint4*>(dec + v3::decoded_offset(n, s, half)) = make_uint4(h[0], h[1], h[2], h[3]);
    }
  }
}

// The wgmma(s) of k-block bi into p, one commit group: kChunks wgmmas of
// 16 k, the first with C = 0, the next adding. The caller has fenced.
// desc_a, desc_b: the stage's descriptors of this warpgroup's rows of A and
// of B at slice 0.
template <int kChunks>
__device__ __forceinline__ void issue_block(float (&p)[64], uint64_t desc_a, uint64_t desc_b, int bi) {
  const int s = bi * kChunks;
  wgmma_m64n128k16<false>(p, desc_a + v3::slice_step(s), desc_b + v3::slice_step(s));
  if constexpr (kChunks == 2) {
    wgmma_m64n128k16<true>(p, desc_a + v3::slice_step(s + 1), desc_b + v3::slice_step(s + 1));
  }
  wgmma_commit();
}

// The binary32 A scale of k-block bi for the thread's rows row0 and row0 + 8.
template <int kChunks>
__device__ __forceinline__ void a_scales(const Args& g, const uint8_t* stage, const uint32_t* lut_a, int bi,
                                         int row0, float (&sa)[2]) {
  const int col = (bi * kChunks * v3::kSliceK) >> g.a.block_cols_log2;
  sa[0] = __uint_as_float(lut_a[stage[scale_offset(0, row0) + col]]);
  sa[1] = __uint_as_float(lut_a[stage[scale_offset(0, row0 + 8) + col]]);
}

// acc = fma(p, sa of the output's row, acc): the contract's add of one block.
__device__ __forceinline__ void add_block(float (&acc)[64], float (&p)[64], const float (&sa)[2]) {
  fence_operand(p);
#pragma unroll
  for (int j = 0; j < 64; ++j) acc[j] = __fmaf_rn(p[j], sa[(j / 2) % 2], acc[j]);
}

// ---- the scaled datapath (every scale pair but E4M3 x E4M3) ----------------------
// The producer decodes row t's scales of A and B for every k-block of the
// stage to binary32, into the raw stage (layout: nibble/cuda/gemm_v3_layout.h).
// A row's window is read whole before it is overwritten; B's words land in
// the code rows' padding, which no other thread reads before the consumers.
template <int kStep>
__device__ __forceinline__ void decode_scales(const Args& g, uint8_t* stage, int t, const uint32_t* lut_a,
                                              const uint32_t* lut_b) {
  constexpr int kBlocks = kBK / kStep;
  uint32_t sa[kBlocks], sb[kBlocks];
#pragma unroll
  for (int bi = 0; bi < kBlocks; ++bi) {
    sa[bi] = scale_word(stage + scale_offset(0, t), (bi * kStep) >> g.a.block_cols_log2, g.a.scale_bytes, lut_a);
    sb[bi] = scale_word(stage + scale_offset(1, t), (bi * kStep) >> g.b.block_cols_log2, g.b.scale_bytes, lut_b);
  }
#pragma unroll
  for (int bi = 0; bi < kBlocks; ++bi) {
    *reinterpret_cast<uint32_t*>(stage + v3::a_scale_offset(t, bi)) = sa[bi];
    *reinterpret_cast<uint32_t*>(stage + v3::b_scale_offset(bi, t)) = sb[bi];
  }
}

// The binary32 A scales of k-block bi for rows row0 and row0 + 8.
__device__ __forceinline__ void a_scales_decoded(const uint8_t* stage, int bi, int row0, float (&sa)[2]) {
  sa[0] = *reinterpret_cast<const float*>(stage + v3::a_scale_offset(row0, bi));
  sa[1] = *reinterpret_cast<const float*>(stage + v3::a_scale_offset(row0 + 8, bi));
}

// Golden's three roundings per output and block: s = fl(sa * sb),
// r = fl(P' * s) (P' = P * 2^(lsb_a + lsb_b), exact from the wgmma of the
// operands' values), acc = fl(acc + r). Output j's column is
// 8 (j / 4) + 2 quad + j % 2 (one 8-byte load per column pair), its row
// row0 + 8 ((j / 2) % 2). Measured against two variants that issue fewer
// instructions and run slower (docs/results/kernels.md): each load's offset
// computed from constants, and every load issued before the wgmma wait.
__device__ __forceinline__ void add_block_scaled(float (&acc)[64], float (&p)[64], const float (&sa)[2],
                                                 const uint8_t* stage, int bi, int quad) {
  fence_operand(p);
#pragma unroll
  for (int i = 0; i < 16; ++i) {
    const float2 sb = *reinterpret_cast<const float2*>(stage + v3::b_scale_offset(bi, 8 * i + 2 * quad));
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      const int j = 4 * i + 2 * r;
      acc[j] = __fadd_rn(acc[j], __fmul_rn(p[j], __fmul_rn(sa[r], sb.x)));
      acc[j + 1] = __fadd_rn(acc[j + 1], __fmul_rn(p[j + 1], __fmul_rn(sa[r], sb.y)));
    }
  }
}

// K-blocks bi and bi + 1 of a stage (E4M3 datapath): both wgmmas issued,
// then block bi's adds run while the tensor cores compute block bi + 1.
// (Carrying a wgmma in flight past the next fence makes ptxas serialize them
// all, so each pair drains.)
template <int kChunks>
__device__ __forceinline__ void block_pair(const Args& g, const uint8_t* stage, const uint32_t* lut_a,
                                           uint64_t desc_a, uint64_t desc_b, int bi, int row0, float (&p0)[64],
                                           float (&p1)[64], float (&acc)[64]) {
  float sa0[2], sa1[2];
  a_scales<kChunks>(g, stage, lut_a, bi, row0, sa0);
  a_scales<kChunks>(g, stage, lut_a, bi + 1, row0, sa1);
  wgmma_fence();
  issue_block<kChunks>(p0, desc_a, desc_b, bi);
  issue_block<kChunks>(p1, desc_a, desc_b, bi + 1);
  wgmma_wait<1>();
  add_block(acc, p0, sa0);
  wgmma_wait<0>();
  add_block(acc, p1, sa1);
}

// One k-block: the E4M3 datapath's last block without a partner, and every
// block of the scaled datapath. (There, a second block in flight leaves too
// few registers: ptxas then hoists the B scale loads and spills. The other
// consumer warpgroup's wgmma runs while this one adds.)
template <int kChunks, bool kFoldB>
__device__ __forceinline__ void block_single(const Args& g, const uint8_t* stage, const uint32_t* lut_a,
                                             uint64_t desc_a, uint64_t desc_b, int bi, int row0, int quad,
                                             float (&p)[64], float (&acc)[64]) {
  float sa[2];
  if constexpr (kFoldB) {
    a_scales<kChunks>(g, stage, lut_a, bi, row0, sa);
  } else {
    a_scales_decoded(stage, bi, row0, sa);
  }
  wgmma_fence();
  issue_block<kChunks>(p, desc_a, desc_b, bi);
  wgmma_wait<0>();
  if constexpr (kFoldB) {
    add_block(acc, p, sa);
  } else {
    add_block_scaled(acc, p, sa, stage, bi, quad);
  }
}

// ---- warp specialization ---------------------------------------------------------
// Named barriers (0 is __syncthreads): kFull + buf, the producer's decoded
// stage in buffer buf is ready; kEmpty + buf, the consumers are done with it
// (and with the raw stage whose scales they read); kProducer, the producer
// warpgroup's own (every copy of a raw stage has landed).
constexpr int kFull = 1;
constexpr int kEmpty = 3;
constexpr int kProducer = 5;
// Registers per thread after the split (setmaxnreg): the producer holds a
// raw row (16) and its decode, the consumers acc and two blocks' partial sums
// (192). 128 * 88 + 256 * 208 = 64512 of the SM's 65536.
constexpr int kProducerRegs = 88;
constexpr int kConsumerRegs = 208;
static_assert(v3::kProducerThreads * kProducerRegs + v3::kConsumerThreads * kConsumerRegs <= 65536,
              "the register file holds both roles");

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

// The k-blocks of stage st that hold data (the last stage may be short).
template <int kBlocksPerStage>
__device__ __forceinline__ int stage_blocks(const Args& g, int64_t st) {
  const int64_t left = g.k_blocks - st * kBlocksPerStage;
  return left < kBlocksPerStage ? static_cast<int>(left) : kBlocksPerStage;
}

// The producer warpgroup: copies raw stage st + 1 while it decodes stage st
// (thread t: row t of A and of B) into decoded buffer st % 2, once the
// consumers are done with stage st - 2 (its decoded buffer, and the raw
// buffer stage st + 1 goes into).
template <int kStep, bool kFoldB>
__device__ __forceinline__ void produce(const Args& g, uint8_t* smem, uint8_t* decoded, const uint32_t* lut_a,
                                        const uint32_t* lut_b, int64_t m0, int64_t n0, int64_t stages) {
  constexpr int kChunks = kStep / v3::kSliceK;
  constexpr int kBlocksPerStage = kBK / kStep;
  const int tid = static_cast<int>(threadIdx.x);
  if (stages > 0) load_stage<v3::kProducerThreads>(g, smem, m0, n0, 0);
  cp_async_commit();
  for (int64_t st = 0; st < stages; ++st) {
    const int buf = static_cast<int>(st % 2);
    if (st >= 2) bar_sync(kEmpty + buf, v3::kThreads);
    if (st + 1 < stages) {
      load_stage<v3::kProducerThreads>(g, smem + ((st + 1) % kStages) * kStageBytes, m0, n0, (st + 1) * kBK);
    }
    cp_async_commit();
    cp_async_wait<1>();                           // this thread's copies of stage st have landed
    bar_sync(kProducer, v3::kProducerThreads);  // every producer thread's have
    uint8_t* stage = smem + (st % kStages) * kStageBytes;
    const int blocks = stage_blocks<kBlocksPerStage>(g, st);
    uint8_t* dec = decoded + buf * 2 * v3::kDecodedBytes;
    if constexpr (!kFoldB) decode_scales<kStep>(g, stage, tid, lut_a, lut_b);
    decode_row<0, kFoldB>(g, stage, tid, dec, lut_b, blocks * kChunks);
    decode_row<1, kFoldB>(g, stage, tid, dec + v3::kDecodedBytes, lut_b, blocks * kChunks);
    fence_proxy_async();  // the decoded stage, written by ordinary stores, visible to the consumers' wgmmas
    bar_arrive(kFull + buf, v3::kThreads);
  }
  cp_async_wait<0>();
}

// A consumer warpgroup (cwg 0 or 1: rows 64 cwg .. 64 cwg + 63 of the tile):
// per stage, the k-blocks (in pairs on the E4M3 datapath, one at a time on
// the scaled one), then the outputs.
template <int kStep, bool kFoldB>
__device__ __forceinline__ void consume(const Args& g, const uint8_t* smem, uint32_t dec_base,
                                        const uint32_t* lut_a, int64_t m0, int64_t n0, int64_t stages) {
  constexpr int kChunks = kStep / v3::kSliceK;
  constexpr int kBlocksPerStage = kBK / kStep;
  const int ctid = static_cast<int>(threadIdx.x) - v3::kProducerThreads;
  const int warp = ctid / 32;
  const int lane = ctid % 32;
  const int group = lane / 4;
  const int quad = lane % 4;
  const int cwg = warp / 4;
  const int warp_row = cwg * 64 + (warp % 4) * 16;  // this warp's 16 rows of the tile
  const int row0 = warp_row + group;

  float acc[64];
  float p0[64];
  float p1[64];
#pragma unroll
  for (int j = 0; j < 64; ++j) acc[j] = 0.0f;

  for (int64_t st = 0; st < stages; ++st) {
    const int buf = static_cast<int>(st % 2);
    bar_sync(kFull + buf, v3::kThreads);
    const uint8_t* stage = smem + (st % kStages) * kStageBytes;
    const int blocks = stage_blocks<kBlocksPerStage>(g, st);
    const uint32_t dec_a = dec_base + static_cast<uint32_t>(buf * 2 * v3::kDecodedBytes);
    const uint64_t desc_a = v3::rows_descriptor(dec_a, cwg * 64);
    const uint64_t desc_b = v3::rows_descriptor(dec_a + static_cast<uint32_t>(v3::kDecodedBytes), 0);
    if constexpr (kFoldB) {
#pragma unroll
      for (int bi = 0; bi < kBlocksPerStage; bi += 2) {
        if (bi + 1 < blocks) {
          block_pair<kChunks>(g, stage, lut_a, desc_a, desc_b, bi, row0, p0, p1, acc);
        } else {
          if (bi < blocks) block_single<kChunks, true>(g, stage, lut_a, desc_a, desc_b, bi, row0, quad, p0, acc);
          break;
        }
      }
    } else {
#pragma unroll
      for (int bi = 0; bi < kBlocksPerStage; ++bi) {
        if (bi >= blocks) break;
        block_single<kChunks, false>(g, stage, lut_a, desc_a, desc_b, bi, row0, quad, p0, acc);
      }
    }
    // Every wgmma reading buffer buf has completed (each block ends with a
    // wait for all): the producer may overwrite it, unless no stage is left
    // for it to write there.
    if (st + 2 < stages) bar_arrive(kEmpty + buf, v3::kThreads);
  }
  store_outputs(g, reinterpret_cast<const float(&)[1][16][4]>(acc), m0 + warp_row, n0, group, quad);
}

template <int kStep, bool kFoldB>
__global__ void __launch_bounds__(v3::kThreads, 1) wgmma_gemm_kernel(const Args g) {
#if NIBBLE_WGMMA
  extern __shared__ __align__(128) uint8_t smem[];
  // Decoded stages [buffer][A, B], aligned to the swizzle's 1 KiB period.
  const uint32_t raw_end = static_cast<uint32_t>(__cvta_generic_to_shared(smem + kStages * kStageBytes));
  uint8_t* decoded = smem + kStages * kStageBytes + ((1024u - raw_end % 1024u) % 1024u);
  uint32_t* lut_a = reinterpret_cast<uint32_t*>(decoded + 4 * v3::kDecodedBytes);
  uint32_t* lut_b = lut_a + kLutEntries;
  const int64_t m0 = static_cast<int64_t>(blockIdx.y) * kBM;
  const int64_t n0 = static_cast<int64_t>(blockIdx.x) * kBN;
  const int64_t stages = (g.k + kBK - 1) / kBK;

  // Scale tables. E4M3 datapath: A's as binary32 dec(s) * 2^lsb_a (the
  // epilogue's factor), B's as half2 of dec(s) * 2^lsb_b (exact: see gemm.cu).
  // Scaled datapath: the binary32 dec(s) of each operand's scale format, which
  // the producer reads (FP32 scales do not use them).
  for (int code = static_cast<int>(threadIdx.x); code < kLutEntries; code += v3::kThreads) {
    if constexpr (kFoldB) {
      const float dec = math::decode_scale_code(ScaleFormat::kE4M3, static_cast<uint32_t>(code));
      lut_a[code] = __float_as_uint(__fmul_rn(dec, g.a.unit));
      const __half2 hb = __float2half2_rn(__fmul_rn(dec, g.b.unit));
      lut_b[code] = *reinterpret_cast<const uint32_t*>(&hb);
    } else {
      lut_a[code] = __float_as_uint(math::decode_scale_code(g.a.scale_format, static_cast<uint32_t>(code)));
      lut_b[code] = __float_as_uint(math::decode_scale_code(g.b.scale_format, static_cast<uint32_t>(code)));
    }
  }
  __syncthreads();

  if (threadIdx.x < v3::kProducerThreads) {
    set_max_regs_dec<kProducerRegs>();
    produce<kStep, kFoldB>(g, smem, decoded, lut_a, lut_b, m0, n0, stages);
  } else {
    set_max_regs_inc<kConsumerRegs>();
    consume<kStep, kFoldB>(g, smem, static_cast<uint32_t>(__cvta_generic_to_shared(decoded)), lut_a, m0, n0, stages);
  }
#else
  __trap();  // no wgmma in this build; gemm_v3_runs keeps every call away
#endif
}

template <int kStep, bool kFoldB>
void launch(const Args& g, int64_t m, int64_t n, cudaStream_t stream) {
  auto* kernel = &wgmma_gemm_kernel<kStep, kFoldB>;
  NIBBLE_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, v3::kSmemBytes));
  const dim3 grid(static_cast<unsigned>((n + kBN - 1) / kBN), static_cast<unsigned>((m + kBM - 1) / kBM));
  if (grid.y > 65535u) throw std::invalid_argument("gemm: too many rows for one launch");
  kernel<<<grid, v3::kThreads, v3::kSmemBytes, stream>>>(g);
  NIBBLE_CUDA_CHECK_LAUNCH("wgmma_gemm_kernel");
}

}  // namespace

bool gemm_v3_runs(const DeviceQuantized& a, const DeviceQuantized& b) {
#ifndef NIBBLE_GEMM_V3_BUILT
  return false;  // this nvcc has no sm_90a (kernels/CMakeLists.txt)
#endif
  int device = 0, major = 0, minor = 0;
  NIBBLE_CUDA_CHECK(cudaGetDevice(&device));
  NIBBLE_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
  NIBBLE_CUDA_CHECK(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device));
  return major == 9 && minor == 0;
}

void gemm_v3(const DeviceQuantized& a, const DeviceQuantized& b, float* c, cudaStream_t stream) {
  Args g = args_of(a, b, c);
  const bool step32 = k_step(a, b) == 32;
  if (e4m3_scales(a, b)) {
    step32 ? launch<32, true>(g, a.rows, b.rows, stream) : launch<16, true>(g, a.rows, b.rows, stream);
    return;
  }
  // The scaled datapath multiplies the operands' values.
  if (!v3::half_high_table(a.config.format, g.a.half_high, lsb_exp(a.config.format)) ||
      !v3::half_high_table(b.config.format, g.b.half_high, lsb_exp(b.config.format))) {
    throw std::logic_error("gemm: a code's value needs the low byte of its FP16");
  }
  step32 ? launch<32, false>(g, a.rows, b.rows, stream) : launch<16, false>(g, a.rows, b.rows, stream);
}

}  // namespace nibble::cuda::detail
