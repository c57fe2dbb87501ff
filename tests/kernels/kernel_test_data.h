// Seeded test tensors for the kernel tests: random values over a wide range of
// magnitudes with the corner cases of numerics.md planted in known blocks.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "nibble/fp32.h"

namespace nibble::test {

inline constexpr uint64_t kKernelTestSeed = 0x6E6962626C65ull;  // printed by every test that uses it

// Row-major [rows, cols]: each 16x16 region draws its own magnitude 2^U(-24, 24)
// (so blocks differ by many binades and nvfp4 scales underflow), elements are
// normal(0, 1) times it. Planted (when the tensor is large enough):
//   a NaN in region (0, 1), +Inf in region (1, 0), an all-zero region (1, 1),
//   a region of binary32 subnormals (0, 2), a region near FLT_MAX (2, 0).
inline std::vector<float> wide_range_tensor(int64_t rows, int64_t cols, uint64_t seed, bool specials = true) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::uniform_int_distribution<int> binade(-24, 24);
  const int64_t gr = (rows + 15) / 16, gc = (cols + 15) / 16;
  std::vector<float> region_scale(static_cast<size_t>(gr * gc));
  for (float& s : region_scale) s = std::ldexp(1.0f, binade(rng));
  std::vector<float> x(static_cast<size_t>(rows * cols));
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < cols; ++c) {
      x[static_cast<size_t>(r * cols + c)] = normal(rng) * region_scale[static_cast<size_t>((r / 16) * gc + c / 16)];
    }
  }
  if (!specials) return x;
  auto region = [&](int64_t br, int64_t bc, auto&& fn) {
    for (int64_t r = br * 16; r < std::min(rows, br * 16 + 16); ++r)
      for (int64_t c = bc * 16; c < std::min(cols, bc * 16 + 16); ++c) fn(x[static_cast<size_t>(r * cols + c)]);
  };
  if (gc > 1) x[static_cast<size_t>(3 * cols + 16 + 5)] = std::numeric_limits<float>::quiet_NaN();
  if (gr > 1) x[static_cast<size_t>(18 * cols + 2)] = std::numeric_limits<float>::infinity();
  if (gr > 1 && gc > 1) region(1, 1, [](float& v) { v = 0.0f; });
  if (gc > 2) region(0, 2, [&](float& v) { v = std::ldexp(normal(rng), -140); });
  if (gr > 2) region(2, 0, [&](float& v) { v = normal(rng) * 1e38f; });
  return x;
}

// Round each element to bfloat16 bits (RNE), for BF16-input tests.
inline std::vector<uint16_t> to_bf16_bits(const std::vector<float>& x) {
  std::vector<uint16_t> out(x.size());
  for (size_t i = 0; i < x.size(); ++i) out[i] = static_cast<uint16_t>(f32_bits(round_to_bf16(x[i])) >> 16);
  return out;
}
inline std::vector<float> from_bf16_bits(const std::vector<uint16_t>& b) {
  std::vector<float> out(b.size());
  for (size_t i = 0; i < b.size(); ++i) out[i] = f32_from_bf16_bits(b[i]);
  return out;
}

inline std::vector<float> transpose(const std::vector<float>& x, int64_t rows, int64_t cols) {
  std::vector<float> t(x.size());
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) t[static_cast<size_t>(c * rows + r)] = x[static_cast<size_t>(r * cols + c)];
  return t;
}

// Bit equality, NaNs included: the contract fixes every NaN to 0x7FC00000.
inline bool same_float(float a, float b) { return f32_bits(a) == f32_bits(b); }

inline std::string hex32(uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%08x", v);
  return buf;
}

}  // namespace nibble::test
