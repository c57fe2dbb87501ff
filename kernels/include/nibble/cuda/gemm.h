// The block-scaled GEMM on the GPU: C = A * B^T, bit for bit golden
// nibble::gemm (docs/numerics.md section 8), for every pair of formats, block
// shapes and scale modes golden accepts.
#pragma once

#include <cuda_runtime_api.h>

#include <vector>

#include "nibble/cuda/quantize.h"

namespace nibble::cuda {

// a: [M, K] and b: [N, K], both quantized along K (row-wise); c: device
// pointer to M x N floats, row-major. Throws std::invalid_argument where golden
// gemm does (K differs, operands rotated differently). Asynchronous on `stream`.
void gemm(const DeviceQuantized& a, const DeviceQuantized& b, float* c, cudaStream_t stream = nullptr);

// Synchronous convenience: the M x N result on the host.
std::vector<float> gemm_to_host(const DeviceQuantized& a, const DeviceQuantized& b);

}  // namespace nibble::cuda
