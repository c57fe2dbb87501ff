// Shared by the GPU kernel tests: skipping where there is no device, and
// bit-exact comparison of a device result with golden's.
#pragma once

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "kernel_test_data.h"
#include "nibble/cuda/check.h"
#include "nibble/quantize.h"

// Skips (saying so) where there is no CUDA device. On a machine meant to have
// one, set NIBBLE_EXPECT_GPU=1: then a missing device fails the test instead of
// letting a skipped suite pass.
#define NIBBLE_REQUIRE_GPU()                                                                  \
  do {                                                                                        \
    if (::nibble::cuda::device_count() == 0) {                                                \
      if (std::getenv("NIBBLE_EXPECT_GPU") != nullptr) FAIL() << "NIBBLE_EXPECT_GPU is set but no CUDA device"; \
      GTEST_SKIP() << "no CUDA device: GPU kernel test skipped";                              \
    }                                                                                         \
  } while (0)

namespace nibble::test {

// Number of differences between a device quantization and golden's; prints the
// first few in hex.
inline size_t count_quantized_mismatches(const QuantizedTensor& got, const QuantizedTensor& want,
                                         const std::string& label) {
  size_t bad = 0;
  auto report = [&](const std::string& what) {
    if (++bad <= 5) std::printf("  MISMATCH %s: %s\n", label.c_str(), what.c_str());
  };
  if (got.codes.size() != want.codes.size() || got.scales.size() != want.scales.size()) {
    report("shape");
    return bad;
  }
  for (size_t i = 0; i < want.codes.size(); ++i) {
    if (got.codes[i] != want.codes[i]) {
      report("code [" + std::to_string(i / static_cast<size_t>(want.cols)) + ", " +
             std::to_string(i % static_cast<size_t>(want.cols)) + "] got " + hex32(got.codes[i]) + " want " +
             hex32(want.codes[i]));
    }
  }
  for (size_t i = 0; i < want.scales.size(); ++i) {
    if (got.scales[i] != want.scales[i]) {
      report("scale #" + std::to_string(i) + " got " + hex32(got.scales[i]) + " want " + hex32(want.scales[i]));
    }
  }
  if (f32_bits(got.tensor.encode) != f32_bits(want.tensor.encode) ||
      f32_bits(got.tensor.decode) != f32_bits(want.tensor.decode)) {
    report("tensor scale got " + hex32(f32_bits(got.tensor.encode)) + " want " + hex32(f32_bits(want.tensor.encode)));
  }
  return bad;
}

// Prints one differing output [row, col] in hex.
inline void print_float_mismatch(const std::string& label, int64_t row, int64_t col, float got, float want) {
  std::printf("  MISMATCH %s: [%lld, %lld] got %s want %s\n", label.c_str(), static_cast<long long>(row),
              static_cast<long long>(col), hex32(f32_bits(got)).c_str(), hex32(f32_bits(want)).c_str());
}

inline size_t count_float_mismatches(const std::vector<float>& got, const std::vector<float>& want, int64_t cols,
                                     const std::string& label) {
  size_t bad = 0;
  if (got.size() != want.size()) return want.size() + 1;
  for (size_t i = 0; i < want.size(); ++i) {
    if (!same_float(got[i], want[i]) && ++bad <= 5) {
      print_float_mismatch(label, static_cast<int64_t>(i) / cols, static_cast<int64_t>(i) % cols, got[i], want[i]);
    }
  }
  return bad;
}

// What a GPU quantize test compared with golden: tensors, their codes, scale
// codes and dequantized values, and how many of them differed.
struct QuantTally {
  size_t tensors = 0;
  size_t codes = 0;
  size_t scale_codes = 0;
  size_t values = 0;
  size_t mismatches = 0;

  void compare(const QuantizedTensor& got, const QuantizedTensor& want, const std::string& label) {
    ++tensors;
    codes += want.codes.size();
    scale_codes += want.scales.size();
    mismatches += count_quantized_mismatches(got, want, label);
  }
  void compare_values(const std::vector<float>& got, const std::vector<float>& want, int64_t cols,
                      const std::string& label) {
    ++tensors;
    values += want.size();
    mismatches += count_float_mismatches(got, want, cols, label);
  }
  void print() const {
    std::printf("%zu tensors compared: %zu codes, %zu scale codes, %zu dequantized values; %zu mismatching\n",
                tensors, codes, scale_codes, values, mismatches);
  }
};

inline std::string describe(const QuantConfig& c) {
  return std::string(name(c.format)) + "/" + std::string(name(c.block)) + "/" + std::string(name(c.scale)) + "/" +
         std::string(name(c.rounding)) + (c.rounding == Rounding::kStochastic ? std::to_string(c.sr_bits) : "") +
         (c.rht.enabled() ? "/rht" + std::to_string(c.rht.size) + (c.rht.round_bf16 ? "bf16" : "") : "");
}

}  // namespace nibble::test
