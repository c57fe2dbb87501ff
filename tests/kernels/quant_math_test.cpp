// The kernels' element and block arithmetic (nibble/cuda/quant_math.h), compiled
// for the host and checked against golden function by function. Needs no GPU:
// it runs wherever the kernels are built, so a divergence from golden shows up
// in CI even though CI cannot launch a kernel.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>

#include "kernel_test_data.h"
#include "nibble/cuda/quant_math.h"
#include "nibble/fp32.h"
#include "nibble/philox.h"
#include "nibble/quantize.h"
#include "nibble/rht.h"
#include "nibble/scale.h"

namespace nibble {
namespace {

namespace math = cuda::math;

// Floats spread over every binade, signs, zeros, subnormals, infinities.
std::vector<float> probe_floats(uint64_t seed, size_t n) {
  std::mt19937_64 rng(seed);
  std::vector<float> v = {0.0f, -0.0f, 1e-45f, -1e-45f, std::numeric_limits<float>::infinity(),
                          -std::numeric_limits<float>::infinity(), std::numeric_limits<float>::max(), 448.0f, 464.0f,
                          6.0f, 7.0f, 1.75f, 0.25f, 0.75f, 2.5f, 5.0f};
  for (size_t i = 0; i < n; ++i) {
    uint32_t bits = static_cast<uint32_t>(rng());
    if ((i & 3) == 0) {
      // Concentrate on the binades the formats live in: |x| in [2^-12, 2^12).
      bits = (bits & 0x807FFFFFu) | (static_cast<uint32_t>(115 + rng() % 24) << 23);
    }
    const float f = f32_from_bits(bits);
    if (!std::isnan(f)) v.push_back(f);
  }
  return v;
}

TEST(QuantMath, FormatFactsMatchGolden) {
  for (Format f : kAllFormats) {
    const math::FormatFacts ff = math::format_facts(f);
    for (uint32_t code = 0; code < 16; ++code) {
      const Decoded d = decode(f, static_cast<uint8_t>(code));
      const math::GridValue g = math::decode_code(ff, code);
      EXPECT_EQ(g.neg, d.neg) << name(f) << " code " << code;
      EXPECT_EQ(g.units, d.units) << name(f) << " code " << code;
      EXPECT_EQ(f32_bits(math::decode_value(ff, code)), f32_bits(decode_value(f, static_cast<uint8_t>(code))));
    }
    for (ScaleMode m : kAllScaleModes) {
      const math::ScaleFacts sf = math::scale_facts(m, f);
      EXPECT_EQ(sf.gmax, max_value(f));
      EXPECT_EQ(sf.emax, emax(f));
      EXPECT_EQ(sf.format, scale_format(m));
    }
  }
}

TEST(QuantMath, RoundToGridAndCodesMatchGolden) {
  std::printf("seed %llu\n", static_cast<unsigned long long>(test::kKernelTestSeed));
  const std::vector<float> probes = probe_floats(test::kKernelTestSeed, 200000);
  std::mt19937 rng(7);
  size_t cases = 0;
  for (Format f : kAllFormats) {
    const math::FormatFacts ff = math::format_facts(f);
    for (float v : probes) {
      const GridValue want = round_to_grid(v, grid(f), Rounding::kNearestEven);
      const math::GridValue got = math::round_to_grid(v, ff.grid, false, 0u, 8);
      ASSERT_EQ(got.neg, want.neg) << name(f) << " " << test::hex32(f32_bits(v));
      ASSERT_EQ(got.units, want.units) << name(f) << " RNE " << test::hex32(f32_bits(v));
      const uint32_t code = want.units == 0 ? 0u : encode(f, want.neg, want.units);
      ASSERT_EQ(math::quantizer_code(ff, got), code) << name(f) << " " << test::hex32(f32_bits(v));
      const int bits = 1 + static_cast<int>(rng() % 8);
      const uint32_t random = static_cast<uint32_t>(rng()) & ((1u << bits) - 1u);
      const GridValue want_sr = round_to_grid(v, grid(f), Rounding::kStochastic, random, bits);
      const math::GridValue got_sr = math::round_to_grid(v, ff.grid, true, random, bits);
      ASSERT_EQ(got_sr.units, want_sr.units) << name(f) << " SR bits " << bits << " r " << random << " "
                                             << test::hex32(f32_bits(v));
      cases += 2;
    }
  }
  EXPECT_GT(cases, 0u);
}

// Every 13th binary32 pattern of magnitude in [2^-14, 2^6) (and its negative),
// plus the probes, through the compile-time-format rounding the quantize kernel uses.
template <Format F>
size_t check_round_to_format(const std::vector<float>& probes) {
  std::vector<float> values = probes;
  for (uint32_t bits = 0x38800000u; bits < 0x42800000u; bits += 13u) {
    values.push_back(f32_from_bits(bits));
    values.push_back(f32_from_bits(bits | 0x80000000u));
  }
  size_t cases = 0;
  uint32_t lcg = 12345u;
  for (float v : values) {
    const GridValue want = round_to_grid(v, grid(F), Rounding::kNearestEven);
    const math::GridValue got = math::round_to_format<F>(v, false, 0u, 8);
    const uint32_t want_code = want.units == 0 ? 0u : encode(F, want.neg, want.units);
    if (got.neg != want.neg || got.units != want.units || math::quantizer_code_of<F>(got) != want_code) {
      ADD_FAILURE() << name(F) << " RNE " << test::hex32(f32_bits(v)) << " got " << got.units << " want " << want.units;
      return cases;
    }
    lcg = lcg * 1664525u + 1013904223u;
    const int bits = 1 + static_cast<int>((lcg >> 28) % 8);
    const uint32_t random = (lcg >> 8) & ((1u << bits) - 1u);
    const GridValue want_sr = round_to_grid(v, grid(F), Rounding::kStochastic, random, bits);
    const math::GridValue got_sr = math::round_to_format<F>(v, true, random, bits);
    if (got_sr.neg != want_sr.neg || got_sr.units != want_sr.units) {
      ADD_FAILURE() << name(F) << " SR B=" << bits << " r=" << random << " " << test::hex32(f32_bits(v)) << " got "
                    << got_sr.units << " want " << want_sr.units;
      return cases;
    }
    cases += 2;
  }
  return cases;
}

TEST(QuantMath, CompileTimeFormatRoundingMatchesGolden) {
  const std::vector<float> probes = probe_floats(test::kKernelTestSeed + 3, 200000);
  size_t cases = check_round_to_format<Format::kE2M1>(probes);
  cases += check_round_to_format<Format::kE1M2>(probes);
  cases += check_round_to_format<Format::kInt4>(probes);
  std::printf("%zu roundings compared\n", cases);
  EXPECT_GT(cases, 0u);
}

TEST(QuantMath, ScaleCodesMatchGolden) {
  size_t cases = 0;
  for (uint32_t code = 0; code < 256; ++code) {
    for (ScaleFormat sf : {ScaleFormat::kE4M3, ScaleFormat::kUE8M0}) {
      EXPECT_TRUE(test::same_float(math::decode_scale_code(sf, code), decode_scale(sf, code))) << code;
      ++cases;
    }
  }
  for (float v : probe_floats(test::kKernelTestSeed + 1, 100000)) {
    ASSERT_EQ(math::encode_e4m3(v), encode_e4m3(v)) << test::hex32(f32_bits(v));
    ++cases;
  }
  EXPECT_EQ(math::encode_e4m3(std::numeric_limits<float>::quiet_NaN()), 0x7Fu);
  EXPECT_GT(cases, 0u);
}

TEST(QuantMath, BlockAndTensorScalesMatchGolden) {
  std::vector<float> amaxes;
  for (float v : probe_floats(test::kKernelTestSeed + 2, 50000)) {
    if (std::isfinite(v)) amaxes.push_back(std::fabs(v));
  }
  const float tensor_amaxes[] = {0.0f, 1e-45f, 1e-30f, 1.0f, 3.0e5f, 1e38f, std::numeric_limits<float>::max()};
  size_t cases = 0;
  for (Format f : kAllFormats) {
    for (ScaleMode m : kAllScaleModes) {
      const math::ScaleFacts sf = math::scale_facts(m, f);
      for (float ta : tensor_amaxes) {
        const TensorScale want_t = tensor_scale(m, f, ta);
        const math::TensorScaleValue got_t = math::tensor_scale(sf, ta);
        ASSERT_EQ(f32_bits(got_t.encode), f32_bits(want_t.encode)) << name(m) << " " << ta;
        ASSERT_EQ(f32_bits(got_t.decode), f32_bits(want_t.decode)) << name(m) << " " << ta;
        for (size_t i = 0; i < amaxes.size(); i += (m == ScaleMode::kNVFP4 ? 1 : 7)) {
          const float a = amaxes[i];
          const BlockScale want = block_scale(m, f, a, want_t);
          const math::BlockScaleValue got = math::block_scale(sf, a, got_t);
          ASSERT_EQ(got.code, want.code) << name(f) << " " << name(m) << " amax " << test::hex32(f32_bits(a));
          ASSERT_TRUE(test::same_float(got.decode, want.decode)) << name(m) << " " << a;
          ASSERT_TRUE(test::same_float(got.encode, want.encode)) << name(m) << " " << a;
          ++cases;
        }
      }
      EXPECT_EQ(math::nan_scale_code(scale_format(m)), nan_block_scale(m).code);
    }
  }
  EXPECT_GT(cases, 0u);
}

TEST(QuantMath, PhiloxAndRht16MatchGolden) {
  std::mt19937_64 rng(test::kKernelTestSeed);
  size_t cases = 0;
  for (int trial = 0; trial < 2000; ++trial) {
    const uint64_t seed = rng(), group = rng() >> (trial % 64);
    const uint32_t stream = static_cast<uint32_t>(rng());
    const PhiloxWords want = philox4x32_10(seed, group, stream, PhiloxDomain::kStochasticRounding);
    const auto got = math::philox_words(seed, group, stream, 0u);
    for (int i = 0; i < 4; ++i) ASSERT_EQ(got[static_cast<size_t>(i)], want[static_cast<size_t>(i)]);

    const PhiloxWords signs = rht_signs(seed);
    for (bool bf16 : {false, true}) {
      float want_x[16], got_x[16];
      for (int i = 0; i < 16; ++i) {
        want_x[i] = got_x[i] = std::ldexp(static_cast<float>(static_cast<int64_t>(rng() % 2000001) - 1000000),
                                          static_cast<int>(rng() % 40) - 30);
      }
      rht_group(want_x, 16, signs, bf16);
      math::rht16(got_x, signs[0], bf16);
      for (int i = 0; i < 16; ++i) ASSERT_EQ(f32_bits(got_x[i]), f32_bits(want_x[i])) << "element " << i;
      ++cases;
    }
  }
  EXPECT_GT(cases, 0u);
}

}  // namespace
}  // namespace nibble
