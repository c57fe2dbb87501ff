#include "shared_memory_poison.h"

#include <cuda_runtime.h>

#include <cstdint>
#include <vector>

#include "nibble/cuda/check.h"

namespace nibble::test {
namespace {

constexpr int kThreads = 1024;

__global__ void poison_shared_kernel(uint32_t words) {
  extern __shared__ uint32_t shared[];
  // volatile: stores that nothing in this kernel reads are still made.
  volatile uint32_t* s = shared;
  for (uint32_t i = threadIdx.x; i < words; i += kThreads) s[i] = 0xFFFFFFFFu;
}

// Copies a CTA's shared memory, as it finds it, to out (one CTA per SM at
// most: every CTA takes the largest shared memory a CTA may have).
__global__ void read_shared_kernel(uint32_t words, uint32_t* out) {
  extern __shared__ uint32_t shared[];
  volatile uint32_t* s = shared;
  for (uint32_t i = threadIdx.x; i < words; i += kThreads) out[blockIdx.x * words + i] = s[i];
}

}  // namespace

size_t poison_shared_memory() {
  int device = 0, bytes = 0, sms = 0;
  NIBBLE_CUDA_CHECK(cudaGetDevice(&device));
  NIBBLE_CUDA_CHECK(cudaDeviceGetAttribute(&bytes, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
  NIBBLE_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  NIBBLE_CUDA_CHECK(cudaFuncSetAttribute(poison_shared_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes));
  poison_shared_kernel<<<2 * sms, kThreads, static_cast<size_t>(bytes)>>>(static_cast<uint32_t>(bytes) / 4u);
  NIBBLE_CUDA_CHECK_LAUNCH("poison_shared_kernel");
  NIBBLE_CUDA_CHECK(cudaDeviceSynchronize());
  return static_cast<size_t>(bytes);
}

size_t unpoisoned_shared_words() {
  const size_t bytes = poison_shared_memory();
  int device = 0, sms = 0;
  NIBBLE_CUDA_CHECK(cudaGetDevice(&device));
  NIBBLE_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  const uint32_t words = static_cast<uint32_t>(bytes / 4);
  const size_t total = static_cast<size_t>(sms) * words;
  uint32_t* out = nullptr;
  NIBBLE_CUDA_CHECK(cudaMalloc(&out, total * sizeof(uint32_t)));
  NIBBLE_CUDA_CHECK(cudaFuncSetAttribute(read_shared_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                         static_cast<int>(bytes)));
  read_shared_kernel<<<sms, kThreads, bytes>>>(words, out);
  NIBBLE_CUDA_CHECK_LAUNCH("read_shared_kernel");
  std::vector<uint32_t> host(total);
  const cudaError_t copied = cudaMemcpy(host.data(), out, total * sizeof(uint32_t), cudaMemcpyDeviceToHost);
  NIBBLE_CUDA_CHECK(cudaFree(out));
  NIBBLE_CUDA_CHECK(copied);
  size_t unpoisoned = 0;
  for (uint32_t w : host) unpoisoned += w != 0xFFFFFFFFu ? 1 : 0;
  return unpoisoned;
}

}  // namespace nibble::test
