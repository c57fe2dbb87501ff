// The wgmma GEMM (gemm_wgmma.cu, built for sm_90a), called by nibble::cuda::gemm
// (gemm.cu) after it has checked the operands agree.
#pragma once

#include <cuda_runtime_api.h>

#include "gemm_output.h"
#include "nibble/cuda/detail/gemm_wgmma_layout.h"
#include "nibble/cuda/gemm.h"
#include "nibble/cuda/quantize.h"

namespace nibble::cuda::detail {

// Whether the wgmma kernel runs this pair on the current device: a device of compute
// capability 9.0 (wgmma) and a build with its sm_90a object. Every pair of
// formats, block shapes and scale modes then runs there.
bool gemm_wgmma_runs(const DeviceQuantized& a, const DeviceQuantized& b);

void gemm_wgmma(const DeviceQuantized& a, const DeviceQuantized& b, const OutputPtr& c, cudaStream_t stream,
                GemmTiles tiles, const GemmWorkspace& workspace);

// nibble::cuda::decode_b_ahead on the wgmma kernel's device (gemm.h).
bool gemm_wgmma_decode_b(const DeviceQuantized& b, int step, DecodedB& out, cudaStream_t stream);

// The tiles that call runs on the current device, and its schedule (per:
// the ordered split's units per CTA, 0 for the classic schedule): `tiles`
// where it names a shape, else GemmTiles's rule (wgmma::auto_tiles; with a
// workspace, wgmma::split_tiles).
wgmma::TilePlan gemm_wgmma_tiles(const DeviceQuantized& a, const DeviceQuantized& b, GemmTiles tiles,
                                 bool workspace = false);

// How the wgmma kernel computes this pair on `tiles` on the current device where
// both have UE8M0 scales (gemm_wgmma.cu): B's scales folded into B (every code
// in the FMA's range and B's in its fold range), A's folded into A (A's in
// its fold range), the scaled datapath adding by FMAs (every code in the
// FMA's range), or golden's three roundings (any other pair too); where both
// fold, gemm_datapath says which. Runs the check and waits for it. In the
// kernel (ue8m0_path) the names are of its own operand order, the call's
// swapped on 64 x 128 tiles.
enum class Ue8m0Path { kRoundings, kFma, kFolded, kFoldedA };
Ue8m0Path gemm_wgmma_ue8m0_path(const DeviceQuantized& a, const DeviceQuantized& b, GemmTiles tiles);

}  // namespace nibble::cuda::detail
