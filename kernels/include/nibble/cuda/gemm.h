// The block-scaled GEMM on the GPU: C = A * B^T, bit for bit golden
// nibble::gemm (docs/numerics.md section 8), for every pair of formats, block
// shapes and scale modes golden accepts.
#pragma once

#include <cuda_runtime_api.h>

#include <array>
#include <cstdint>
#include <vector>

#include "nibble/cuda/quantize.h"

namespace nibble::cuda {

// The kernels, named by the tensor-core instruction they are built around
// (both compute the same bits; kernels/README.md says which runs where):
//   kMmaSync  warp-level mma.sync behind a cp.async multistage pipeline: 3
//             stages of 128 k of raw packed codes and scale codes in shared
//             memory, decoded in registers at the mma; CTA 128x128, 4 warps of
//             64x64, two CTAs per SM (kernels/src/gemm_mma_sync.cu). Runs on
//             every GPU of compute capability 8.0 and later.
//   kWgmma    warpgroup mma (wgmma, sm_90a), warp-specialized and persistent:
//             the mma.sync kernel's raw stages, each operand decoded once per
//             CTA by a producer warpgroup while two consumer warpgroups of
//             64x128 run the mma and the adds (kernels/src/gemm_wgmma.cu; on
//             128x64 tiles, where GemmTiles says, two of 64x64). E4M3 pairs:
//             the producer decodes B into shared memory with B's scale folded
//             in, and the consumers decode their A fragments into registers;
//             every other pair: the consumers apply both scales in the
//             epilogue; UE8M0 pairs whose scale codes allow it (a check per
//             call) add each block by one FMA, or run the E4M3 pairs' datapath
//             with B's scales folded (or A's, the operands swapped). Devices
//             other than compute capability 9.0 run kMmaSync instead.
// kWgmma is the default: the fastest where it runs, and it passed the
// bit-exact device tests (docs/results/kernels.md#correctness).
enum class GemmKernel : uint8_t { kMmaSync, kWgmma };
inline constexpr std::array<GemmKernel, 2> kAllGemmKernels = {GemmKernel::kMmaSync, GemmKernel::kWgmma};
inline constexpr GemmKernel kDefaultGemmKernel = GemmKernel::kWgmma;
// "mma.sync" or "wgmma": the kernel's name in reports and bench-kernels rows.
const char* name(GemmKernel kernel);

// The kernel that `kernel` runs for this operand pair on the current device:
// kMmaSync where kWgmma does not apply, else `kernel` itself.
GemmKernel gemm_kernel_for(const DeviceQuantized& a, const DeviceQuantized& b, GemmKernel kernel);

// kWgmma's output tiles (rows x columns of C per CTA). kAuto (wgmma::auto_tiles):
//   * 128 x 64 half tiles where every half tile finds an SM of its own, as for
//     a weight gradient of a narrow layer (1024 x 1024 outputs, long K), whose
//     128 x 128 tiles would leave half the SMs idle, or where C has at most 64
//     columns: two consumer warpgroups of 64 x 64 each, a half tile taking its
//     SM for well under a full tile's time on either datapath (the UFP4
//     recipes' FP32 scales among them; docs/results/kernels.md#design-choices-measured);
//   * else 64 x 128 ("wide") for an output of at most 64 rows (a GEMM of a few
//     tokens against a weight matrix): the half tile run on the operands
//     swapped (C^T = B A^T, each output the same sum of the same block
//     products in the same k order, C stored transposed), so that every row
//     of a tile is one of C's, where 128 x 128 tiles would leave at least
//     half of their rows empty (docs/results/kernels.md#design-choices-measured);
//   * else 128 x 64 where their rounds of persistent CTAs take less time than
//     128 x 128 tiles' (a round a tile's time; a half tile's cost per datapath:
//     wgmma::kHalfTileCostScaled, kHalfTileCostE4m3): a training step's
//     weight gradient of 3072 x 768 outputs is 144 full tiles on 132 SMs, two
//     rounds with 12 tiles in the second, or 288 half tiles in three, which the
//     UFP4 recipes' FP32 scales take;
//   * 128 x 128 otherwise (two consumer warpgroups of 64 x 128).
// kFull, kHalf and kWide force one (tests, benchmarks); every choice computes
// the same bits. kMmaSync has one tile shape (128 x 128) and ignores it.
enum class GemmTiles : uint8_t { kAuto, kFull, kHalf, kWide };

// The datapath that kernel computes this pair with on the current device
// and `tiles`, for reports: "FP16 mma" (E4M3 scales on both operands, folded
// into FP16 operands) or "INT8 mma" (kMmaSync); "FP16 wgmma" (E4M3 pairs) or
// "FP16 wgmma, scaled" (every other pair: both scales applied per block in
// the epilogue), "FP16 wgmma, scaled, FMA" (UE8M0 scales on both operands,
// every code of which lets each block's scale product and add be one FMA), or
// "FP16 wgmma, UE8M0 folded" (those, and B's scales folded into its FP16
// values: the E4M3 pairs' datapath), or "FP16 wgmma, UE8M0 folded into A"
// (A's folded into A's values) (kWgmma). Where both operands' codes fold, the
// tiles' second operand's are folded (B's; on 64 x 128 tiles, which run the
// operands swapped, A's); the other operand's only where its order takes no
// more waves of tiles on the device's SMs, else the FMA. The last three read
// the operands' scales, and wait for that.
const char* gemm_datapath(const DeviceQuantized& a, const DeviceQuantized& b, GemmKernel kernel,
                          GemmTiles tiles = GemmTiles::kAuto);

// The tile shape (rows x columns of C per CTA) a call with `tiles` runs on
// the current device, for reports: "128x128", "128x64" or "64x128"; with a
// workspace (GemmWorkspace, below) where the call then takes kWgmma's
// ordered split, "128x128 split" or "128x64 split".
const char* gemm_tile_shape(const DeviceQuantized& a, const DeviceQuantized& b, GemmKernel kernel,
                            GemmTiles tiles = GemmTiles::kAuto, bool workspace = false);

// Device memory a call may use so that every SM stays busy to its end
// (kWgmma's ordered split, nibble/cuda/detail/gemm_wgmma_layout.h: where the
// output tiles are not a multiple of the SMs, a tile's k range is split
// between two CTAs, the first leaving its partial sums here for the second,
// so each output keeps golden's k order): gemm_workspace_bytes() bytes,
// zeroed once by its owner (cudaMemset) and reused; every call leaves its
// flag words zero again (the rest is scratch). Calls that may run at the
// same time (on other streams) need
// workspaces of their own. Without one (data null) a call takes the classic
// schedule, whole tiles per CTA; the bits are the same either way.
struct DecodedB;
struct GemmWorkspace {
  void* data = nullptr;
  size_t bytes = 0;
  const DecodedB* b_decoded = nullptr;  // B decoded ahead (decode_b_ahead, below), or null
};
// The workspace's size on the current device (a few MiB: a tile's sums per SM).
size_t gemm_workspace_bytes();

// B decoded ahead of its GEMMs. A call with a workspace on the wgmma
// kernel's scaled datapath (binary32 scales on both operands, or a pair of
// mixed scale formats) whose B every row of tiles reads again decodes B once
// to FP16 stages in its workspace, in a kernel of its own before the GEMM
// (nibble/cuda/detail/gemm_wgmma_layout.h, predecode_b). decode_b_ahead runs
// that kernel now, into `out`, for calls whose k-blocks are `step` columns
// (the shorter of the operands' block widths): a call given it
// (GemmWorkspace::b_decoded) whose B is the very operand decoded (out.of)
// copies these bytes instead; any other call ignores it. The caller keeps it
// current: decoded after b's last quantization and before the call (ordered
// on one stream, or by an event). Returns false, decoding nothing, where no
// call would take it: another kernel runs on this device, b's scales are
// E4M3 or UE8M0 (whose pairs take other datapaths), or its decoded stages
// are larger than a call decodes.
struct DecodedB {
  DeviceBuffer<uint8_t> bytes;
  const DeviceQuantized* of = nullptr;
  int step = 0;
  int64_t rows = 0;    // b's rows, padded (wgmma::predecoded_rows)
  int64_t stages = 0;  // k stages
};
bool decode_b_ahead(const DeviceQuantized& b, int step, DecodedB& out, cudaStream_t stream = nullptr);

// a: [M, K] and b: [N, K], both quantized along K (row-wise); c: device
// pointer to M x N floats, row-major. Throws std::invalid_argument where golden
// gemm does (K differs, operands rotated differently). Asynchronous on `stream`.
// Allocates no device memory per call, but kWgmma on UE8M0 pairs of at least
// wgmma::kFmaMinMacs multiply-adds (nibble/cuda/detail/gemm_wgmma_layout.h) takes a 4-byte
// word, for the check of the pair's scale codes, from a memory pool the
// library creates once per device and keeps (with what it has allocated).
void gemm(const DeviceQuantized& a, const DeviceQuantized& b, float* c, cudaStream_t stream = nullptr,
          GemmKernel kernel = kDefaultGemmKernel, GemmTiles tiles = GemmTiles::kAuto,
          const GemmWorkspace& workspace = {});

// The same GEMM with C stored in BF16: each output is the FP32 value above
// rounded to nearest even (golden round_to_bf16), in the epilogue, for a
// consumer that takes BF16 (the training harness): no FP32 C is written and
// read again by a separate cast. `c` points to M x N BF16 bit patterns.
void gemm_bf16(const DeviceQuantized& a, const DeviceQuantized& b, uint16_t* c, cudaStream_t stream = nullptr,
               GemmKernel kernel = kDefaultGemmKernel, GemmTiles tiles = GemmTiles::kAuto,
               const GemmWorkspace& workspace = {});

// Synchronous convenience: the M x N result on the host.
std::vector<float> gemm_to_host(const DeviceQuantized& a, const DeviceQuantized& b,
                                GemmKernel kernel = kDefaultGemmKernel, GemmTiles tiles = GemmTiles::kAuto);

}  // namespace nibble::cuda
