// Stochastic rounding: its random-bit layout and its statistics.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "nibble/philox.h"
#include "nibble/quantize.h"

namespace nibble {
namespace {

// Known-answer vectors published with Random123 (kat_vectors, philox4x32 10 rounds).
TEST(Philox, MatchesTheRandom123KnownAnswers) {
  EXPECT_EQ(philox4x32_10(0, 0, 0, PhiloxDomain{0}), (PhiloxWords{0x6627e8d5u, 0xe169c58du, 0xbc57ac4cu, 0x9b00dbd8u}));
  EXPECT_EQ(philox4x32_10(~0ull, ~0ull, 0xffffffffu, PhiloxDomain{0xffffffffu}),
            (PhiloxWords{0x408f276du, 0x41c83b0eu, 0xa20bc7c6u, 0x6d5451fdu}));
  EXPECT_EQ(philox4x32_10(0x299f31d0a4093822ull, 0x85a308d3243f6a88ull, 0x13198a2eu, PhiloxDomain{0x03707344u}),
            (PhiloxWords{0xd16cfe09u, 0x94fdccebu, 0x5001e420u, 0x24126ea1u}));
}

TEST(Philox, LaneBitsAreTheTopBitsOfEachByte) {
  const PhiloxWords w = {0x44332211u, 0x88776655u, 0xccbbaa99u, 0x00ffeeddu};
  EXPECT_EQ(sr_lane_bits(w, 0, 8), 0x11u);
  EXPECT_EQ(sr_lane_bits(w, 3, 8), 0x44u);
  EXPECT_EQ(sr_lane_bits(w, 5, 4), 0x6u);
  EXPECT_EQ(sr_lane_bits(w, 15, 8), 0x00u);
  EXPECT_EQ(sr_lane_bits(w, 14, 1), 1u);
  EXPECT_EQ(sr_group(0, 15, 40), 0u);
  EXPECT_EQ(sr_group(0, 16, 40), 1u);
  EXPECT_EQ(sr_group(1, 0, 40), 3u);  // ceil(40/16) groups per row
}

// Mean of SR over `draws` independent random bytes for one value.
double sr_mean(float v, Format f, int bits, int draws) {
  double sum = 0;
  for (int d = 0; d < draws; ++d) {
    const PhiloxWords w = philox4x32_10(1234, static_cast<uint64_t>(d / 16), 0, PhiloxDomain::kStochasticRounding);
    const uint32_t r = sr_lane_bits(w, d % 16, bits);
    sum += decode_value(f, convert_to_format(v, f, Rounding::kStochastic, r, bits));
  }
  return sum / draws;
}

TEST(StochasticRounding, IsUnbiasedWithinItsTruncationBound) {
  // E[q] - v lies in (-d 2^-B, 0] (d the local spacing) up to sampling noise.
  const int draws = 1 << 16;
  int checked = 0;
  for (Format f : kAllFormats) {
    for (int bits : {2, 4, 8}) {
      for (float v : {0.1f, 0.3f, 0.77f, 1.1f, 1.3f, 2.2f, 2.6f, 3.3f, 4.4f, 5.5f, 5.9f, -2.6f, -0.33f}) {
        if (std::fabs(v) >= max_value(f)) continue;
        const double d = f == Format::kE2M1 ? (std::fabs(v) < 2 ? 0.5 : (std::fabs(v) < 4 ? 1.0 : 2.0))
                                            : (f == Format::kE1M2 ? 0.25 : 1.0);
        const double bias = (sr_mean(v, f, bits, draws) - v) * (v < 0 ? -1 : 1);  // along |v|
        const double noise = 5 * d / std::sqrt(double(draws));                      // 5 sigma, p(1-p) <= 1/4 -> d/2
        EXPECT_LE(bias, noise) << name(f) << " B=" << bits << " v=" << v;
        EXPECT_GE(bias, -d * std::ldexp(1.0, -bits) - noise) << name(f) << " B=" << bits << " v=" << v;
        ++checked;
      }
    }
  }
  EXPECT_GT(checked, 90);
}

TEST(StochasticRounding, ValuesOnTheGridNeverMove) {
  for (Format f : kAllFormats) {
    for (uint8_t c = 0; c < 16; ++c) {
      const float v = decode_value(f, c);
      if (std::fabs(v) > max_value(f)) continue;  // INT4 -8 saturates to -7
      for (uint32_t r : {0u, 127u, 255u}) {
        EXPECT_EQ(decode_value(f, convert_to_format(v, f, Rounding::kStochastic, r, 8)), v) << name(f) << " " << v;
      }
    }
  }
}

TEST(StochasticRounding, IsIdenticalForIdenticalSeedStreamAndIndex) {
  std::vector<float> x(8 * 48);
  for (size_t i = 0; i < x.size(); ++i) x[i] = std::sin(static_cast<float>(i) * 0.37f) * 3.0f;
  QuantConfig cfg;
  cfg.rounding = Rounding::kStochastic;
  cfg.seed = 77;
  cfg.stream = 3;
  const QuantizedTensor a = quantize(x.data(), 8, 48, cfg);
  const QuantizedTensor b = quantize(x.data(), 8, 48, cfg);
  EXPECT_EQ(a.codes, b.codes);
  cfg.stream = 4;
  EXPECT_NE(quantize(x.data(), 8, 48, cfg).codes, a.codes);
  cfg.stream = 3;
  cfg.seed = 78;
  EXPECT_NE(quantize(x.data(), 8, 48, cfg).codes, a.codes);
  // The bits depend on (row, col) only, not on the block shape that groups them.
  cfg.seed = 77;
  cfg.block = BlockShape::k1x32;
  cfg.scale = ScaleMode::kMXFloor;
  const QuantizedTensor c32 = quantize(x.data(), 8, 48, cfg);
  cfg.block = BlockShape::k1x16;
  const QuantizedTensor c16 = quantize(x.data(), 8, 48, cfg);
  int same_scale_elems = 0;
  for (int64_t r = 0; r < 8; ++r) {
    for (int64_t c = 0; c < 48; ++c) {
      if (c32.scale_code_at(r, c) != c16.scale_code_at(r, c)) continue;
      EXPECT_EQ(c32.codes[static_cast<size_t>(r * 48 + c)], c16.codes[static_cast<size_t>(r * 48 + c)]);
      ++same_scale_elems;
    }
  }
  EXPECT_GT(same_scale_elems, 0);
}

}  // namespace
}  // namespace nibble
