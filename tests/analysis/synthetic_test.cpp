// Synthetic tensors: reproducible to the bit from (seed, stream, index), and
// distributed as documented (unit variance, the right shape).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <vector>

#include "nibble/analysis/synthetic.h"
#include "nibble/fp32.h"

namespace nibble::analysis {
namespace {

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (f32_bits(a[i]) != f32_bits(b[i])) return false;
  }
  return true;
}

TEST(Synthetic, NamesRoundTrip) {
  int checked = 0;
  for (Distribution d : kAllDistributions) {
    EXPECT_EQ(parse_distribution(name(d)), d);
    ++checked;
  }
  EXPECT_EQ(parse_distribution("cauchy"), std::nullopt);
  EXPECT_GT(checked, 0);
}

TEST(Synthetic, ReproducibleFromSeedStreamAndIndexAlone) {
  int checked = 0;
  for (uint64_t seed : {0ull, 7ull, 0x123456789abcdefull}) {
    std::printf("seed %llu\n", static_cast<unsigned long long>(seed));
    for (Distribution d : kAllDistributions) {
      const std::vector<float> a = synthetic_tensor(d, 8, 32, seed);
      EXPECT_TRUE(same_bits(a, synthetic_tensor(d, 8, 32, seed))) << name(d);
      EXPECT_FALSE(same_bits(a, synthetic_tensor(d, 8, 32, seed + 1))) << name(d);
      EXPECT_FALSE(same_bits(a, synthetic_tensor(d, 8, 32, seed, 1))) << name(d);
      if (d != Distribution::kOutlier) {
        // Element i depends only on i: the same 256 elements in another shape.
        EXPECT_TRUE(same_bits(a, synthetic_tensor(d, 1, 256, seed))) << name(d);
        EXPECT_TRUE(same_bits(a, synthetic_tensor(d, 16, 16, seed))) << name(d);
      }
      EXPECT_TRUE(std::all_of(a.begin(), a.end(), [](float v) { return f32_is_finite(v); })) << name(d);
      ++checked;
    }
  }
  EXPECT_GT(checked, 0);
}

TEST(Synthetic, DistributionsDrawIndependentWords) {
  const uint64_t seed = 3;
  std::printf("seed %llu\n", static_cast<unsigned long long>(seed));
  const std::vector<float> g = synthetic_tensor(Distribution::kGaussian, 4, 64, seed);
  const std::vector<float> l = synthetic_tensor(Distribution::kLaplace, 4, 64, seed);
  const std::vector<float> u = synthetic_tensor(Distribution::kUniform, 4, 64, seed);
  EXPECT_FALSE(same_bits(g, l));
  EXPECT_FALSE(same_bits(l, u));
}

TEST(Synthetic, OutlierIsTheGaussianTensorWithOneColumnTimesTwenty) {
  int checked = 0;
  for (uint64_t seed : {1ull, 2ull, 3ull}) {
    std::printf("seed %llu\n", static_cast<unsigned long long>(seed));
    const int64_t rows = 16, cols = 48;
    const int64_t hot = outlier_column(seed, cols);
    ASSERT_GE(hot, 0);
    ASSERT_LT(hot, cols);
    const std::vector<float> g = synthetic_tensor(Distribution::kGaussian, rows, cols, seed);
    const std::vector<float> o = synthetic_tensor(Distribution::kOutlier, rows, cols, seed);
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t c = 0; c < cols; ++c) {
        const size_t i = static_cast<size_t>(r * cols + c);
        const float expected = c == hot ? g[i] * kOutlierGain : g[i];
        EXPECT_EQ(f32_bits(o[i]), f32_bits(expected)) << "row " << r << " col " << c;
        ++checked;
      }
    }
  }
  EXPECT_GT(checked, 0);
}

// Exact CDFs of the unit-variance distributions of synthetic.h.
double cdf(Distribution d, double x) {
  const double pi = std::acos(-1.0);
  switch (d) {
    case Distribution::kGaussian:
    case Distribution::kOutlier: return 0.5 * std::erfc(-x / std::sqrt(2.0));
    case Distribution::kLaplace: {
      const double b = 1.0 / std::sqrt(2.0);
      return x < 0 ? 0.5 * std::exp(x / b) : 1.0 - 0.5 * std::exp(-x / b);
    }
    case Distribution::kStudentT:  // t_3 / sqrt(3): F(x) = 1/2 + (x / (1 + x^2) + atan x) / pi
      return 0.5 + (x / (1.0 + x * x) + std::atan(x)) / pi;
    case Distribution::kUniform: return std::clamp((x + std::sqrt(3.0)) / (2.0 * std::sqrt(3.0)), 0.0, 1.0);
  }
  return 0.0;
}

// Kolmogorov-Smirnov distance between the sample and the exact CDF.
double ks_distance(std::vector<float> x, Distribution d) {
  std::sort(x.begin(), x.end());
  const double n = static_cast<double>(x.size());
  double worst = 0.0;
  for (size_t i = 0; i < x.size(); ++i) {
    const double f = cdf(d, x[i]);
    worst = std::max({worst, f - static_cast<double>(i) / n, static_cast<double>(i + 1) / n - f});
  }
  return worst;
}

TEST(Synthetic, SamplesFollowTheirDistributions) {
  const int64_t rows = 256, cols = 256;
  // 1.95 / sqrt(n) is the KS critical value at p = 0.001.
  const double ks_bound = 1.95 / std::sqrt(static_cast<double>(rows * cols));
  int checked = 0;
  for (uint64_t seed : {11ull, 12ull}) {
    std::printf("seed %llu\n", static_cast<unsigned long long>(seed));
    for (Distribution d : {Distribution::kGaussian, Distribution::kLaplace, Distribution::kStudentT,
                           Distribution::kUniform}) {
      const std::vector<float> x = synthetic_tensor(d, rows, cols, seed);
      EXPECT_LT(ks_distance(x, d), ks_bound) << name(d) << " seed " << seed;
      double s1 = 0, s2 = 0, s4 = 0;
      for (float v : x) {
        s1 += v;
        s2 += static_cast<double>(v) * v;
        s4 += std::pow(static_cast<double>(v), 4);
      }
      const double n = static_cast<double>(x.size());
      EXPECT_NEAR(s1 / n, 0.0, 0.02) << name(d);
      if (d == Distribution::kStudentT) continue;  // infinite 4th moment: the sample moments wander
      EXPECT_NEAR(s2 / n, 1.0, 0.03) << name(d);
      const double kurtosis = (s4 / n) / ((s2 / n) * (s2 / n));
      const double expected = d == Distribution::kGaussian ? 3.0 : d == Distribution::kLaplace ? 6.0 : 1.8;
      EXPECT_NEAR(kurtosis, expected, 0.1 * expected) << name(d);
      ++checked;
    }
  }
  EXPECT_GT(checked, 0);
}

TEST(Synthetic, RejectsEmptyShapes) {
  EXPECT_THROW(synthetic_tensor(Distribution::kGaussian, 0, 16, 1), std::invalid_argument);
  EXPECT_THROW(synthetic_tensor(Distribution::kGaussian, 4, -1, 1), std::invalid_argument);
}

}  // namespace
}  // namespace nibble::analysis
