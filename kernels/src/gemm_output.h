// Where a GEMM kernel stores C (internal): one of the two pointers is set.
#pragma once

#include <cstdint>

namespace nibble::cuda::detail {

struct OutputPtr {
  float* f32 = nullptr;      // FP32 outputs
  uint16_t* bf16 = nullptr;  // BF16 bits of each output's FP32 value rounded by round_to_bf16
};

}  // namespace nibble::cuda::detail
