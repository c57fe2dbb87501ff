// round_to_f32 against the host's IEEE conversions (checked cases where the
// host is exact to compare with) and its corner cases.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>

#include "nibble/fp32.h"

namespace nibble {
namespace {

TEST(RoundToF32, AgreesWithHostDoubleToFloatConversion) {
  // A 53-bit integer times 2^e is exact in double; the host's double->float
  // conversion is a correctly rounded IEEE conversion (RNE, subnormals kept).
  const uint64_t seed = 20261121;
  std::mt19937_64 rng(seed);
  SCOPED_TRACE("seed " + std::to_string(seed));
  int checked = 0;
  for (int i = 0; i < 200000; ++i) {
    const int bits = 1 + static_cast<int>(rng() % 53);
    const uint64_t mag = rng() >> (64 - bits);
    const int exp2 = static_cast<int>(rng() % 360) - 230;
    const bool neg = (rng() & 1u) != 0;
    const double exact = std::ldexp(static_cast<double>(mag), exp2) * (neg ? -1.0 : 1.0);
    if (std::fabs(exact) > 0 && std::fabs(exact) < std::numeric_limits<double>::min()) continue;  // double subnormal
    const float want = static_cast<float>(exact);
    const float got = round_to_f32(neg, mag, exp2);
    ASSERT_EQ(f32_bits(got), f32_bits(want)) << std::hex << "mag 0x" << mag << std::dec << " exp " << exp2;
    ++checked;
  }
  EXPECT_GT(checked, 100000);
}

TEST(RoundToF32, TiesGoToEven) {
  // 2^24 + 1 lies halfway between 2^24 and 2^24 + 2: even significand wins.
  EXPECT_EQ(round_to_f32(false, (1u << 24) + 1, 0), 16777216.0f);
  EXPECT_EQ(round_to_f32(false, (1u << 24) + 3, 0), 16777220.0f);
  // Half the smallest subnormal rounds to zero; a bit more rounds up.
  EXPECT_EQ(f32_bits(round_to_f32(false, 1, -150)), 0u);
  EXPECT_EQ(f32_bits(round_to_f32(false, 3, -151)), 1u);
  EXPECT_EQ(f32_bits(round_to_f32(true, 1, -150)), 0x80000000u);  // signed zero
  // Rounding up out of the subnormal range gives the smallest normal.
  EXPECT_EQ(f32_bits(round_to_f32(false, (1u << 24) - 1, -150)), 0x00800000u);
}

TEST(RoundToF32, OverflowsToInfinity) {
  EXPECT_EQ(round_to_f32(false, 1, 128), std::numeric_limits<float>::infinity());
  EXPECT_EQ(round_to_f32(true, (uint64_t{1} << 25) - 1, 104), -std::numeric_limits<float>::infinity());
  EXPECT_EQ(round_to_f32(false, (uint64_t{1} << 24) - 1, 104), std::numeric_limits<float>::max());
}

TEST(RoundToBf16, RoundsNearestEvenAndKeepsNaN) {
  EXPECT_EQ(f32_bits(round_to_bf16(f32_from_bits(0x3F808000u))), 0x3F800000u);  // tie, even stays
  EXPECT_EQ(f32_bits(round_to_bf16(f32_from_bits(0x3F818000u))), 0x3F820000u);  // tie, odd goes up
  EXPECT_EQ(f32_bits(round_to_bf16(f32_from_bits(0x3F808001u))), 0x3F810000u);
  EXPECT_EQ(f32_bits(round_to_bf16(f32_from_bits(0x7F7FFFFFu))), 0x7F800000u);  // overflow
  EXPECT_EQ(f32_bits(round_to_bf16(f32_from_bits(0xFFC00000u))), kCanonicalNaN);
  EXPECT_EQ(f32_bits(round_to_bf16(f32_from_bits(0x7F800001u))), kCanonicalNaN);  // a low-bit NaN stays NaN
}

TEST(Exp2F32, CoversNormalsAndSubnormals) {
  for (int k = -149; k <= 127; ++k) ASSERT_EQ(exp2_f32(k), std::ldexp(1.0f, k)) << k;
  EXPECT_THROW(exp2_f32(128), std::invalid_argument);
  EXPECT_THROW(exp2_f32(-150), std::invalid_argument);
}

}  // namespace
}  // namespace nibble
