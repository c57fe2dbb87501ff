// `nibble bench-kernels`: times the library's kernels (the same copies the
// library runs) against their yardsticks, side by side in one run:
//   quantize (RHT16 + SR, the slowest recipe)  vs  a device-to-device cudaMemcpy
//   quantize with fused RHT16                   vs  the same quantize without RHT
//   bit-exact block-scaled GEMM (v1 and v2)    vs  cuBLAS BF16 GEMM of the same shape
//                                                and  dequantize-to-BF16 + cuBLAS (the usual emulation)
// and the device memory each path holds. Every configuration is validated
// against golden (sampled outputs) before it is timed.
#pragma once

#include <cstdint>
#include <ostream>
#include <vector>

namespace nibble::cuda::bench {

struct GemmShape {
  int64_t m;
  int64_t n;
  int64_t k;
};

struct BenchOptions {
  int64_t quant_rows = 8192;
  int64_t quant_cols = 8192;
  // 8192^3 (square, compute-bound) and two weight-gradient-like shapes: two
  // 4096-wide activations contracted over a 16384-token batch, and two
  // 1024-wide ones (a narrow layer: too few 128 x 128 tiles for the SMs).
  std::vector<GemmShape> gemm_shapes = {{8192, 8192, 8192}, {4096, 4096, 16384}, {1024, 1024, 16384}};
  int warmup = 3;
  int iterations = 20;
};

// Runs everything and prints the tables to `out`. Throws CudaError on any
// CUDA failure and std::runtime_error if a validation against golden fails.
void run_kernel_benchmark(const BenchOptions& options, std::ostream& out);

}  // namespace nibble::cuda::bench
