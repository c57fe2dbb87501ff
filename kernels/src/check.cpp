#include "nibble/cuda/check.h"

#include <string>

namespace nibble::cuda {

void check(cudaError_t status, const char* what, const char* file, int line) {
  if (status == cudaSuccess) return;
  throw CudaError(std::string(file) + ":" + std::to_string(line) + ": " + what + " failed: " +
                  cudaGetErrorName(status) + " (" + cudaGetErrorString(status) + ")");
}

int device_count() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    (void)cudaGetLastError();  // clear the sticky "no device" / "no driver" status
    return 0;
  }
  return count;
}

std::string device_name() {
  if (device_count() == 0) return "";
  cudaDeviceProp prop{};
  check(cudaGetDeviceProperties(&prop, 0), "cudaGetDeviceProperties", __FILE__, __LINE__);
  return prop.name;
}

}  // namespace nibble::cuda
