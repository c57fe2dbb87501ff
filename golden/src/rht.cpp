#include "nibble/rht.h"

#include <cmath>
#include <stdexcept>
#include <string>

#include "nibble/fp32.h"

namespace nibble {
namespace {

// 1/sqrt(n): an exact power of two when log2(n) is even, else fl(1/sqrt(n)).
float normalization(int n) {
  const int log2n = 31 - __builtin_clz(static_cast<unsigned>(n));
  if (log2n % 2 == 0) return exp2_f32(-log2n / 2);
  return static_cast<float>(1.0 / std::sqrt(static_cast<double>(n)));
}

}  // namespace

bool rht_size_valid(int n) {
  for (int s : kRhtSizes) {
    if (n == s) return true;
  }
  return false;
}

PhiloxWords rht_signs(uint64_t seed) { return philox4x32_10(seed, 0, 0, PhiloxDomain::kRhtSigns); }

void rht_group(float* x, int n, const PhiloxWords& signs, bool round_bf16) {
  for (int i = 0; i < n; ++i) {
    if ((signs[static_cast<size_t>(i / 32)] >> (i % 32)) & 1u) x[i] = -x[i];
  }
  for (int h = 1; h < n; h *= 2) {
    for (int i = 0; i < n; ++i) {
      if ((i & h) != 0) continue;
      const float a = x[i];
      const float b = x[i + h];
      x[i] = canonical(a + b);
      x[i + h] = canonical(a - b);
    }
  }
  const float c = normalization(n);
  for (int i = 0; i < n; ++i) {
    x[i] = canonical(x[i] * c);
    if (round_bf16) x[i] = round_to_bf16(x[i]);
  }
}

void rht_rows(float* x, int64_t rows, int64_t cols, const RhtConfig& cfg, uint64_t seed) {
  if (!rht_size_valid(cfg.size)) {
    throw std::invalid_argument("RHT size must be 16, 32, 64 or 128, got " + std::to_string(cfg.size));
  }
  if (cols % cfg.size != 0) {
    throw std::invalid_argument("RHT" + std::to_string(cfg.size) + " needs the contraction axis (" +
                                std::to_string(cols) + ") to be a multiple of " + std::to_string(cfg.size));
  }
  const PhiloxWords signs = rht_signs(seed);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < cols; c += cfg.size) rht_group(x + r * cols + c, cfg.size, signs, cfg.round_bf16);
  }
}

}  // namespace nibble
