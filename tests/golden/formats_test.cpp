// Exhaustive checks of the format table: every code of every format, every
// code pair's product, packing.
#include <gtest/gtest.h>

#include <array>
#include <cmath>

#include "nibble/formats.h"

namespace nibble {
namespace {

// The values of the 16 codes, written out from the format definitions.
const float kE2M1[16] = {0, 0.5f, 1, 1.5f, 2, 3, 4, 6, -0.0f, -0.5f, -1, -1.5f, -2, -3, -4, -6};
const float kE1M2[16] = {0, 0.25f, 0.5f, 0.75f, 1, 1.25f, 1.5f, 1.75f,
                         -0.0f, -0.25f, -0.5f, -0.75f, -1, -1.25f, -1.5f, -1.75f};
const float kInt4[16] = {0, 1, 2, 3, 4, 5, 6, 7, -8, -7, -6, -5, -4, -3, -2, -1};

const float* expected_values(Format f) {
  switch (f) {
    case Format::kE2M1: return kE2M1;
    case Format::kE1M2: return kE1M2;
    case Format::kInt4: return kInt4;
  }
  return nullptr;
}

TEST(Formats, EveryCodeDecodesToItsValue) {
  int checked = 0;
  for (Format f : kAllFormats) {
    for (uint8_t c = 0; c < 16; ++c) {
      const float want = expected_values(f)[c];
      const float got = decode_value(f, c);
      EXPECT_EQ(got, want) << name(f) << " code 0x" << std::hex << int(c);
      EXPECT_EQ(std::signbit(got), std::signbit(want)) << name(f) << " code 0x" << std::hex << int(c);
      ++checked;
    }
  }
  EXPECT_EQ(checked, 48);
}

TEST(Formats, DerivedFacts) {
  EXPECT_EQ(max_value(Format::kE2M1), 6.0f);
  EXPECT_EQ(max_value(Format::kE1M2), 1.75f);
  EXPECT_EQ(max_value(Format::kInt4), 7.0f);
  EXPECT_EQ(emax(Format::kE2M1), 2);
  EXPECT_EQ(emax(Format::kE1M2), 0);
  EXPECT_EQ(emax(Format::kInt4), 2);
}

TEST(Formats, EncodeInvertsDecode) {
  int checked = 0;
  for (Format f : kAllFormats) {
    for (uint8_t c = 0; c < 16; ++c) {
      const Decoded d = decode(f, c);
      EXPECT_EQ(encode(f, d.neg, d.units), c) << name(f) << " code " << int(c);
      ++checked;
    }
  }
  EXPECT_EQ(checked, 48);
  EXPECT_THROW(encode(Format::kInt4, false, 8), std::invalid_argument);  // +8 does not exist
  EXPECT_THROW(encode(Format::kE2M1, false, 5), std::invalid_argument);  // 2.5 is off the grid
  EXPECT_THROW(encode(Format::kE1M2, false, 8), std::invalid_argument);
}

// The code functions of codes.h are constant expressions (the CUDA kernels
// evaluate them from the table's rows at compile time): every code of every
// format, decoded at compile time, equals its run-time decode and encodes back.
constexpr auto kDecodedAtCompileTime = [] {
  std::array<std::array<Decoded, 16>, kAllFormats.size()> t{};
  for (size_t i = 0; i < kAllFormats.size(); ++i) {
    for (uint8_t c = 0; c < 16; ++c) t[i][c] = decode(kAllFormats[i], c);
  }
  return t;
}();
static_assert(kDecodedAtCompileTime[0][7].units == max_units(kAllFormats[0]), "E2M1's 0x7 is its largest");
static_assert(kE4M3Grid.max_units == 448u << 9 && kE4M3Max == 448.0f, "E4M3 saturates at 448");

TEST(Formats, CodesDecodeAndEncodeAtCompileTime) {
  int checked = 0;
  for (size_t i = 0; i < kAllFormats.size(); ++i) {
    const Format f = kAllFormats[i];
    for (uint8_t c = 0; c < 16; ++c) {
      const Decoded want = decode(f, c);
      EXPECT_EQ(kDecodedAtCompileTime[i][c].neg, want.neg) << name(f) << " code " << int(c);
      EXPECT_EQ(kDecodedAtCompileTime[i][c].units, want.units) << name(f) << " code " << int(c);
      EXPECT_EQ(std::ldexp(static_cast<float>(want.signed_units()), lsb_exp(f)), expected_values(f)[c])
          << name(f) << " code " << int(c);
      if (info(f).encoding == Encoding::kSignMagnitudeFloat) {
        EXPECT_EQ(minifloat_code(want.neg, want.units, info(f).exp_bits, info(f).man_bits), c)
            << name(f) << " code " << int(c);
      }
      ++checked;
    }
  }
  EXPECT_EQ(checked, 16 * static_cast<int>(kAllFormats.size()));
}

// All 16x16 code pairs of all 9 format pairs: the integer product in units
// 2^(lsb_a + lsb_b) equals the product of the decoded values, exactly.
TEST(Formats, EveryCodePairMultipliesExactly) {
  int checked = 0;
  for (Format fa : kAllFormats) {
    for (Format fb : kAllFormats) {
      for (uint8_t a = 0; a < 16; ++a) {
        for (uint8_t b = 0; b < 16; ++b) {
          const double want = double(expected_values(fa)[a]) * double(expected_values(fb)[b]);
          const int32_t units = decode(fa, a).signed_units() * decode(fb, b).signed_units();
          EXPECT_EQ(std::ldexp(double(units), lsb_exp(fa) + lsb_exp(fb)), want)
              << name(fa) << "x" << name(fb) << " codes " << int(a) << "," << int(b);
          ++checked;
        }
      }
    }
  }
  EXPECT_EQ(checked, 9 * 256);
}

TEST(Formats, NamesRoundTrip) {
  for (Format f : kAllFormats) EXPECT_EQ(parse_format(name(f)), f);
  for (ScaleFormat f : kAllScaleFormats) EXPECT_EQ(parse_scale_format(name(f)), f);
  EXPECT_FALSE(parse_format("e3m0").has_value());
  EXPECT_FALSE(parse_format("E2M1").has_value());
}

TEST(Formats, PackingPutsElementZeroInTheLowNibble) {
  const uint8_t codes[5] = {0x1, 0x2, 0x3, 0x4, 0xF};
  uint8_t packed[3] = {};
  pack_codes(codes, 5, packed);
  EXPECT_EQ(packed[0], 0x21);
  EXPECT_EQ(packed[1], 0x43);
  EXPECT_EQ(packed[2], 0x0F);
  uint8_t back[5] = {};
  unpack_codes(packed, 5, back);
  for (int i = 0; i < 5; ++i) EXPECT_EQ(back[i], codes[i]);
}

}  // namespace
}  // namespace nibble
