// Builds without the CUDA kernels or without a CUDA libtorch: no GPU backend.
#include "backend.h"

namespace nibble::train {

std::unique_ptr<GemmBackend> make_cuda_backend() { return nullptr; }
bool cuda_backend_built() { return false; }

}  // namespace nibble::train
