// The mma.sync GEMM (gemm_mma_sync.cu), called by nibble::cuda::gemm (gemm.cu) after
// it has checked the operands agree.
#pragma once

#include <cuda_runtime_api.h>

#include "gemm_output.h"
#include "nibble/cuda/quantize.h"

namespace nibble::cuda::detail {

void gemm_mma_sync(const DeviceQuantized& a, const DeviceQuantized& b, const OutputPtr& c, cudaStream_t stream);

}  // namespace nibble::cuda::detail
