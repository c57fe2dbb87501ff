// Element rounding and tensor quantization.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "nibble/fp32.h"
#include "nibble/quantize.h"

namespace nibble {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

float rne_value(float v, Format f) { return decode_value(f, convert_to_format(v, f, Rounding::kNearestEven)); }

TEST(RoundNearestEven, E2M1TiesGoToTheEvenCode) {
  // Midpoints between neighbours: the even code (mantissa bit 0) wins.
  EXPECT_EQ(rne_value(0.25f, Format::kE2M1), 0.0f);
  EXPECT_EQ(rne_value(0.75f, Format::kE2M1), 1.0f);
  EXPECT_EQ(rne_value(1.25f, Format::kE2M1), 1.0f);
  EXPECT_EQ(rne_value(1.75f, Format::kE2M1), 2.0f);
  EXPECT_EQ(rne_value(2.5f, Format::kE2M1), 2.0f);
  EXPECT_EQ(rne_value(3.5f, Format::kE2M1), 4.0f);
  EXPECT_EQ(rne_value(5.0f, Format::kE2M1), 4.0f);
  EXPECT_EQ(rne_value(-5.0f, Format::kE2M1), -4.0f);
  EXPECT_EQ(rne_value(5.0001f, Format::kE2M1), 6.0f);
}

TEST(RoundNearestEven, SaturatesAndHandlesInfinity) {
  for (Format f : kAllFormats) {
    EXPECT_EQ(rne_value(1000.0f, f), max_value(f)) << name(f);
    EXPECT_EQ(rne_value(-kInf, f), -max_value(f)) << name(f);
    EXPECT_EQ(rne_value(std::numeric_limits<float>::max(), f), max_value(f)) << name(f);
  }
  EXPECT_EQ(rne_value(7.0f, Format::kE2M1), 6.0f);  // tie with the (absent) 8 still saturates
  EXPECT_EQ(rne_value(-7.6f, Format::kInt4), -7.0f);  // the quantizer's range is symmetric
}

TEST(RoundNearestEven, UniformGridsTieToEvenIntegers) {
  EXPECT_EQ(rne_value(0.125f, Format::kE1M2), 0.0f);
  EXPECT_EQ(rne_value(0.375f, Format::kE1M2), 0.5f);
  EXPECT_EQ(rne_value(1.625f, Format::kE1M2), 1.5f);
  EXPECT_EQ(rne_value(0.5f, Format::kInt4), 0.0f);
  EXPECT_EQ(rne_value(1.5f, Format::kInt4), 2.0f);
  EXPECT_EQ(rne_value(-2.5f, Format::kInt4), -2.0f);
  EXPECT_EQ(rne_value(6.5f, Format::kInt4), 6.0f);
}

TEST(RoundNearestEven, KeepsSignedZeroButQuantizerCanonicalizesIt) {
  EXPECT_EQ(convert_to_format(-0.1f, Format::kE2M1, Rounding::kNearestEven), 0x8);
  EXPECT_EQ(convert_to_format(-0.1f, Format::kInt4, Rounding::kNearestEven), 0x0);
  const float x[2] = {-0.1f, -1e-30f};
  uint8_t codes[2] = {0xF, 0xF};
  quantize_block_elements(x, 2, 1.0f, Format::kE2M1, Rounding::kNearestEven, nullptr, 8, ZeroPolicy::kPositive, codes);
  EXPECT_EQ(codes[0], 0);
  EXPECT_EQ(codes[1], 0);
  // The signed-zero policy keeps the sign, as convert_to_format does.
  quantize_block_elements(x, 2, 1.0f, Format::kE2M1, Rounding::kNearestEven, nullptr, 8, ZeroPolicy::kSigned, codes);
  EXPECT_EQ(codes[0], 0x8);
  EXPECT_EQ(codes[1], 0x8);
}

TEST(QuantizeTensor, Fp32ScaleMapsEachBlockAmaxToTheTopCode) {
  std::vector<float> x(64);
  for (size_t i = 0; i < x.size(); ++i) x[i] = std::sin(static_cast<float>(i)) * static_cast<float>(1 + i / 16);
  for (Format f : kAllFormats) {
    QuantConfig cfg;
    cfg.format = f;
    const QuantizedTensor q = quantize(x.data(), 1, 64, cfg);
    ASSERT_EQ(q.scales.size(), 4u);
    for (int b = 0; b < 4; ++b) {
      uint32_t top = 0;
      for (int i = 0; i < 16; ++i) top = std::max(top, decode(f, q.codes[static_cast<size_t>(b * 16 + i)]).units);
      EXPECT_EQ(top, max_units(f)) << name(f) << " block " << b;
    }
  }
}

TEST(QuantizeTensor, DequantizedErrorIsWithinHalfASpacing) {
  const uint64_t seed = 11;
  std::mt19937 rng(seed);
  std::normal_distribution<float> gauss(0.0f, 1.0f);
  std::vector<float> x(32 * 64);
  for (float& v : x) v = gauss(rng);
  int checked = 0;
  for (Format f : kAllFormats) {
    for (ScaleMode m : {ScaleMode::kFP32, ScaleMode::kNVFP4, ScaleMode::kMXCeil}) {
      QuantConfig cfg;
      cfg.format = f;
      cfg.scale = m;
      const QuantizedTensor q = quantize(x.data(), 32, 64, cfg);
      const std::vector<float> y = dequantize(q);
      for (size_t i = 0; i < x.size(); ++i) {
        const float s = decode_scale(scale_format(m), q.scale_code_at(static_cast<int64_t>(i / 64),
                                                                       static_cast<int64_t>(i % 64))) *
                        q.tensor.decode;
        // The largest spacing of each grid, in scaled units: 2 (E2M1), 0.25, 1.
        const float spacing = f == Format::kE2M1 ? 2.0f : (f == Format::kE1M2 ? 0.25f : 1.0f);
        ASSERT_LE(std::fabs(y[i] - x[i]), 0.5f * spacing * s * 1.0001f) << name(f) << " " << name(m) << " i=" << i;
        ++checked;
      }
    }
  }
  EXPECT_EQ(checked, 9 * 32 * 64);
}

TEST(QuantizeTensor, NonFiniteBlocksGetANanScaleAndZeroCodes) {
  std::vector<float> x(48, 1.0f);
  x[3] = kNaN;
  x[20] = -kInf;
  for (ScaleMode m : kAllScaleModes) {
    QuantConfig cfg;
    cfg.scale = m;
    const QuantizedTensor q = quantize(x.data(), 1, 48, cfg);
    EXPECT_EQ(q.scales[0], info(scale_format(m)).nan_code) << name(m);
    EXPECT_EQ(q.scales[1], info(scale_format(m)).nan_code) << name(m);
    EXPECT_NE(q.scales[2], info(scale_format(m)).nan_code) << name(m);
    for (int i = 0; i < 32; ++i) EXPECT_EQ(q.codes[static_cast<size_t>(i)], 0) << name(m);
    const std::vector<float> y = dequantize(q);
    EXPECT_TRUE(std::isnan(y[0]));
    EXPECT_TRUE(std::isnan(y[31]));
    EXPECT_EQ(y[40], 1.0f) << name(m);
  }
}

TEST(QuantizeTensor, ZeroBlocksAndPartialBlocks) {
  std::vector<float> x(3 * 20, 0.0f);
  for (int r = 0; r < 3; ++r) x[static_cast<size_t>(r * 20 + 17)] = 3.0f;  // only the partial tail is non-zero
  for (BlockShape b : {BlockShape::k1x16, BlockShape::k1x32, BlockShape::k16x16}) {
    QuantConfig cfg;
    cfg.block = b;
    const QuantizedTensor q = quantize(x.data(), 3, 20, cfg);
    const std::vector<float> y = dequantize(q);
    for (size_t i = 0; i < x.size(); ++i) EXPECT_EQ(y[i], x[i]) << name(b) << " i=" << i;
  }
  QuantConfig cfg;
  const QuantizedTensor q = quantize(x.data(), 3, 20, cfg);
  EXPECT_EQ(q.scales.size(), 6u);
  EXPECT_EQ(q.scales[0], 0u);  // an all-zero block's fp32 scale is +0
}

// docs/numerics.md, scale underflow: an FP32 scale rounds to 0 exactly when
// amax <= gmax 2^-150 (E2M1 and INT4 have such amax; E1M2, whose gmax is
// 1.75, none); the encode factor is then FLT_MAX, which keeps the block's
// elements far below the grid's first step. For the smallest amax, with the
// scale 0 or a few subnormal steps, every code is 0 and the block
// dequantizes to zeros.
TEST(QuantizeTensor, Fp32ScaleUnderflowGivesZeroCodes) {
  size_t cases = 0, zero_scales = 0;
  for (Format f : kAllFormats) {
    for (uint32_t k = 1; k <= 8; ++k) {
      const float amax = f32_from_bits(k);  // k * 2^-149
      std::vector<float> x(16, 0.0f);
      x[0] = amax;
      x[1] = -amax;
      x[2] = f32_from_bits(k / 2);
      QuantConfig cfg;
      cfg.format = f;
      const QuantizedTensor q = quantize(x.data(), 1, 16, cfg);
      const bool zero_scale = static_cast<double>(amax) <= static_cast<double>(max_value(f)) * 0x1p-150;
      EXPECT_EQ(q.scales[0] == 0u, zero_scale) << name(f) << " amax " << k << " * 2^-149";
      for (uint8_t c : q.codes) EXPECT_EQ(c, 0) << name(f) << " amax " << k << " * 2^-149";
      for (float y : dequantize(q)) EXPECT_EQ(y, 0.0f) << name(f) << " amax " << k << " * 2^-149";
      zero_scales += zero_scale ? 1u : 0u;
      ++cases;
    }
  }
  EXPECT_EQ(cases, 24u);
  EXPECT_EQ(zero_scales, 6u);  // E2M1: 1..3 * 2^-149; INT4: 1..3 * 2^-149
}

TEST(QuantizeTensor, SixteenBySixteenBlocksShareOneScale) {
  std::vector<float> x(32 * 32);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i % 37) - 18.0f;
  QuantConfig cfg;
  cfg.block = BlockShape::k16x16;
  cfg.scale = ScaleMode::kMXFloor;
  const QuantizedTensor q = quantize(x.data(), 32, 32, cfg);
  ASSERT_EQ(q.scales.size(), 4u);
  EXPECT_EQ(q.scale_code_at(0, 0), q.scale_code_at(15, 15));
  EXPECT_EQ(q.scale_code_at(16, 0), q.scales[2]);
}

TEST(QuantizeTensor, RejectsInvalidConfigurations) {
  std::vector<float> x(40, 1.0f);
  QuantConfig cfg;
  cfg.sr_bits = 9;
  EXPECT_THROW(quantize(x.data(), 1, 40, cfg), std::invalid_argument);
  cfg = {};
  cfg.rht.size = 16;
  EXPECT_THROW(quantize(x.data(), 1, 40, cfg), std::invalid_argument);  // 40 is not a multiple of 16
  cfg.rht.size = 24;
  EXPECT_THROW(quantize(x.data(), 1, 48, cfg), std::invalid_argument);
  EXPECT_THROW(quantize(x.data(), 0, 40, QuantConfig{}), std::invalid_argument);
}

// Every field takes part in a configuration's equality (the training backend
// reuses a quantized operand only for an equal configuration).
TEST(QuantConfigEquality, EachFieldMakesConfigurationsDiffer) {
  const QuantConfig base;
  EXPECT_TRUE(base == QuantConfig{});
  std::vector<void (*)(QuantConfig&)> changes = {
      [](QuantConfig& c) { c.format = Format::kE1M2; },
      [](QuantConfig& c) { c.block = BlockShape::k16x16; },
      [](QuantConfig& c) { c.scale = ScaleMode::kNVFP4; },
      [](QuantConfig& c) { c.rounding = Rounding::kStochastic; },
      [](QuantConfig& c) { c.sr_bits = 3; },
      [](QuantConfig& c) { c.rht.size = 16; },
      [](QuantConfig& c) { c.rht.round_bf16 = true; },
      [](QuantConfig& c) { c.seed = 7; },
      [](QuantConfig& c) { c.stream = 2; },
      [](QuantConfig& c) { c.policy.zero = ZeroPolicy::kSigned; },
      [](QuantConfig& c) { c.policy.nonfinite = NonFinitePolicy::kPropagate; },
  };
  for (size_t i = 0; i < changes.size(); ++i) {
    QuantConfig c = base;
    changes[i](c);
    EXPECT_TRUE(c != base) << "change " << i;
    EXPECT_FALSE(c == base) << "change " << i;
  }
  EXPECT_EQ(changes.size(), 11u);
}

}  // namespace
}  // namespace nibble
