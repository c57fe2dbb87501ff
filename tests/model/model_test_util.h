// Helpers shared by the model tests: the printed seed and random quantized operands.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <random>
#include <vector>

#include "nibble/quantize.h"

namespace nibble::model_test {

// NIBBLE_MODEL_SEED, or a fixed default; printed so a failure can be replayed.
inline uint64_t test_seed() {
  const char* s = std::getenv("NIBBLE_MODEL_SEED");
  const uint64_t seed = s ? std::strtoull(s, nullptr, 0) : 0x5eed2026u;
  std::printf("NIBBLE_MODEL_SEED=0x%llx\n", static_cast<unsigned long long>(seed));
  return seed;
}

// A rows x cols Gaussian tensor with per-element magnitudes over 2^-4..2^4 (one NaN and one
// zero planted where `specials`), quantized by golden.
inline QuantizedTensor random_operand(std::mt19937_64& rng, int64_t rows, int64_t cols, Format f, ScaleMode s,
                                      BlockShape b, bool specials) {
  std::normal_distribution<float> g(0.0f, 1.0f);
  std::vector<float> x(static_cast<size_t>(rows * cols));
  for (float& v : x) v = g(rng) * std::ldexp(1.0f, static_cast<int>(rng() % 9) - 4);
  if (specials && !x.empty()) {
    x[rng() % x.size()] = std::numeric_limits<float>::quiet_NaN();
    x[rng() % x.size()] = 0.0f;
  }
  QuantConfig q;
  q.format = f;
  q.scale = s;
  q.block = b;
  return quantize(x.data(), rows, cols, q);
}

}  // namespace nibble::model_test
