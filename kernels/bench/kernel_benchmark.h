// `nibble bench-kernels`: times the library's kernels (the same copies the
// library runs) against their yardsticks, side by side in one run:
//   quantize (RHT16 + SR, the slowest recipe)      vs  a device-to-device cudaMemcpy
//   quantize with fused RHT16                       vs  the same quantize without RHT
//   bit-exact block-scaled GEMM (mma.sync, wgmma)   vs  cuBLAS BF16 GEMM of the same shape
//                                                   and dequantize-to-BF16 + cuBLAS (the usual emulation)
// and the device memory each path holds. Every configuration is validated
// against golden (sampled outputs) before it is timed.
#pragma once

#include <cublas_v2.h>

#include <ostream>

#include "nibble/io/kernel_bench_file.h"

namespace nibble::cuda::bench {

// The cuBLAS functions the yardsticks call, from the library opened at the
// first call (never at start-up). Throws CudaError where it cannot be loaded.
struct CublasApi {
  decltype(&cublasCreate_v2) create = nullptr;
  decltype(&cublasDestroy_v2) destroy = nullptr;
  // The C entry point (the header adds a C++ overload taking a cudaDataType compute type).
  cublasStatus_t (*gemm_ex)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int, const void*,
                            const void*, cudaDataType, int, const void*, cudaDataType, int, const void*, void*,
                            cudaDataType, int, cublasComputeType_t, cublasGemmAlgo_t) = nullptr;
  decltype(&cublasGetStatusString) status_string = nullptr;
  decltype(&cublasGetProperty) get_property = nullptr;
};
const CublasApi& cublas();

using BenchOptions = io::KernelBenchOptions;

// Runs everything, prints the tables to `out` and returns every printed row
// with the device that ran it (`command` left empty for the caller). Throws
// CudaError on any CUDA failure and std::runtime_error if a quantize
// validation against golden fails; a GEMM kernel that fails its validation is
// reported, left untimed and listed in the result's `failures`.
io::KernelBenchRun run_kernel_benchmark(const BenchOptions& options, std::ostream& out);

}  // namespace nibble::cuda::bench
