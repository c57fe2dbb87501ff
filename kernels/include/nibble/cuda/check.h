// Checking every CUDA runtime call and kernel launch: an error becomes a
// CudaError naming the call, the file and line, and cudaGetErrorString.
#pragma once

#include <cuda_runtime_api.h>

#include <stdexcept>
#include <string>

namespace nibble::cuda {

class CudaError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Throws CudaError unless status is cudaSuccess.
void check(cudaError_t status, const char* what, const char* file, int line);

// The number of CUDA devices; 0 when there is no device or no driver (never throws).
int device_count();

// The name of device 0 ("" when there is none).
std::string device_name();

}  // namespace nibble::cuda

#define NIBBLE_CUDA_CHECK(call) ::nibble::cuda::check((call), #call, __FILE__, __LINE__)
// After a <<<...>>> launch: catches bad launch configurations at once.
#define NIBBLE_CUDA_CHECK_LAUNCH(kernel_name) \
  ::nibble::cuda::check(cudaGetLastError(), "launch of " kernel_name, __FILE__, __LINE__)
