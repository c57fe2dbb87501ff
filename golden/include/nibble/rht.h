// The Random Hadamard Transform applied along the contraction axis before
// quantization: each group of n consecutive elements x becomes x * S * H / sqrt(n),
// with H the n x n Sylvester Hadamard matrix and S a +-1 diagonal drawn from the
// seed (see philox.h). Applying the same S to both GEMM operands leaves A * B^T
// unchanged, since (S H / sqrt(n)) (S H / sqrt(n))^T = I.
//
// Arithmetic, in binary32, in exactly this order:
//   1. sign flip  y_i = S_i * x_i                       (exact)
//   2. butterflies for h = 1, 2, 4, ..., n/2: for every i with (i & h) == 0,
//      (y_i, y_{i+h}) <- (fl(y_i + y_{i+h}), fl(y_i - y_{i+h}))
//   3. normalization y_i <- fl(y_i * c): c = 2^(-log2(n)/2) exactly for
//      n = 16, 64; for n = 32, 128 (where sqrt(n) is irrational)
//      c = fl(1/sqrt(n)), one extra rounding.
//   4. optionally round each output to bfloat16 (RNE), as Transformer Engine does.
#pragma once

#include <array>
#include <cstdint>

#include "nibble/philox.h"

namespace nibble {

struct RhtConfig {
  int size = 0;            // 0 = off; otherwise 16, 32, 64 or 128
  bool round_bf16 = false;

  bool enabled() const { return size != 0; }
  friend bool operator==(const RhtConfig& a, const RhtConfig& b) {
    return a.size == b.size && a.round_bf16 == b.round_bf16;
  }
};

// The transform sizes golden implements, ascending.
inline constexpr std::array<int, 4> kRhtSizes = {16, 32, 64, 128};
// n is one of kRhtSizes.
bool rht_size_valid(int n);

// The sign vector as a bit mask (bit i set = -1), from Philox domain 1.
PhiloxWords rht_signs(uint64_t seed);

// Transform one group of n values in place.
void rht_group(float* x, int n, const PhiloxWords& signs, bool round_bf16);

// Transform every row of a row-major [rows, cols] matrix in groups of n along
// cols. Throws std::invalid_argument unless n is valid and divides cols.
void rht_rows(float* x, int64_t rows, int64_t cols, const RhtConfig& cfg, uint64_t seed);

}  // namespace nibble
