// The Random Hadamard Transform's algebraic properties.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "nibble/fp32.h"
#include "nibble/rht.h"

namespace nibble {
namespace {

// H[i][j] = (-1)^popcount(i & j): the Sylvester Hadamard matrix.
int hadamard(int i, int j) { return __builtin_popcount(static_cast<unsigned>(i & j)) % 2 == 0 ? 1 : -1; }

bool sign_negative(const PhiloxWords& s, int i) { return ((s[static_cast<size_t>(i / 32)] >> (i % 32)) & 1u) != 0; }

TEST(Rht, EqualsTheMatrixProductOnExactInputs) {
  // Small integers keep every butterfly exact and 1/4, 1/8 are powers of two,
  // so the FP32 result equals x S H / sqrt(n) computed in double.
  for (int n : {16, 64}) {
    for (uint64_t seed : {1ull, 2ull, 99ull}) {
      const PhiloxWords s = rht_signs(seed);
      std::vector<float> x(static_cast<size_t>(n));
      for (int i = 0; i < n; ++i) x[static_cast<size_t>(i)] = static_cast<float>((i * 7 + 3) % 11) - 5.0f;
      std::vector<float> y = x;
      rht_group(y.data(), n, s, false);
      for (int j = 0; j < n; ++j) {
        double want = 0;
        for (int i = 0; i < n; ++i) {
          want += (sign_negative(s, i) ? -1.0 : 1.0) * double(x[static_cast<size_t>(i)]) * hadamard(i, j);
        }
        want /= std::sqrt(double(n));
        ASSERT_EQ(double(y[static_cast<size_t>(j)]), want) << "n=" << n << " seed=" << seed << " j=" << j;
      }
    }
  }
}

TEST(Rht, PreservesNormsAndGemmsUpToRounding) {
  const uint64_t seed = 5;
  SCOPED_TRACE("seed 5");
  std::mt19937 rng(seed);
  std::normal_distribution<float> gauss;
  for (int n : {16, 32, 64, 128}) {
    std::vector<float> a(static_cast<size_t>(n)), b(static_cast<size_t>(n));
    for (size_t i = 0; i < a.size(); ++i) {
      a[i] = gauss(rng);
      b[i] = gauss(rng);
    }
    double dot_before = 0, norm_before = 0;
    for (size_t i = 0; i < a.size(); ++i) {
      dot_before += double(a[i]) * b[i];
      norm_before += double(a[i]) * a[i];
    }
    RhtConfig cfg{n, false};
    rht_rows(a.data(), 1, n, cfg, 42);
    rht_rows(b.data(), 1, n, cfg, 42);  // the same signs on both operands
    double dot_after = 0, norm_after = 0;
    for (size_t i = 0; i < a.size(); ++i) {
      dot_after += double(a[i]) * b[i];
      norm_after += double(a[i]) * a[i];
    }
    EXPECT_NEAR(norm_after, norm_before, 1e-5 * norm_before) << n;
    EXPECT_NEAR(dot_after, dot_before, 1e-5 * norm_before) << n;
  }
}

TEST(Rht, SignsComeFromTheSeed) {
  EXPECT_EQ(rht_signs(3), rht_signs(3));
  EXPECT_NE(rht_signs(3), rht_signs(4));
  EXPECT_EQ(rht_signs(3), philox4x32_10(3, 0, 0, PhiloxDomain::kRhtSigns));
}

TEST(Rht, Bf16OptionRoundsEveryOutput) {
  std::vector<float> x(16);
  for (size_t i = 0; i < x.size(); ++i) x[i] = 1.0f + static_cast<float>(i) * 0.001953125f + 1e-4f;
  rht_rows(x.data(), 1, 16, RhtConfig{16, true}, 8);
  for (float v : x) EXPECT_EQ(f32_bits(v) & 0xFFFFu, 0u) << v;
}

TEST(Rht, RejectsSizesThatDoNotFit) {
  std::vector<float> x(48, 1.0f);
  EXPECT_THROW(rht_rows(x.data(), 1, 48, RhtConfig{32, false}, 0), std::invalid_argument);
  EXPECT_THROW(rht_rows(x.data(), 1, 48, RhtConfig{8, false}, 0), std::invalid_argument);
  EXPECT_NO_THROW(rht_rows(x.data(), 1, 48, RhtConfig{16, false}, 0));
}

}  // namespace
}  // namespace nibble
