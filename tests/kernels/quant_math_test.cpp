// The kernels' element and block arithmetic (nibble/cuda/quant_math.h), compiled
// for the host and checked against golden function by function. Needs no GPU:
// it runs wherever the kernels are built, so a divergence from golden shows up
// in CI even though CI cannot launch a kernel.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <map>
#include <iterator>
#include <random>
#include <set>
#include <vector>

#include "kernel_test_data.h"
#include "nibble/cuda/quant_math.h"
#include "nibble/dot.h"
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
    }
  }
}

// golden's code of x * encode under the given rounding (quantize's inner loop).
uint32_t golden_code(Format f, float x, float scale, Rounding rounding, uint32_t r, int bits) {
  const GridValue g = round_to_grid(x * scale, grid(f), rounding, r, bits);
  return g.units == 0 ? 0u : encode(f, g.neg, g.units);
}

// One group through the kernels' group_codes against golden element by element.
// Returns false (after one failure message) at the first difference.
template <Format F, bool kStochastic>
bool check_group(const float (&x)[16], float encode, const uint32_t (&words)[4], int bits) {
  const math::PackedGroup p = math::group_codes<F, kStochastic>(x, encode, words, math::sr_keep_mask(bits));
  for (int j = 0; j < 16; ++j) {
    const uint32_t got = ((j < 8 ? p.lo : p.hi) >> (4 * (j % 8))) & 0xFu;
    const uint32_t byte = (words[j / 4] >> (8 * (j % 4))) & 0xFFu;
    const uint32_t r = kStochastic ? byte >> (8 - bits) : 0u;
    const uint32_t want = golden_code(F, x[j], encode, kStochastic ? Rounding::kStochastic : Rounding::kNearestEven,
                                      r, kStochastic ? bits : 8);
    if (got != want) {
      ADD_FAILURE() << name(F) << (kStochastic ? " SR B=" + std::to_string(bits) + " r=" + std::to_string(r) : " RNE")
                    << " x " << test::hex32(f32_bits(x[j])) << " encode " << test::hex32(f32_bits(encode))
                    << " element " << j << ": code " << got << ", golden " << want;
      return false;
    }
  }
  return true;
}

// Groups of probe values under encode factors of every kind a block scale
// produces (1, powers of two, arbitrary, FLT_MAX from min_finite, tiny), plus
// every 13th binary32 pattern of magnitude in [2^-14, 2^6) (and its negative)
// at encode 1, with random Philox words and B = 1..8.
template <Format F>
size_t check_group_codes(const std::vector<float>& probes) {
  std::vector<float> values = probes;
  for (uint32_t bits = 0x38800000u; bits < 0x42800000u; bits += 13u) {
    values.push_back(f32_from_bits(bits));
    values.push_back(f32_from_bits(bits | 0x80000000u));
  }
  const float encodes[] = {1.0f, 0.5f, 1024.0f, 3.0f, 0.1f, 1.7e-38f, std::numeric_limits<float>::max(), 6.02e23f};
  std::mt19937_64 rng(test::kKernelTestSeed + static_cast<uint64_t>(F));
  size_t cases = 0;
  for (size_t i = 0; i + 16 <= values.size(); i += 16) {
    float x[16];
    for (int j = 0; j < 16; ++j) x[j] = values[i + static_cast<size_t>(j)];
    const float encode = i < probes.size() ? encodes[(i / 16) % 8] : 1.0f;
    uint32_t words[4];
    for (uint32_t& w : words) w = static_cast<uint32_t>(rng());
    const int bits = 1 + static_cast<int>(rng() % 8);
    if (!check_group<F, false>(x, encode, words, bits) || !check_group<F, true>(x, encode, words, bits)) return cases;
    cases += 32;
  }
  return cases;
}

// The compile-time grids' facts the kernels rely on: the largest magnitude's
// code (golden encode) and, for E4M3, saturation at 448.
TEST(QuantMath, GridFactsMatchGolden) {
  EXPECT_EQ(math::FormatGrid<Format::kE2M1>::kMaxCode, encode(Format::kE2M1, false, max_units(Format::kE2M1)));
  EXPECT_EQ(math::FormatGrid<Format::kE1M2>::kMaxCode, encode(Format::kE1M2, false, max_units(Format::kE1M2)));
  EXPECT_EQ(math::FormatGrid<Format::kInt4>::kMaxCode, encode(Format::kInt4, false, max_units(Format::kInt4)));
  EXPECT_EQ(math::E4M3Grid::kMaxCode, encode_e4m3(448.0f));
  EXPECT_EQ(math::E4M3Grid::kMaxCode, encode_e4m3(std::numeric_limits<float>::max()));
}

TEST(QuantMath, GroupCodesMatchGolden) {
  std::printf("seed %llu\n", static_cast<unsigned long long>(test::kKernelTestSeed));
  const std::vector<float> probes = probe_floats(test::kKernelTestSeed + 3, 200000);
  size_t cases = check_group_codes<Format::kE2M1>(probes);
  cases += check_group_codes<Format::kE1M2>(probes);
  cases += check_group_codes<Format::kInt4>(probes);
  std::printf("%zu element roundings compared\n", cases);
  EXPECT_GT(cases, 3u * 2u * 1000000u);
}

// The policies' device arithmetic (golden quantize.h, scale.h): keep_zero_signs after
// group_codes is golden's signed-zero code for finite positive encode factors, and
// propagate_group_codes is golden's quantize_block_elements for the propagate policy's
// rare groups: encode NaN, 0 (an FP32 scale of +Inf) or finite with infinite elements.
template <Format F, bool kStochastic>
size_t check_policy_groups(const std::vector<float>& probes, std::mt19937_64& rng) {
  const float encodes[] = {1.0f, 0.5f, 1024.0f, 0.1f, 1.7e-38f, 1.0f / 448.0f, 0x1p-127f, 0.0f,
                           f32_from_bits(kCanonicalNaN)};
  const float inf = std::numeric_limits<float>::infinity();
  size_t cases = 0;
  for (size_t i = 0; i + 16 <= probes.size(); i += 16) {
    float x[16];
    for (int j = 0; j < 16; ++j) x[j] = probes[i + static_cast<size_t>(j)];
    if (rng() % 4 == 0) x[rng() % 16] = rng() % 2 ? inf : -inf;
    const float encode = encodes[(i / 16) % 9];
    uint32_t words[4];
    for (uint32_t& w : words) w = static_cast<uint32_t>(rng());
    const int bits = 1 + static_cast<int>(rng() % 8);
    const uint32_t keep = math::sr_keep_mask(bits);
    uint32_t random[16];
    for (int j = 0; j < 16; ++j) random[j] = ((words[j / 4] >> (8 * (j % 4))) & 0xFFu) >> (8 - bits);
    const Rounding r = kStochastic ? Rounding::kStochastic : Rounding::kNearestEven;
    for (ZeroPolicy z : kAllZeroPolicies) {
      uint8_t want[16];
      quantize_block_elements(x, 16, encode, F, r, random, kStochastic ? bits : 8, z, want);
      const bool finite_group = std::all_of(x, x + 16, [](float v) { return std::isfinite(v); });
      math::PackedGroup got;
      if (finite_group && encode > 0.0f) {
        // The fast path of every policy, with the signed-zero fix-up.
        got = math::group_codes<F, kStochastic>(x, encode, words, keep);
        if (z == ZeroPolicy::kSigned) got = math::keep_zero_signs<F>(got, x);
      } else {
        got = math::propagate_group_codes<F, kStochastic>(x, encode, words, keep, z == ZeroPolicy::kSigned);
      }
      for (int j = 0; j < 16; ++j) {
        const uint32_t code = ((j < 8 ? got.lo : got.hi) >> (4 * (j % 8))) & 0xFu;
        if (code != want[j]) {
          ADD_FAILURE() << name(F) << " " << name(r) << " B=" << bits << " zero " << name(z) << " x "
                        << test::hex32(f32_bits(x[j])) << " encode " << test::hex32(f32_bits(encode)) << " element "
                        << j << ": code " << code << ", golden " << unsigned(want[j]);
          return cases;
        }
      }
      cases += 16;
    }
  }
  return cases;
}

TEST(QuantMath, PolicyGroupCodesMatchGolden) {
  std::printf("seed %llu\n", static_cast<unsigned long long>(test::kKernelTestSeed));
  std::mt19937_64 rng(test::kKernelTestSeed + 11);
  const std::vector<float> probes = probe_floats(test::kKernelTestSeed + 5, 60000);
  size_t cases = check_policy_groups<Format::kE2M1, false>(probes, rng);
  cases += check_policy_groups<Format::kE2M1, true>(probes, rng);
  cases += check_policy_groups<Format::kE1M2, false>(probes, rng);
  cases += check_policy_groups<Format::kE1M2, true>(probes, rng);
  cases += check_policy_groups<Format::kInt4, false>(probes, rng);
  cases += check_policy_groups<Format::kInt4, true>(probes, rng);
  std::printf("%zu element codes compared under both zero policies\n", cases);
  EXPECT_GT(cases, 6u * 2u * 50000u);
}

// propagate_block_scale and tensor_scale on the propagate policy's amaxes (NaN, +Inf)
// and on finite ones, against golden's block_scale and tensor_scale.
TEST(QuantMath, PropagateScalesMatchGolden) {
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = f32_from_bits(kCanonicalNaN);
  size_t cases = 0;
  for (Format f : kAllFormats) {
    for (ScaleMode m : kAllScaleModes) {
      const math::ScaleFacts sf = math::scale_facts(m, f);
      for (float ta : {nan, inf, 0.0f, 3.0f, 1e30f}) {
        const TensorScale want_t = tensor_scale(m, f, ta);
        const TensorScale got_t = math::tensor_scale(sf, ta);
        ASSERT_EQ(f32_bits(got_t.encode), f32_bits(want_t.encode)) << name(m) << " " << ta;
        ASSERT_EQ(f32_bits(got_t.decode), f32_bits(want_t.decode)) << name(m) << " " << ta;
        for (float a : {nan, inf, 0.0f, 1e-40f, 2.5f, 7.0f, 1e20f, std::numeric_limits<float>::max()}) {
          const BlockScale want = block_scale(m, f, a, want_t, NonFinitePolicy::kPropagate);
          const BlockScale got = math::propagate_block_scale(sf, a, got_t);
          ASSERT_EQ(got.code, want.code) << name(f) << " " << name(m) << " amax " << a << " tensor amax " << ta;
          ASSERT_EQ(f32_bits(got.decode), f32_bits(want.decode)) << name(m) << " " << a;
          ASSERT_EQ(f32_bits(got.encode), f32_bits(want.encode)) << name(m) << " " << a;
          if (m == ScaleMode::kNVFP4) {  // the kernels' own two halves of it
            EXPECT_EQ(math::nvfp4_scale_code(a, math::mul_rn(got_t.encode, sf.inv_gmax)), want.code);
          }
          ++cases;
        }
      }
    }
  }
  std::printf("%zu propagate-policy scales compared\n", cases);
  EXPECT_EQ(cases, 3u * 4u * 5u * 8u);
}

// The sign handling alone: every magnitude code 0..7 with either sign, in
// every nibble, the words' other bits random (only the sign bit may count).
TEST(QuantMath, SignMasksMatchGolden) {
  std::printf("seed %llu\n", static_cast<unsigned long long>(test::kKernelTestSeed));
  std::mt19937 rng(static_cast<uint32_t>(test::kKernelTestSeed));
  size_t cases = 0;
  for (uint32_t mag = 0; mag < 8; ++mag) {
    for (uint32_t pattern = 0; pattern < 256; ++pattern) {
      uint32_t u[8], mags = 0;
      for (int i = 0; i < 8; ++i) {
        u[i] = (((pattern >> i) & 1u) << 31) | (static_cast<uint32_t>(rng()) & 0x7FFFFFFFu);
        mags |= ((mag + static_cast<uint32_t>(i)) % 8) << (4 * i);
      }
      const uint32_t masks = math::sign_masks(u);
      const uint32_t sm = math::apply_signs<Format::kE2M1>(mags, masks);
      const uint32_t tc = math::apply_signs<Format::kInt4>(mags, masks);
      for (int i = 0; i < 8; ++i) {
        const uint32_t m = (mags >> (4 * i)) & 0xFu;
        const bool neg = (pattern >> i) & 1u;
        const uint32_t want_sm = m == 0 ? 0u : (neg ? 0x8u : 0u) | m;
        const uint32_t want_tc = m == 0 ? 0u : (neg ? 16u - m : m) & 0xFu;
        ASSERT_EQ((masks >> (4 * i)) & 0xFu, neg ? 0xFu : 0u) << "element " << i;
        ASSERT_EQ((sm >> (4 * i)) & 0xFu, want_sm) << "mag " << m << " neg " << neg;
        ASSERT_EQ((tc >> (4 * i)) & 0xFu, want_tc) << "mag " << m << " neg " << neg;
        cases += 2;
      }
    }
  }
  EXPECT_EQ(cases, 8u * 256u * 16u);
}

// RNE on the uniform grids rounds the signed value with one add
// (uniform_rne_nibbles). Every multiple of q / 4096 in [-9q, 9q] (each tie
// (k + 1/2) q among them) and both binary32 neighbours of each tie, in every
// element position of a group whose other elements are random grid values,
// against golden; clamped, and unclamped up to the largest grid value times
// (1 + 2^-21), where the kernels leave the clamps out.
template <Format F>
size_t check_uniform_rne(std::mt19937_64& rng) {
  const float q = std::ldexp(1.0f, lsb_exp(F));
  const float top = static_cast<float>(max_units(F)) * q;
  const float loose = math::mul_rn(top, 1.0f + std::ldexp(1.0f, -21));
  size_t cases = 0;
  for (int j = -9 * 4096; j <= 9 * 4096; ++j) {
    const float tie_or_value = static_cast<float>(j) * q / 4096.0f;
    for (int side = -1; side <= 1; ++side) {
      if (side != 0 && j % 2048 != 0) continue;  // neighbours of ties and grid values only
      const float v = side == 0 ? tie_or_value : std::nextafter(tie_or_value, side < 0 ? -1e30f : 1e30f);
      float x[16];
      for (float& e : x) {
        const int units = static_cast<int>(rng() % (2 * max_units(F) + 1)) - static_cast<int>(max_units(F));
        e = static_cast<float>(units) * q;
      }
      x[static_cast<size_t>(j + 9 * 4096 + side + 1) % 16] = v;
      const uint32_t words[4] = {0u, 0u, 0u, 0u};
      if (!check_group<F, false>(x, 1.0f, words, 8)) return cases;
      if (std::fabs(v) <= loose) {
        const math::PackedGroup clamped = math::group_codes<F, false, true>(x, 1.0f, words, 0u);
        const math::PackedGroup free = math::group_codes<F, false, false>(x, 1.0f, words, 0u);
        if (clamped.lo != free.lo || clamped.hi != free.hi) {
          ADD_FAILURE() << name(F) << " value " << test::hex32(f32_bits(v)) << ": unclamped codes differ";
          return cases;
        }
      }
      ++cases;
    }
  }
  return cases;
}

TEST(QuantMath, UniformGridsRoundSignedValuesAsGolden) {
  static_assert(max_units(Format::kE1M2) == 7 && max_units(Format::kInt4) == 7, "grid values -7q..7q");
  std::printf("seed %llu\n", static_cast<unsigned long long>(test::kKernelTestSeed));
  std::mt19937_64 rng(test::kKernelTestSeed + 37);
  size_t cases = check_uniform_rne<Format::kE1M2>(rng);
  cases += check_uniform_rne<Format::kInt4>(rng);
  std::printf("%zu values rounded in groups\n", cases);
  EXPECT_EQ(cases, 2u * (18u * 4096u + 1u + 2u * (18u * 2u + 1u)));
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
  // Every 5th binary32 pattern of magnitude in [2^-17, 2^12) (E4M3 spans 2^-9 to 448), both signs.
  for (uint32_t bits = 0x37000000u; bits < 0x45800000u; bits += 5u) {
    for (uint32_t sign : {0u, 0x80000000u}) {
      const float v = f32_from_bits(bits | sign);
      ASSERT_EQ(math::encode_e4m3(v), encode_e4m3(v)) << test::hex32(bits | sign);
      ++cases;
    }
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
        const TensorScale got_t = math::tensor_scale(sf, ta);
        ASSERT_EQ(f32_bits(got_t.encode), f32_bits(want_t.encode)) << name(m) << " " << ta;
        ASSERT_EQ(f32_bits(got_t.decode), f32_bits(want_t.decode)) << name(m) << " " << ta;
        for (size_t i = 0; i < amaxes.size(); i += (m == ScaleMode::kNVFP4 ? 1 : 7)) {
          const float a = amaxes[i];
          const BlockScale want = block_scale(m, f, a, want_t);
          const BlockScale got = math::block_scale(sf, a, got_t);
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
    const auto got = math::philox_words(math::philox_round_keys(seed), group, stream, 0u);
    for (int i = 0; i < 4; ++i) ASSERT_EQ(got[static_cast<size_t>(i)], want[static_cast<size_t>(i)]);

    const PhiloxWords signs = rht_signs(seed);
    for (bool bf16 : {false, true}) {
      float want_x[16], got_x[16];
      for (int i = 0; i < 16; ++i) {
        want_x[i] = got_x[i] = std::ldexp(static_cast<float>(static_cast<int64_t>(rng() % 2000001) - 1000000),
                                          static_cast<int>(rng() % 40) - 30);
        if (rng() % 8 == 0) want_x[i] = got_x[i] = (rng() % 2 == 0) ? 0.0f : -0.0f;  // signed zeros
      }
      // The odd elements' negations as sign-bit flips (the wide-rows kernels'
      // reads), then the butterflies alone: the same sums.
      const math::RhtSigns rs = math::rht16_signs(signs[0]);
      float flipped_x[16];
      for (int i = 0; i < 16; ++i) {
        flipped_x[i] = i % 2 == 0 ? got_x[i] : f32_from_bits(f32_bits(got_x[i]) ^ rs.odd_bits[i / 2]);
      }
      rht_group(want_x, 16, signs, bf16);
      math::rht16_sums(got_x, rs);
      math::rht16_scale(got_x, bf16);
      math::rht16_butterflies(flipped_x, rs.even_ones);
      math::rht16_scale(flipped_x, bf16);
      for (int i = 0; i < 16; ++i) {
        ASSERT_EQ(f32_bits(got_x[i]), f32_bits(want_x[i])) << "element " << i;
        ASSERT_EQ(f32_bits(flipped_x[i]), f32_bits(want_x[i])) << "element " << i << ", odd signs flipped first";
      }
      ++cases;
    }
  }
  EXPECT_GT(cases, 0u);
}

// The kernel quantizes RHT sums s with the encode factor fl(c e) instead of
// the rotated elements fl(c s) with e wherever rht16_scale_folds(e) holds:
// golden's codes of fl(c s) * e must be those of group_codes(s, fl(c e)).
template <Format F, bool kStochastic>
size_t check_folded_rht_scale(std::mt19937_64& rng, int groups) {
  const float c = math::kRht16Scale;
  size_t cases = 0;
  for (int g = 0; g < groups; ++g) {
    float s[16], y[16];
    for (int j = 0; j < 16; ++j) {
      // Exponent fields 0..4 (subnormal to 2^-123, where c s is inexact) on
      // every other group, every binade otherwise; never Inf or NaN.
      const uint32_t exp_field = g % 2 == 0 ? static_cast<uint32_t>(rng() % 5) : static_cast<uint32_t>(rng() % 255);
      s[j] = f32_from_bits((static_cast<uint32_t>(rng()) & 0x807FFFFFu) | (exp_field << 23));
      y[j] = math::mul_rn(s[j], c);
    }
    // Encode factors spread over [2^-124, 2^100), and the two bounds.
    float e = std::ldexp(1.0f + static_cast<float>(rng() % 8388608) / 8388608.0f, static_cast<int>(rng() % 224) - 124);
    if (g % 7 == 0) e = 0x1p-124f;
    if (g % 7 == 1) e = 0x1p100f;
    EXPECT_TRUE(math::rht16_scale_folds(e)) << test::hex32(f32_bits(e));
    uint32_t words[4];
    for (uint32_t& w : words) w = static_cast<uint32_t>(rng());
    const int bits = kStochastic ? 1 + static_cast<int>(rng() % 8) : 8;
    const math::PackedGroup p =
        math::group_codes<F, kStochastic>(s, math::mul_rn(c, e), words, math::sr_keep_mask(bits));
    float amax_s = 0.0f, amax_y = 0.0f;
    for (int j = 0; j < 16; ++j) {
      const uint32_t got = ((j < 8 ? p.lo : p.hi) >> (4 * (j % 8))) & 0xFu;
      const uint32_t r = kStochastic ? ((words[j / 4] >> (8 * (j % 4))) & 0xFFu) >> (8 - bits) : 0u;
      const uint32_t want =
          golden_code(F, y[j], e, kStochastic ? Rounding::kStochastic : Rounding::kNearestEven, r, bits);
      if (got != want) {
        ADD_FAILURE() << name(F) << (kStochastic ? " SR" : " RNE") << " s " << test::hex32(f32_bits(s[j]))
                      << " encode " << test::hex32(f32_bits(e)) << ": code " << got << ", golden " << want;
        return cases;
      }
      amax_s = std::max(amax_s, std::fabs(s[j]));
      amax_y = std::max(amax_y, std::fabs(y[j]));
      ++cases;
    }
    EXPECT_EQ(f32_bits(math::mul_rn(amax_s, c)), f32_bits(amax_y));
  }
  return cases;
}

// The FP32 block scale's division by gmax (div_by_constant_rn) against the
// IEEE division: every significand of a in [1, 2), which by its comment
// settles every binade from 2^-96 up, for each format's gmax; plus the edges
// of that range, the slow path below it and random magnitudes everywhere.
TEST(QuantMath, DivisionByGmaxMatchesIeeeDivision) {
  std::printf("seed %llu\n", static_cast<unsigned long long>(test::kKernelTestSeed));
  std::mt19937_64 rng(test::kKernelTestSeed + 31);
  size_t cases = 0;
  for (Format f : kAllFormats) {
    const math::ScaleFacts facts = math::scale_facts(ScaleMode::kFP32, f);
    std::vector<float> values;
    for (uint32_t m = 0; m < (1u << 23); ++m) values.push_back(f32_from_bits(0x3F800000u | m));
    for (uint32_t bits : {0x17800000u, 0x177FFFFFu, 0x17800001u, 0x7F7FFFFFu, 0x7F000000u, 0x00000001u, 0x007FFFFFu,
                          0x00800000u, 0u}) {
      values.push_back(f32_from_bits(bits));  // 2^-96 and its neighbours, the top, subnormals, zero
    }
    for (int i = 0; i < 1000000; ++i) values.push_back(f32_from_bits(static_cast<uint32_t>(rng()) % 0x7F800000u));
    for (float a : values) {
      const float got = math::div_by_constant_rn(a, facts.gmax, facts.inv_gmax);
      const float want = math::div_rn(a, facts.gmax);
      if (f32_bits(got) != f32_bits(want)) {
        ADD_FAILURE() << name(f) << " a " << test::hex32(f32_bits(a)) << ": " << test::hex32(f32_bits(got))
                      << ", IEEE " << test::hex32(f32_bits(want));
        return;
      }
      ++cases;
    }
  }
  std::printf("%zu quotients compared\n", cases);
  EXPECT_EQ(cases, 3u * ((1u << 23) + 9u + 1000000u));
}

// FP32 block scales: the largest scaled element of every block stays below
// gmax (1 + 2^-20) (math::products_within_grid), with and without the RHT's
// folded factor, and the codes without the clamps equal those with them
// (golden's, by GroupCodesMatchGolden) for blocks of amax, its neighbours and
// their negatives under random SR words. Amax runs through every binade of
// binary32 with edge and random mantissas.
template <Format F>
size_t check_products_within_grid(std::mt19937_64& rng, size_t& above_gmax) {
  const math::ScaleFacts facts = math::scale_facts(ScaleMode::kFP32, F);
  static_assert(math::products_within_grid(ScaleMode::kFP32));
  const double bound = static_cast<double>(facts.gmax) * (1.0 + 0x1p-20);
  const float c = math::kRht16Scale;
  size_t cases = 0;
  for (uint32_t exp_field = 0; exp_field < 255; ++exp_field) {
    for (int m = 0; m < 40; ++m) {
      const uint32_t edges[] = {0u, 1u, 2u, 0x400000u, 0x7FFFFEu, 0x7FFFFFu};
      const uint32_t mantissa = m < 6 ? edges[m] : static_cast<uint32_t>(rng()) & 0x7FFFFFu;
      const float amax = f32_from_bits((exp_field << 23) | mantissa);
      for (bool rht : {false, true}) {
        // As the kernel: the block amax of the RHT sums s is fl(c max |s|) = fl(c amax).
        const float block_amax = rht ? math::mul_rn(amax, c) : amax;
        const float e = math::block_scale(facts, block_amax, TensorScale{1.0f, 1.0f}).encode;
        const bool fold = rht && math::rht16_scale_folds(e);
        const float top = fold ? math::mul_rn(amax, math::mul_rn(e, c)) : math::mul_rn(block_amax, e);
        if (!(static_cast<double>(top) < bound)) {
          ADD_FAILURE() << name(F) << " amax " << test::hex32(f32_bits(amax)) << (rht ? " RHT" : "") << ": scaled "
                        << test::hex32(f32_bits(top)) << " reaches gmax (1 + 2^-20)";
          return cases;
        }
        above_gmax += top > facts.gmax ? 1u : 0u;
        // A block of amax and its lower neighbours, both signs, as group_codes
        // sees it: the RHT's sums with fl(c e), or the elements with e.
        float x[16];
        for (int j = 0; j < 16; ++j) {
          const float v = f32_from_bits(f32_bits(amax) - (f32_bits(amax) > static_cast<uint32_t>(j / 2) ? j / 2 : 0));
          x[j] = j % 2 == 0 ? v : -v;
          if (rht && !fold) x[j] = math::mul_rn(x[j], c);
        }
        const float encode = fold ? math::mul_rn(e, c) : e;
        uint32_t words[4];
        for (uint32_t& w : words) w = static_cast<uint32_t>(rng());
        const uint32_t keep = math::sr_keep_mask(1 + static_cast<int>(rng() % 8));
        const math::PackedGroup rne = math::group_codes<F, false, true>(x, encode, words, keep);
        const math::PackedGroup rne_free = math::group_codes<F, false, false>(x, encode, words, keep);
        const math::PackedGroup sr = math::group_codes<F, true, true>(x, encode, words, keep);
        const math::PackedGroup sr_free = math::group_codes<F, true, false>(x, encode, words, keep);
        if (rne.lo != rne_free.lo || rne.hi != rne_free.hi || sr.lo != sr_free.lo || sr.hi != sr_free.hi) {
          ADD_FAILURE() << name(F) << " amax " << test::hex32(f32_bits(amax)) << (rht ? " RHT" : "")
                        << ": the codes without the clamps differ";
          return cases;
        }
        ++cases;
      }
    }
  }
  return cases;
}

TEST(QuantMath, Fp32BlockScalesKeepEveryProductWithinTheGrid) {
  std::printf("seed %llu\n", static_cast<unsigned long long>(test::kKernelTestSeed));
  std::mt19937_64 rng(test::kKernelTestSeed + 29);
  size_t above_gmax = 0;
  size_t cases = check_products_within_grid<Format::kE2M1>(rng, above_gmax);
  cases += check_products_within_grid<Format::kE1M2>(rng, above_gmax);
  cases += check_products_within_grid<Format::kInt4>(rng, above_gmax);
  std::printf("%zu blocks, %zu with a scaled amax above gmax\n", cases, above_gmax);
  EXPECT_EQ(cases, 3u * 255u * 40u * 2u);
  EXPECT_GT(above_gmax, 0u);  // the unclamped path saw magnitudes past the grid
}

TEST(QuantMath, Rht16ScaleFoldsIntoTheEncodeFactorInsideItsRange) {
  std::printf("seed %llu\n", static_cast<unsigned long long>(test::kKernelTestSeed));
  std::mt19937_64 rng(test::kKernelTestSeed + 11);
  size_t cases = check_folded_rht_scale<Format::kE2M1, false>(rng, 20000);
  cases += check_folded_rht_scale<Format::kE2M1, true>(rng, 20000);
  cases += check_folded_rht_scale<Format::kE1M2, false>(rng, 20000);
  cases += check_folded_rht_scale<Format::kE1M2, true>(rng, 20000);
  cases += check_folded_rht_scale<Format::kInt4, false>(rng, 20000);
  cases += check_folded_rht_scale<Format::kInt4, true>(rng, 20000);
  std::printf("%zu element roundings compared\n", cases);
  EXPECT_EQ(cases, 6u * 20000u * 16u);

  // Outside the range folding changes codes, so the range is needed: at
  // e = 2^127, s = 1.25 2^-125 + 2^-148 gives fl(c s) e = 1.25 (a tie, to 1.0)
  // but s fl(c e) = 1.25 + 2^-23 (to 1.5); at e = 2^-125 (1 + 2^-23), fl(c e)
  // is rounded and s = 1.25 2^127 lands on the tie the other way.
  const struct {
    float s, e;
  } outside[] = {{0x1.4p-125f + 0x1p-148f, 0x1p127f}, {0x1.4p127f, 0x1.000002p-125f}};
  for (const auto& o : outside) {
    EXPECT_FALSE(math::rht16_scale_folds(o.e));
    const float c = math::kRht16Scale;
    EXPECT_NE(golden_code(Format::kE2M1, math::mul_rn(o.s, c), o.e, Rounding::kNearestEven, 0, 8),
              golden_code(Format::kE2M1, o.s, math::mul_rn(c, o.e), Rounding::kNearestEven, 0, 8))
        << test::hex32(f32_bits(o.s));
  }
}

}  // namespace
}  // namespace nibble
