// The device layer: the SystemC model is bit-exact against golden::gemm over
// array shapes, format pairs, scale modes and block shapes, with and without
// randomized stalls; its cycle counts follow the documented formulas
// (sim/include/nibble/sim/systemc_device.h). Seeds are printed.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

#include "nibble/fp32.h"
#include "nibble/model/config.h"
#include "nibble/quantize.h"
#include "nibble/sim/device.h"
#include "nibble/sim/systemc_device.h"

#include "model_test_util.h"

namespace nibble::sim {
namespace {

using model_test::test_seed;

using model_test::random_operand;

void expect_accounting(const GemmStats& s) {
  EXPECT_EQ(s.cycles, s.beats + s.stall_operand + s.stall_output + s.stall_pipeline)
      << "every cycle is a beat or exactly one stall";
}

TEST(ModelDevice, BitExactEveryFormatPairShapeAndScaleMode) {
  const uint64_t seed = test_seed();
  std::mt19937_64 rng(seed);
  struct Shape {
    int rows, cols, lanes;
  };
  const std::vector<Shape> shapes = {{4, 4, 16}, {1, 1, 16}, {3, 5, 16}, {8, 2, 32}, {2, 7, 32}};
  uint64_t cases = 0, elements = 0;
  for (const Shape& sh : shapes) {
    model::TileConfig cfg;
    cfg.rows = sh.rows;
    cfg.cols = sh.cols;
    cfg.lanes = sh.lanes;
    SystemCDevice dev(cfg);
    for (Format fa : kAllFormats) {
      for (Format fb : kAllFormats) {
        for (ScaleMode sm : kAllScaleModes) {
          const BlockShape ba = sh.lanes == 32 && rng() % 2 ? BlockShape::k1x32
                                : rng() % 3                   ? BlockShape::k1x16
                                                              : BlockShape::k16x16;
          const BlockShape bb = sh.lanes == 32 && rng() % 2 ? BlockShape::k1x32 : BlockShape::k1x16;
          const int64_t m = 1 + static_cast<int64_t>(rng() % 13);
          const int64_t n = 1 + static_cast<int64_t>(rng() % 11);
          const int64_t k = 1 + static_cast<int64_t>(rng() % 100);
          const QuantizedTensor a = random_operand(rng, m, k, fa, sm, ba, rng() % 4 == 0);
          const QuantizedTensor b = random_operand(rng, n, k, fb, sm, bb, false);
          SCOPED_TRACE(testing::Message() << "array " << sh.rows << "x" << sh.cols << "x" << sh.lanes << " gemm " << m
                                          << "x" << n << "x" << k << " " << name(fa) << "*" << name(fb) << " "
                                          << name(sm) << " blocks " << name(ba) << "/" << name(bb));
          const GemmResult r = dev.run(a, b);
          const CheckResult c = check_against_golden(a, b, r);
          ASSERT_TRUE(c.ok()) << c.describe();
          ASSERT_TRUE(r.stats.has_value());
          expect_accounting(*r.stats);
          ++cases;
          elements += c.compared;
        }
      }
    }
  }
  std::printf("SystemC vs golden: %llu GEMMs, %llu elements bit-exact\n", static_cast<unsigned long long>(cases),
              static_cast<unsigned long long>(elements));
  EXPECT_EQ(cases, shapes.size() * 9 * 4);
}

TEST(ModelDevice, RandomStallsChangeTimingNotResults) {
  const uint64_t seed = test_seed();
  std::mt19937_64 rng(seed);
  model::TileConfig cfg;
  cfg.bandwidth = 1e9;  // compute-bound with short tiles: the output side limits
  uint64_t cases = 0;
  GemmStats unstalled;
  const QuantizedTensor a = random_operand(rng, 11, 30, Format::kE2M1, ScaleMode::kNVFP4, BlockShape::k1x16, false);
  const QuantizedTensor b = random_operand(rng, 9, 30, Format::kInt4, ScaleMode::kNVFP4, BlockShape::k16x16, false);
  {
    SystemCDevice dev(cfg);
    unstalled = *dev.run(a, b).stats;
  }
  for (int i = 0; i < 6; ++i) {
    const StallConfig st{0.15 * i, 0.12 * i, seed + static_cast<uint64_t>(i)};
    std::printf("stalls in %.2f out %.2f seed 0x%llx\n", st.input, st.output, static_cast<unsigned long long>(st.seed));
    SystemCDevice dev(cfg, st);
    const GemmResult r = dev.run(a, b);
    const CheckResult c = check_against_golden(a, b, r);
    ASSERT_TRUE(c.ok()) << c.describe();
    expect_accounting(*r.stats);
    EXPECT_GE(r.stats->cycles, unstalled.cycles);
    EXPECT_EQ(r.stats->beats, unstalled.beats);
    if (i >= 4) {
      EXPECT_GT(r.stats->stall_output, 0u);
    }
    ++cases;
  }
  EXPECT_EQ(cases, 6u);
}

// Hand-computable timing (formulas documented in systemc_device.h).
TEST(ModelSequencer, ComputeBoundCycles) {
  std::mt19937_64 rng(1);
  model::TileConfig cfg;  // 4x4x16, latency 4
  cfg.bandwidth = 1e9;
  SystemCDevice dev(cfg);
  const uint64_t L = static_cast<uint64_t>(cfg.latency), R = static_cast<uint64_t>(cfg.rows);
  int cases = 0;
  for (const uint64_t nk : {1u, 2u, 7u, 8u, 9u, 20u}) {
    for (const int64_t mn : {4, 8}) {
      const int64_t k = static_cast<int64_t>(nk) * 16;
      const QuantizedTensor a = random_operand(rng, mn, k, Format::kE1M2, ScaleMode::kMXFloor, BlockShape::k1x16, false);
      const QuantizedTensor b = random_operand(rng, mn, k, Format::kE2M1, ScaleMode::kMXFloor, BlockShape::k1x16, false);
      const GemmStats s = *dev.run(a, b).stats;
      const uint64_t t = static_cast<uint64_t>((mn / 4) * (mn / 4));
      const uint64_t want = nk + (t - 1) * std::max(nk, L + R) + L + R - 1;
      EXPECT_EQ(s.cycles, want) << "nk " << nk << " tiles " << t;
      EXPECT_EQ(s.beats, t * nk);
      EXPECT_EQ(s.stall_output, 0u);
      EXPECT_EQ(s.stall_operand, 0u) << "handshakes are combinational: the first beat is taken in cycle 0";
      expect_accounting(s);
      EXPECT_NEAR(s.utilization(), static_cast<double>(t * nk) / static_cast<double>(want), 1e-12);
      ++cases;
    }
  }
  EXPECT_EQ(cases, 12);
}

TEST(ModelSequencer, BandwidthBoundCycles) {
  std::mt19937_64 rng(2);
  model::TileConfig cfg;  // 4x4x16
  int cases = 0;
  // nvfp4: E4M3 scales, 1 byte. A full beat: 4 rows * (8 + 1) + 4 cols * (8 + 1) = 72 bytes.
  for (const double bw : {8.0, 9.0, 20.0, 36.0}) {
    cfg.bandwidth = bw;
    SystemCDevice dev(cfg);
    const uint64_t f = static_cast<uint64_t>(std::ceil(72.0 / bw));
    for (const uint64_t nk : {2u, 4u, 9u}) {
      if (nk * f < static_cast<uint64_t>(cfg.latency + cfg.rows)) continue;
      const int64_t k = static_cast<int64_t>(nk) * 16;
      const QuantizedTensor a = random_operand(rng, 8, k, Format::kInt4, ScaleMode::kNVFP4, BlockShape::k1x16, false);
      const QuantizedTensor b = random_operand(rng, 12, k, Format::kE2M1, ScaleMode::kNVFP4, BlockShape::k1x16, false);
      const GemmStats s = *dev.run(a, b).stats;
      const uint64_t t = 2 * 3;
      const uint64_t want = t * nk * f + static_cast<uint64_t>(cfg.latency + cfg.rows) - 1;
      EXPECT_EQ(s.cycles, want) << "bandwidth " << bw << " nk " << nk;
      EXPECT_EQ(s.operand_bytes, t * nk * 72);
      EXPECT_EQ(s.stall_operand, t * nk * (f - 1));
      EXPECT_EQ(s.stall_output, 0u);
      expect_accounting(s);
      ++cases;
    }
  }
  EXPECT_GE(cases, 8);
}

TEST(ModelDevice, GoldenDeviceAndCheckerCatchAFlippedBit) {
  std::mt19937_64 rng(3);
  const QuantizedTensor a = random_operand(rng, 5, 40, Format::kE2M1, ScaleMode::kFP32, BlockShape::k1x16, false);
  const QuantizedTensor b = random_operand(rng, 6, 40, Format::kE1M2, ScaleMode::kFP32, BlockShape::k1x16, false);
  GoldenDevice golden;
  GemmResult r = golden.run(a, b);
  EXPECT_FALSE(r.stats.has_value());
  EXPECT_TRUE(check_against_golden(a, b, r).ok());
  r.c[7] = f32_from_bits(f32_bits(r.c[7]) ^ 1u);
  const CheckResult c = check_against_golden(a, b, r);
  EXPECT_FALSE(c.ok());
  EXPECT_EQ(c.mismatches, 1u);
  EXPECT_EQ(c.first_m, 1);
  EXPECT_EQ(c.first_n, 1);
}

TEST(ModelDevice, RefusesOperandsTheTileCannotTake) {
  std::mt19937_64 rng(4);
  model::TileConfig cfg;
  cfg.formats = {Format::kE2M1};
  cfg.scale_modes = {ScaleMode::kNVFP4};
  SystemCDevice dev(cfg);
  const auto q = [&](int64_t rows, int64_t k, Format f, ScaleMode s, BlockShape b) {
    return random_operand(rng, rows, k, f, s, b, false);
  };
  const QuantizedTensor good = q(4, 32, Format::kE2M1, ScaleMode::kNVFP4, BlockShape::k1x16);
  EXPECT_NO_THROW(dev.run(good, good));
  EXPECT_THROW(dev.run(good, q(4, 48, Format::kE2M1, ScaleMode::kNVFP4, BlockShape::k1x16)), std::invalid_argument);
  EXPECT_THROW(dev.run(good, q(4, 32, Format::kInt4, ScaleMode::kNVFP4, BlockShape::k1x16)), std::invalid_argument);
  EXPECT_THROW(dev.run(good, q(4, 32, Format::kE2M1, ScaleMode::kFP32, BlockShape::k1x16)), std::invalid_argument);
  const QuantizedTensor wide = q(4, 32, Format::kE2M1, ScaleMode::kNVFP4, BlockShape::k1x32);
  EXPECT_THROW(dev.run(wide, wide), std::invalid_argument) << "1x32 blocks need 32 lanes";
}

}  // namespace
}  // namespace nibble::sim
