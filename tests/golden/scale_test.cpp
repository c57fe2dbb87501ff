// Scale formats and the four scale rules.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>

#include "nibble/fp32.h"
#include "nibble/scale.h"

namespace nibble {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

TEST(E4M3, EveryCodeRoundTrips) {
  int checked = 0;
  for (uint32_t c = 0; c < 256; ++c) {
    const float v = decode_scale(ScaleFormat::kE4M3, c);
    if ((c & 0x7F) == 0x7F) {
      EXPECT_TRUE(std::isnan(v)) << c;
    } else {
      EXPECT_EQ(encode_e4m3(v), c) << "code 0x" << std::hex << c << " value " << v;
    }
    ++checked;
  }
  EXPECT_EQ(checked, 256);
  EXPECT_EQ(decode_scale(ScaleFormat::kE4M3, 0x7E), 448.0f);
  EXPECT_EQ(decode_scale(ScaleFormat::kE4M3, 0x01), std::ldexp(1.0f, -9));
  EXPECT_EQ(decode_scale(ScaleFormat::kE4M3, 0x08), std::ldexp(1.0f, -6));
}

TEST(E4M3, RoundsNearestEvenAndSaturates) {
  EXPECT_EQ(encode_e4m3(464.0f), 0x7E);  // tie between 448 and (virtual) 480: even -> 448
  EXPECT_EQ(encode_e4m3(1e9f), 0x7E);
  EXPECT_EQ(encode_e4m3(kInf), 0x7E);
  EXPECT_EQ(encode_e4m3(-kInf), 0xFE);
  EXPECT_EQ(encode_e4m3(kNaN), 0x7F);
  EXPECT_EQ(encode_e4m3(std::ldexp(1.0f, -10)), 0x00);         // half the smallest subnormal: even -> 0
  EXPECT_EQ(encode_e4m3(std::ldexp(1.5f, -10)), 0x01);         // 3/4 of it: up
  EXPECT_EQ(encode_e4m3(1.0625f), 0x38);                       // tie 1 / 1.125 -> 1 (even)
  EXPECT_EQ(encode_e4m3(1.1875f), 0x3A);                       // tie 1.125 / 1.25 -> 1.25 (even)
}

TEST(UE8M0, DecodesPowersOfTwoAndNaN) {
  EXPECT_EQ(decode_scale(ScaleFormat::kUE8M0, 127), 1.0f);
  EXPECT_EQ(decode_scale(ScaleFormat::kUE8M0, 0), std::ldexp(1.0f, -127));
  EXPECT_EQ(decode_scale(ScaleFormat::kUE8M0, 254), std::ldexp(1.0f, 127));
  EXPECT_TRUE(std::isnan(decode_scale(ScaleFormat::kUE8M0, 255)));
}

// scale_code_value (codes.h, from the table's row) against the scale formats'
// definitions, for every 8-bit code: E4M3 is S.EEEE.MMM with bias 7,
// subnormal at E = 0, NaN at S.1111.111; UE8M0 is 2^(code - 127), NaN at 0xFF.
TEST(ScaleFormats, EveryEightBitCodeDecodesByItsDefinition) {
  int checked = 0;
  for (uint32_t code = 0; code < 256; ++code) {
    const ScaleCodeValue e4m3 = scale_code_value(ScaleFormat::kE4M3, code);
    const uint32_t e = (code >> 3) & 0xFu, m = code & 0x7u;
    EXPECT_EQ(e4m3.nan, (code & 0x7Fu) == 0x7Fu) << code;
    if (!e4m3.nan) {
      const double want = (code & 0x80u ? -1.0 : 1.0) * (e == 0 ? std::ldexp(m, -9) : std::ldexp(8 + m, int(e) - 10));
      EXPECT_EQ((e4m3.neg ? -1.0 : 1.0) * std::ldexp(e4m3.units, e4m3.exp), want) << code;
      EXPECT_EQ(static_cast<double>(decode_scale(ScaleFormat::kE4M3, code)), want) << code;
    }
    const ScaleCodeValue ue8m0 = scale_code_value(ScaleFormat::kUE8M0, code);
    EXPECT_EQ(ue8m0.nan, code == 0xFFu) << code;
    EXPECT_FALSE(ue8m0.neg) << code;
    if (!ue8m0.nan) {
      EXPECT_EQ(std::ldexp(ue8m0.units, ue8m0.exp), std::ldexp(1.0, int(code) - 127)) << code;
    }
    ++checked;
  }
  EXPECT_EQ(checked, 256);
}

TEST(ScaleModes, NamesRoundTrip) {
  for (ScaleMode m : kAllScaleModes) EXPECT_EQ(parse_scale_mode(name(m)), m);
  EXPECT_FALSE(parse_scale_mode("mx").has_value());
}

TEST(ScaleModes, Fp32MapsAmaxOntoTheLargestMagnitude) {
  for (Format f : kAllFormats) {
    const BlockScale s = block_scale(ScaleMode::kFP32, f, 12.0f, {});
    EXPECT_EQ(s.decode, 12.0f / max_value(f));
    EXPECT_EQ(s.code, f32_bits(s.decode));
    EXPECT_EQ(s.encode, 1.0f / s.decode);
  }
  const BlockScale zero = block_scale(ScaleMode::kFP32, Format::kE2M1, 0.0f, {});
  EXPECT_EQ(zero.decode, 0.0f);
  EXPECT_EQ(zero.encode, std::numeric_limits<float>::max());  // never Inf: 0 * encode stays 0
}

TEST(ScaleModes, Nvfp4FollowsTheTwoLevelFormula) {
  const TensorScale t = tensor_scale(ScaleMode::kNVFP4, Format::kE2M1, 10.0f);
  EXPECT_EQ(t.encode, 448.0f * 6.0f / 10.0f);
  EXPECT_EQ(t.decode, 1.0f / t.encode);
  // The block holding the tensor's amax gets the largest E4M3 scale.
  const BlockScale top = block_scale(ScaleMode::kNVFP4, Format::kE2M1, 10.0f, t);
  EXPECT_EQ(top.code, 0x7Eu);
  EXPECT_EQ(top.decode, 448.0f);
  // Degenerate tensor amax: the global scale falls back to 1; overflow clamps.
  EXPECT_EQ(tensor_scale(ScaleMode::kNVFP4, Format::kE2M1, 0.0f).encode, 1.0f);
  EXPECT_EQ(tensor_scale(ScaleMode::kNVFP4, Format::kE2M1, 1e-40f).encode, std::numeric_limits<float>::max());
  // A block whose scale underflows E4M3 gets scale 0 (its elements then dequantize to 0).
  const BlockScale tiny = block_scale(ScaleMode::kNVFP4, Format::kE2M1, 1e-6f, t);
  EXPECT_EQ(tiny.code, 0u);
  EXPECT_EQ(tiny.encode, std::numeric_limits<float>::max());
  // Non-nvfp4 modes have an identity tensor level.
  EXPECT_EQ(tensor_scale(ScaleMode::kFP32, Format::kE2M1, 10.0f).decode, 1.0f);
}

TEST(ScaleModes, MxFloorAndCeilRules) {
  // E2M1 (emax 2): amax 5 -> floor(log2 5) - 2 = 0; ceil: 5 <= 6 * 2^0 -> 0.
  EXPECT_EQ(block_scale(ScaleMode::kMXFloor, Format::kE2M1, 5.0f, {}).code, 127u);
  EXPECT_EQ(block_scale(ScaleMode::kMXCeil, Format::kE2M1, 5.0f, {}).code, 127u);
  // amax 7: floor gives 2^0 (7 saturates to 6), ceil gives 2^1.
  EXPECT_EQ(block_scale(ScaleMode::kMXFloor, Format::kE2M1, 7.0f, {}).code, 127u);
  EXPECT_EQ(block_scale(ScaleMode::kMXCeil, Format::kE2M1, 7.0f, {}).code, 128u);
  // Exactly gmax * 2^k needs no larger exponent.
  EXPECT_EQ(block_scale(ScaleMode::kMXCeil, Format::kE2M1, 12.0f, {}).code, 128u);
  EXPECT_EQ(block_scale(ScaleMode::kMXCeil, Format::kE1M2, 1.75f, {}).code, 127u);
  // Zero blocks and the clamped range.
  EXPECT_EQ(block_scale(ScaleMode::kMXFloor, Format::kE2M1, 0.0f, {}).code, 0u);
  EXPECT_EQ(block_scale(ScaleMode::kMXFloor, Format::kE2M1, std::numeric_limits<float>::max(), {}).code, 252u);
  EXPECT_EQ(block_scale(ScaleMode::kMXCeil, Format::kE1M2, std::numeric_limits<float>::max(), {}).code, 254u);
  EXPECT_EQ(block_scale(ScaleMode::kMXFloor, Format::kE2M1, std::ldexp(1.0f, -149), {}).code, 0u);
}

TEST(ScaleModes, CeilRuleIsTheSmallestNonSaturatingPowerOfTwo) {
  const uint64_t seed = 7;
  std::mt19937 rng(seed);
  SCOPED_TRACE("seed 7");
  int checked = 0;
  for (int i = 0; i < 20000; ++i) {
    const float amax = std::ldexp(1.0f + static_cast<float>(rng() % 8388608) / 8388608.0f,
                                  static_cast<int>(rng() % 200) - 100);
    for (Format f : kAllFormats) {
      const BlockScale s = block_scale(ScaleMode::kMXCeil, f, amax, {});
      const double gmax = max_value(f);
      ASSERT_LE(double(amax), gmax * double(s.decode)) << amax;
      ASSERT_GT(double(amax), gmax * double(s.decode) / 2) << amax;
      ++checked;
    }
  }
  EXPECT_EQ(checked, 60000);
}

TEST(ScaleModes, NanBlocksGetTheNanCode) {
  EXPECT_EQ(nan_block_scale(ScaleMode::kFP32).code, 0x7FC00000u);
  EXPECT_EQ(nan_block_scale(ScaleMode::kNVFP4).code, 0x7Fu);
  EXPECT_EQ(nan_block_scale(ScaleMode::kMXFloor).code, 0xFFu);
  for (ScaleMode m : kAllScaleModes) {
    EXPECT_TRUE(std::isnan(decode_scale(scale_format(m), nan_block_scale(m).code))) << name(m);
  }
}

}  // namespace
}  // namespace nibble
