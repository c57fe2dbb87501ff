// The dispatcher of the bit-exact block-scaled GEMM (nibble/cuda/gemm.h):
// checks that the operands pair as golden's gemm requires, picks the kernel
// that runs on the current device (the wgmma kernel, gemm_wgmma.cu, on
// compute capability 9.0; else the mma.sync kernel, gemm_mma_sync.cu), and
// names the datapath and tile shape a call takes, for reports. Why each kernel is bit for bit
// golden's dot_rows / gemm is written at the top of its own file.
#include <cuda_runtime.h>

#include <stdexcept>
#include <string>

#include "nibble/cuda/check.h"
#include "nibble/cuda/gemm.h"
#include "gemm_stage.cuh"
#include "gemm_mma_sync.h"
#include "gemm_wgmma.h"

namespace nibble::cuda {

const char* name(GemmKernel kernel) {
  switch (kernel) {
    case GemmKernel::kMmaSync: return "mma.sync";
    case GemmKernel::kWgmma: return "wgmma";
  }
  return "?";
}

GemmKernel gemm_kernel_for(const DeviceQuantized& a, const DeviceQuantized& b, GemmKernel kernel) {
  return kernel == GemmKernel::kWgmma && !detail::gemm_wgmma_runs(a, b) ? GemmKernel::kMmaSync : kernel;
}

const char* gemm_datapath(const DeviceQuantized& a, const DeviceQuantized& b, GemmKernel kernel, GemmTiles tiles) {
  const bool e4m3 = detail::e4m3_scales(a, b);
  if (gemm_kernel_for(a, b, kernel) == GemmKernel::kWgmma) {
    if (e4m3) return "FP16 wgmma";
    switch (detail::gemm_wgmma_ue8m0_path(a, b, tiles)) {
      case detail::Ue8m0Path::kFolded: return "FP16 wgmma, UE8M0 folded";
      case detail::Ue8m0Path::kFoldedA: return "FP16 wgmma, UE8M0 folded into A";
      case detail::Ue8m0Path::kFma: return "FP16 wgmma, scaled, FMA";
      case detail::Ue8m0Path::kRoundings: break;
    }
    return "FP16 wgmma, scaled";
  }
  return e4m3 ? "FP16 mma" : "INT8 mma";
}

const char* gemm_tile_shape(const DeviceQuantized& a, const DeviceQuantized& b, GemmKernel kernel, GemmTiles tiles,
                            bool workspace) {
  if (gemm_kernel_for(a, b, kernel) != GemmKernel::kWgmma) return "128x128";
  const wgmma::TilePlan plan = detail::gemm_wgmma_tiles(a, b, tiles, workspace);
  const bool split = plan.per > 0;
  switch (plan.shape) {
    case GemmTiles::kHalf: return split ? "128x64 split" : "128x64";
    case GemmTiles::kWide: return "64x128";
    case GemmTiles::kAuto:  // resolved: not returned
    case GemmTiles::kFull: break;
  }
  return split ? "128x128 split" : "128x128";
}

size_t gemm_workspace_bytes() {
  int device = 0, sms = 0;
  NIBBLE_CUDA_CHECK(cudaGetDevice(&device));
  NIBBLE_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  return static_cast<size_t>(wgmma::workspace_bytes(sms));
}

bool decode_b_ahead(const DeviceQuantized& b, int step, DecodedB& out, cudaStream_t stream) {
  return detail::gemm_wgmma_decode_b(b, step, out, stream);
}

namespace {

void run_gemm(const DeviceQuantized& a, const DeviceQuantized& b, const detail::OutputPtr& c, cudaStream_t stream,
              GemmKernel kernel, GemmTiles tiles, const GemmWorkspace& workspace) {
  if (a.cols != b.cols) {
    throw std::invalid_argument("gemm: contraction lengths differ (" + std::to_string(a.cols) + " vs " +
                                std::to_string(b.cols) + ")");
  }
  if (!(a.config.rht == b.config.rht) || (a.config.rht.enabled() && a.config.seed != b.config.seed)) {
    throw std::invalid_argument("gemm: operands must share the RHT size, bf16 option and seed");
  }
  switch (gemm_kernel_for(a, b, kernel)) {
    case GemmKernel::kWgmma: detail::gemm_wgmma(a, b, c, stream, tiles, workspace); return;
    case GemmKernel::kMmaSync: detail::gemm_mma_sync(a, b, c, stream); return;
  }
}

}  // namespace

void gemm(const DeviceQuantized& a, const DeviceQuantized& b, float* c, cudaStream_t stream, GemmKernel kernel,
          GemmTiles tiles, const GemmWorkspace& workspace) {
  detail::OutputPtr out;
  out.f32 = c;
  run_gemm(a, b, out, stream, kernel, tiles, workspace);
}

void gemm_bf16(const DeviceQuantized& a, const DeviceQuantized& b, uint16_t* c, cudaStream_t stream,
               GemmKernel kernel, GemmTiles tiles, const GemmWorkspace& workspace) {
  detail::OutputPtr out;
  out.bf16 = c;
  run_gemm(a, b, out, stream, kernel, tiles, workspace);
}

std::vector<float> gemm_to_host(const DeviceQuantized& a, const DeviceQuantized& b, GemmKernel kernel,
                                GemmTiles tiles) {
  DeviceBuffer<float> c(static_cast<size_t>(a.rows * b.rows));
  gemm(a, b, c.data(), nullptr, kernel, tiles);
  return c.download();
}

}  // namespace nibble::cuda
