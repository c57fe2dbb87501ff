// GEMM version 3 (gemm_v3.cu, built for sm_90a), called by nibble::cuda::gemm
// (gemm.cu) after it has checked the operands agree.
#pragma once

#include <cuda_runtime_api.h>

#include "nibble/cuda/quantize.h"

namespace nibble::cuda::detail {

// Whether version 3 runs this pair on the current device: a device of compute
// capability 9.0 (wgmma) and a build with its sm_90a object. Every pair of
// formats, block shapes and scale modes then runs there.
bool gemm_v3_runs(const DeviceQuantized& a, const DeviceQuantized& b);

void gemm_v3(const DeviceQuantized& a, const DeviceQuantized& b, float* c, cudaStream_t stream);

// Whether version 3 adds this pair's blocks by FMAs on the current device
// (UE8M0 scales on both operands, every code in the FMA's range: gemm_v3.cu);
// runs the check and waits for it.
bool gemm_v3_takes_fma(const DeviceQuantized& a, const DeviceQuantized& b);

}  // namespace nibble::cuda::detail
