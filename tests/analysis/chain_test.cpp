// The compounding chain: E2M1's shrinkage multiplies through depth while the
// uniform grids keep a gain near 1.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdio>

#include "nibble/analysis/chain.h"

namespace nibble::analysis {
namespace {

QuantConfig config(Format f, int rht, uint64_t seed) {
  QuantConfig c;
  c.format = f;
  c.rht.size = rht;
  c.seed = seed;
  return c;
}

TEST(Chain, ReferenceIsTheDoublePrecisionProduct) {
  const uint64_t seed = 2;
  std::printf("seed %llu\n", static_cast<unsigned long long>(seed));
  const ChainProblem p = make_chain_problem({3, 32, 8}, seed);
  ASSERT_EQ(p.weights.size(), 3u);
  ASSERT_EQ(p.reference.size(), 3u);
  std::vector<double> y(p.input.begin(), p.input.end());
  int checked = 0;
  for (size_t l = 0; l < 3; ++l) {
    std::vector<double> next(8 * 32, 0.0);
    for (int64_t b = 0; b < 8; ++b) {
      for (int64_t o = 0; o < 32; ++o) {
        for (int64_t i = 0; i < 32; ++i) {
          next[static_cast<size_t>(b * 32 + o)] +=
              y[static_cast<size_t>(b * 32 + i)] * static_cast<double>(p.weights[l][static_cast<size_t>(o * 32 + i)]);
        }
      }
    }
    y = next;
    for (size_t k = 0; k < y.size(); ++k) {
      EXPECT_NEAR(p.reference[l][k], y[k], 1e-12 * (1 + std::fabs(y[k])));
      ++checked;
    }
  }
  EXPECT_GT(checked, 0);
}

TEST(Chain, E2M1DecaysBelowE1M2AtDepthEight) {
  int checked = 0;
  for (uint64_t seed : {1ull, 2ull}) {
    std::printf("seed %llu\n", static_cast<unsigned long long>(seed));
    const ChainProblem p = make_chain_problem({8, 256, 64}, seed);
    for (int rht : {0, 16}) {
      const std::vector<ChainDepth> e2m1 = run_chain(p, config(Format::kE2M1, rht, seed));
      const std::vector<ChainDepth> e1m2 = run_chain(p, config(Format::kE1M2, rht, seed));
      ASSERT_EQ(e2m1.size(), 8u);
      ASSERT_EQ(e1m2.size(), 8u);
      for (size_t l = 0; l < 8; ++l) {
        EXPECT_EQ(e2m1[l].depth, static_cast<int>(l + 1));
        EXPECT_LE(e2m1[l].cosine, 1.0);
        EXPECT_GT(e2m1[l].cosine, 0.5);
      }
      EXPECT_LT(e2m1[7].eta, e1m2[7].eta - 0.02) << "seed " << seed << " rht " << rht;
      EXPECT_LT(e2m1[7].eta, e2m1[3].eta) << "seed " << seed << " rht " << rht;
      EXPECT_LT(e2m1[3].eta, e2m1[0].eta) << "seed " << seed << " rht " << rht;
      EXPECT_LT(e2m1[0].eta, 1.0) << "seed " << seed << " rht " << rht;
      ++checked;
    }
  }
  EXPECT_GT(checked, 0);
}

TEST(Chain, UniformGridsGiveTheSameChainUnderFp32Scales) {
  const uint64_t seed = 3;
  std::printf("seed %llu\n", static_cast<unsigned long long>(seed));
  const ChainProblem p = make_chain_problem({4, 64, 16}, seed);
  const std::vector<ChainDepth> e1m2 = run_chain(p, config(Format::kE1M2, 16, seed));
  const std::vector<ChainDepth> int4 = run_chain(p, config(Format::kInt4, 16, seed));
  ASSERT_EQ(e1m2.size(), int4.size());
  ASSERT_FALSE(e1m2.empty());
  for (size_t l = 0; l < e1m2.size(); ++l) {
    EXPECT_EQ(e1m2[l].eta, int4[l].eta);
    EXPECT_EQ(e1m2[l].cosine, int4[l].cosine);
  }
}

TEST(Chain, RejectsBadShapes) {
  EXPECT_THROW(make_chain_problem({0, 16, 16}, 1), std::invalid_argument);
  EXPECT_THROW(make_chain_problem({2, 0, 16}, 1), std::invalid_argument);
  EXPECT_THROW(make_chain_problem({2, 16, -1}, 1), std::invalid_argument);
  const ChainProblem p = make_chain_problem({1, 24, 4}, 1);
  EXPECT_THROW(run_chain(p, config(Format::kE2M1, 16, 1)), std::invalid_argument);
}

// The limits of nibble/limits.h hold for every caller, before anything is allocated.
TEST(Chain, RejectsShapesBeyondTheLimits) {
  EXPECT_THROW(make_chain_problem({4097, 1, 1}, 1), std::invalid_argument);             // layers
  EXPECT_THROW(make_chain_problem({4096, 256, 1}, 1), std::invalid_argument);           // 2^28 elements
  EXPECT_THROW(make_chain_problem({1, 1, INT64_MAX}, 1), std::invalid_argument);        // width + batch wraps
  EXPECT_THROW(make_chain_problem({1, 8192, 20000}, 1), std::invalid_argument);         // 2^40 MACs
  EXPECT_NO_THROW(make_chain_problem({4096, 1, 1}, 1));
}

}  // namespace
}  // namespace nibble::analysis
