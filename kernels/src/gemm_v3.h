// GEMM version 3 (gemm_v3.cu, built for sm_90a), called by nibble::cuda::gemm
// (gemm.cu) after it has checked the operands agree.
#pragma once

#include <cuda_runtime_api.h>

#include "nibble/cuda/quantize.h"

namespace nibble::cuda::detail {

// Whether version 3 runs this pair on the current device: E4M3 scales on both
// operands (its FP16 datapath) and a device of compute capability 9.0 (wgmma).
bool gemm_v3_runs(const DeviceQuantized& a, const DeviceQuantized& b);

void gemm_v3(const DeviceQuantized& a, const DeviceQuantized& b, float* c, cudaStream_t stream);

}  // namespace nibble::cuda::detail
