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
#include "nibble/cuda/gemm_v2_layout.h"
#include "nibble/cuda/gemm_v3_layout.h"
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
        const math::TensorScaleValue got_t = math::tensor_scale(sf, ta);
        ASSERT_EQ(f32_bits(got_t.encode), f32_bits(want_t.encode)) << name(m) << " " << ta;
        ASSERT_EQ(f32_bits(got_t.decode), f32_bits(want_t.decode)) << name(m) << " " << ta;
        for (float a : {nan, inf, 0.0f, 1e-40f, 2.5f, 7.0f, 1e20f, std::numeric_limits<float>::max()}) {
          const BlockScale want = block_scale(m, f, a, want_t, NonFinitePolicy::kPropagate);
          const math::BlockScaleValue got = math::propagate_block_scale(sf, a, got_t);
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
        const float e = math::block_scale(facts, block_amax, math::TensorScaleValue{1.0f, 1.0f}).encode;
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

// ---- GEMM version 2: decode, shared-memory layout and fragment mapping -------------
namespace v2 = cuda::v2;

TEST(GemmV2Layout, DecodeOfFourAndOfEightCodesMatchesGolden) {
  // Every 16-bit value of four codes, for every format: decode_codes4 against
  // golden with junk above bit 15 (ignored), and decode_codes8 with the value
  // in either half of its word and junk in the other, which must decode alike.
  size_t cases = 0;
  for (Format f : kAllFormats) {
    uint32_t lut[4];
    v2::units_table(f, lut);
    for (uint32_t v = 0; v < 65536; ++v) {
      const uint32_t junk = (v * 0x9E3779B9u) >> 16;
      const uint32_t got = v2::decode_codes4(v | (junk << 16), lut);
      for (int i = 0; i < 4; ++i) {
        const int8_t want = static_cast<int8_t>(decode(f, static_cast<uint8_t>((v >> (4 * i)) & 0xFu)).signed_units());
        ASSERT_EQ(static_cast<int8_t>((got >> (8 * i)) & 0xFFu), want) << name(f) << " codes " << test::hex32(v);
      }
      for (int half = 0; half < 2; ++half) {
        const uint32_t w = half == 0 ? (v | (junk << 16)) : ((v << 16) | junk);
        uint32_t lo = 0, hi = 0;
        v2::decode_codes8(w, lut, lo, hi);
        ASSERT_EQ(half == 0 ? lo : hi, got) << name(f) << " word " << test::hex32(w);
      }
      ++cases;
    }
  }
  EXPECT_EQ(cases, 3u * 65536u);
}

TEST(GemmV2Layout, BytePermuteReplicatesTheTopBitWhereTheSelectorAsks) {
  // prmt.b32's default mode, which the decode's sign masks rely on (the
  // device runs the instruction itself; this pins the host definition).
  const uint32_t x = 0x7F80017Eu, y = 0xFF00C301u;
  EXPECT_EQ(math::byte_perm_sx(x, y, 0x3210u), x);
  EXPECT_EQ(math::byte_perm_sx(x, y, 0x7654u), y);
  EXPECT_EQ(math::byte_perm_sx(x, y, 0x8888u), 0x00000000u);  // byte 0x7E: top bit clear
  EXPECT_EQ(math::byte_perm_sx(x, y, 0x9999u), 0x00000000u);  // 0x01
  EXPECT_EQ(math::byte_perm_sx(x, y, 0xAAAAu), 0xFFFFFFFFu);  // 0x80
  EXPECT_EQ(math::byte_perm_sx(x, y, 0xF8CDu), 0xFF0000FFu);  // bytes 7, 0, 4, 5: 0xFF, 0x7E, 0x01, 0xC3
  EXPECT_EQ(math::byte_perm(x, y, 0xF8CDu), math::byte_perm_sx(x, y, 0x7045u));  // bit 3 ignored
}

TEST(GemmV2Layout, StageFitsTwoCtasPerSmAndCopiesCoverEveryChunkOnce) {
  static_assert(v2::kSmemBytes <= 227 * 1024 / 2 - 1024, "two CTAs per SM");
  static_assert(v2::kStageBytes % 16 == 0 && v2::kCodeBytes % 16 == 0 && v2::kRowBytes % 16 == 0);
  static_assert(v2::kScaleRowBytes % 16 == 0 && v2::kRowBytes >= v2::kCodeBytesPerRow);
  std::set<std::tuple<int, int, int>> seen;
  for (int tid = 0; tid < v2::kThreads; ++tid) {
    for (int i = 0; i < v2::kCodeCopiesPerThread; ++i) {
      const v2::CodeCopy c = v2::code_copy(i, tid);
      ASSERT_TRUE(c.op == 0 || c.op == 1);
      ASSERT_TRUE(c.row >= 0 && c.row < v2::kBM && c.chunk >= 0 && c.chunk < v2::kChunksPerRow);
      EXPECT_EQ(c.op, i / (v2::kCodeCopiesPerThread / 2)) << "the operand must be known at compile time";
      const int dst = v2::code_offset(c.op, c.row, c.chunk * 16);
      EXPECT_EQ(dst % 16, 0);
      EXPECT_LE(dst + 16, v2::kCodeBytes);
      EXPECT_TRUE(seen.insert({c.op, c.row, c.chunk}).second);
    }
    for (int op = 0; op < 2; ++op) {
      const int dst = v2::scale_offset(op, tid);
      EXPECT_EQ(dst % 16, 0);
      EXPECT_GE(dst, v2::kCodeBytes);
      EXPECT_LE(dst + v2::kScaleRowBytes, v2::kStageBytes);
    }
  }
  EXPECT_EQ(seen.size(), static_cast<size_t>(2 * v2::kBM * v2::kChunksPerRow));
}

// Shared-memory words read by one warp-wide load: conflict-free when no bank
// is asked for two different words.
bool conflict_free(const std::vector<std::pair<int, int>>& lane_byte_ranges) {
  std::map<int, std::set<int>> words_of_bank;
  for (const auto& [begin, bytes] : lane_byte_ranges) {
    for (int b = begin; b < begin + bytes; b += 4) words_of_bank[(b / 4) % 32].insert(b / 4);
  }
  for (const auto& [bank, words] : words_of_bank) {
    if (words.size() > 1) return false;
  }
  return true;
}

TEST(GemmV2Layout, FragmentReadsAreAlignedInBoundsAndConflictFree) {
  size_t loads = 0;
  for (int step : {16, 32}) {
    for (int bi = 0; bi < v2::kBK / step; ++bi) {
      for (int op = 0; op < 2; ++op) {
        for (int base = 0; base < v2::kBM; base += 8) {  // the 8 rows (groups) of one fragment read
          for (int ch = 0; ch < step / 16 + 1; ++ch) {
            const bool half = ch < step / 16;  // the FP16 path's chunk reads, then the INT8 read
            std::vector<std::pair<int, int>> ranges;
            for (int lane = 0; lane < 32; ++lane) {
              const int group = lane / 4, quad = lane % 4;
              const int byte = half ? v2::half_fragment_byte(step, bi, ch, quad) : v2::int8_fragment_byte(step, bi, quad);
              const int bytes = half || step == 16 ? 2 : 4;
              ASSERT_EQ(byte % bytes, 0);
              ASSERT_LE(byte + bytes, v2::kCodeBytesPerRow);
              const int at = v2::code_offset(op, base + group, byte);
              ranges.push_back({at - at % 4, 4});  // the word holding it
            }
            EXPECT_TRUE(conflict_free(ranges)) << "step " << step << " block " << bi << " rows " << base;
            ++loads;
          }
        }
        // Scale reads: INT8 path rows group (A) and 2 * quad (+1) (B); FP32 scales are words.
        for (int base = 0; base < v2::kBM; base += 8) {
          std::vector<std::pair<int, int>> a_rows, b_rows;
          for (int lane = 0; lane < 32; ++lane) {
            a_rows.push_back({v2::scale_offset(op, base + lane / 4) + 4 * bi % 32, 4});
            b_rows.push_back({v2::scale_offset(op, base + 2 * (lane % 4)) + 4 * bi % 32, 4});
          }
          EXPECT_TRUE(conflict_free(a_rows));
          EXPECT_TRUE(conflict_free(b_rows));
        }
      }
    }
  }
  EXPECT_GT(loads, 0u);
}

// The k permutation: each mma k slot (PTX fragment layouts of m16n8k32/k16
// s8 and m16n8k16 f16) must receive the same element of the block from A as
// from B, and the slots must take every element of the block exactly once.
TEST(GemmV2Layout, FragmentsGiveAAndBTheSameElementPerSlot) {
  for (int step : {16, 32}) {
    for (int bi = 0; bi < v2::kBK / step; ++bi) {
      // INT8 path. slot_of[register][byte] for lane quad q (A and B registers alike).
      std::map<int, int> a_slot_element, b_slot_element;
      for (int quad = 0; quad < 4; ++quad) {
        const int byte = v2::int8_fragment_byte(step, bi, quad);
        const int first = 2 * byte - bi * step;  // element (within the block) of the first code read
        for (int j = 0; j < 4; ++j) {
          // register 0 (a0 / b0): slots 4q + j <- nibble j; register 2 / b1 (k32): slots 16 + 4q + j <- nibble 4 + j.
          a_slot_element[4 * quad + j] = first + j;
          b_slot_element[4 * quad + j] = first + j;
          if (step == 32) {
            a_slot_element[16 + 4 * quad + j] = first + 4 + j;
            b_slot_element[16 + 4 * quad + j] = first + 4 + j;
          }
        }
      }
      std::set<int> elements;
      for (const auto& [slot, e] : a_slot_element) {
        EXPECT_EQ(b_slot_element[slot], e);
        EXPECT_TRUE(e >= 0 && e < step) << "step " << step << " slot " << slot;
        elements.insert(e);
      }
      EXPECT_EQ(elements.size(), static_cast<size_t>(step)) << "int8 step " << step;

      // FP16 path: per chunk, a0/b0 (slots 2q, 2q+1) <- elements 4q, 4q+1 of the
      // chunk's codes; a2/b1 (slots 2q+8, 2q+9) <- 4q+2, 4q+3.
      std::set<int> half_elements;
      for (int ch = 0; ch < step / 16; ++ch) {
        std::set<int> slots;
        for (int quad = 0; quad < 4; ++quad) {
          const int first = 2 * v2::half_fragment_byte(step, bi, ch, quad) - bi * step;
          for (int j = 0; j < 4; ++j) {
            const int slot = j < 2 ? 2 * quad + j : 2 * quad + 8 + (j - 2);
            EXPECT_TRUE(slots.insert(slot).second);
            EXPECT_TRUE(half_elements.insert(first + j).second);
            EXPECT_TRUE(first + j >= 16 * ch && first + j < 16 * ch + 16);
          }
        }
        EXPECT_EQ(slots.size(), 16u);
      }
      EXPECT_EQ(half_elements.size(), static_cast<size_t>(step)) << "fp16 step " << step;
    }
  }
}

// The scale window a stage copies (quantize.cu's layout: scales_ld = the
// block-grid width rounded up to 16 codes) lies inside the row, is aligned for
// its copy size, and column scale_column() of it is golden's scale of the
// k-block (k / block_cols).
TEST(GemmV2Layout, ScaleWindowsAreInsideTheRowAndPickGoldensScale) {
  size_t checked = 0;
  for (BlockShape ba : kAllBlockShapes) {
    for (BlockShape bb : kAllBlockShapes) {
      const int step = std::min(block_cols(ba), block_cols(bb));
      for (int scale_bytes : {1, 4}) {
        for (int64_t cols : {1, 15, 16, 17, 96, 127, 128, 129, 200, 544, 912, 1040, 4095, 4096, 8192}) {
          const int bc = block_cols(ba);
          const int64_t scale_cols = (cols + bc - 1) / bc;
          const int64_t scales_ld = (scale_cols + 15) / 16 * 16;
          const int window = v2::scale_window_bytes(bc, scale_bytes);
          ASSERT_TRUE(window == 4 || window == 8 || window == 16 || window == 32);
          ASSERT_LE(window, v2::kScaleRowBytes);
          const int64_t k_blocks = (cols + step - 1) / step;
          for (int64_t k0 = 0; k0 < cols; k0 += v2::kBK) {
            const int64_t first = k0 / bc;  // in codes
            EXPECT_LE((first * scale_bytes) + window, scales_ld * scale_bytes) << cols;
            EXPECT_EQ((first * scale_bytes) % std::min(window, 16), 0);
            for (int bi = 0; bi < v2::kBK / step; ++bi) {
              if (k0 / step + bi >= k_blocks) break;
              const int col = v2::scale_column(step, bi, bc == 16 ? 4 : 5);
              EXPECT_EQ(first + col, (k0 + bi * step) / bc);
              EXPECT_LT((col + 1) * scale_bytes, window + 1);
              ++checked;
            }
          }
        }
      }
    }
  }
  EXPECT_GT(checked, 0u);
}

// ---- GEMM version 3: FP16 decode and the wgmma shared-memory layout ----------------
namespace v3 = cuda::v3;

// An FP16 bit pattern as a double (normal and subnormal numbers, no Inf/NaN).
double half_value(uint32_t h) {
  const int e = static_cast<int>((h >> 10) & 0x1Fu);
  const double m = static_cast<double>(h & 0x3FFu);
  const double mag = e == 0 ? std::ldexp(m, -24) : std::ldexp(1024.0 + m, e - 25);
  return (h & 0x8000u) != 0u ? -mag : mag;
}

TEST(GemmV3Layout, HalfDecodeOfEightCodesMatchesGolden) {
  // Every 16-bit value of each half of the word (codes 0..3 or 4..7) under
  // varying junk in the other half, which must not matter; with the units
  // table (E4M3 datapath) and the values table (scaled datapath, units *
  // 2^lsb), the two tables gemm_stage.cuh and gemm_v3.cu build.
  size_t cases = 0;
  for (Format f : kAllFormats) {
    for (int exp2 : {0, lsb_exp(f)}) {
      uint32_t high[4];
      ASSERT_TRUE(v3::half_high_table(f, high, exp2)) << name(f) << ": a value's FP16 needs its low byte";
      for (uint32_t v = 0; v < 65536; ++v) {
        const uint32_t junk = (v * 0x9E3779B9u) >> 16;
        for (int part = 0; part < 2; ++part) {
          const uint32_t w = part == 0 ? (v | (junk << 16)) : ((v << 16) | junk);
          uint32_t h[4];
          v3::decode_codes8_half(w, high, h);
          for (int i = 0; i < 4; ++i) {
            const uint32_t pair = h[2 * part + i / 2];
            const uint32_t bits = (pair >> (16 * (i % 2))) & 0xFFFFu;
            const uint8_t code = static_cast<uint8_t>((v >> (4 * i)) & 0xFu);
            const int32_t units = decode(f, code).signed_units();
            ASSERT_EQ(half_value(bits), std::ldexp(static_cast<double>(units), exp2))
                << name(f) << " 2^" << exp2 << " word " << test::hex32(w);
            if (exp2 != 0) {
              ASSERT_EQ(half_value(bits), static_cast<double>(decode_value(f, code))) << name(f);
            }
            if (units == 0) {
              ASSERT_EQ(bits, 0u) << "zero codes must give +0";
            }
          }
          ++cases;
        }
      }
    }
  }
  EXPECT_EQ(cases, 3u * 2u * 2u * 65536u);
}

TEST(GemmV3Layout, RegisterAFragmentsAndDecodedBAgreeOnEveryK) {
  // Both datapaths' consumers decode A's register fragments from the raw
  // stage, and the producer writes B's decoded rows in the matching k order
  // (chunk_pair). For every thread of a consumer warpgroup, slice, register
  // and element: wgmma's A layout gives a logical (row, k); the FP16 there
  // must be the units of the raw code that B's decoded row holds at that k,
  // and each row's 16 logical k must come from 16 distinct codes. Raw rows are
  // seeded random codes; the gathers' loads are checked for bank conflicts.
  std::printf("seed %llu\n", static_cast<unsigned long long>(test::kKernelTestSeed + 13));
  std::mt19937_64 rng(test::kKernelTestSeed + 13);
  std::vector<uint8_t> stage(v2::kStageBytes);
  for (uint8_t& b : stage) b = static_cast<uint8_t>(rng());
  std::set<int> pairs;
  for (int half = 0; half < 2; ++half) {
    for (int j = 0; j < 4; ++j) pairs.insert(v3::chunk_pair(half, j));
  }
  EXPECT_EQ(pairs.size(), 8u);
  const auto code_at = [&](int row, int index) {  // code `index` of a slice-0-relative index in A's raw row
    const uint8_t byte = stage[static_cast<size_t>(v2::code_offset(0, row, index / 2))];
    return static_cast<uint8_t>(index % 2 == 0 ? byte & 0xFu : byte >> 4);
  };
  size_t elements = 0;
  for (Format f : kAllFormats) {
    uint32_t high[4];
    ASSERT_TRUE(v3::half_high_table(f, high));
    for (int s = 0; s < v3::kSlices; ++s) {
      for (int warp = 0; warp < 4; ++warp) {
        std::map<int, std::set<int>> codes_of_row;  // row -> physical codes its logical k read
        std::vector<std::pair<int, int>> loads_x, loads_y;  // the two load instructions (rows g, g + 8)
        for (int lane = 0; lane < 32; ++lane) {
          const int g = lane / 4, q = lane % 4, row0 = 16 * warp + g;
          const int x_off = v3::a_fragment_offset(row0, s, q), y_off = v3::a_fragment_offset(row0 + 8, s, q);
          ASSERT_EQ(x_off % 4, 0);
          ASSERT_EQ(y_off % 4, 0);
          loads_x.push_back({x_off, 4});
          loads_y.push_back({y_off, 4});
          uint32_t x = 0, y = 0;
          std::memcpy(&x, &stage[static_cast<size_t>(x_off)], 4);
          std::memcpy(&y, &stage[static_cast<size_t>(y_off)], 4);
          uint32_t a[4];
          v3::decode_a_fragment(math::byte_perm(x, y, v3::a_fragment_selector(q)), high, a);
          for (int i = 0; i < 4; ++i) {
            for (int e = 0; e < 2; ++e) {
              const int row = row0 + (i % 2 == 1 ? 8 : 0);   // a1, a3: row g + 8
              const int k = 2 * q + e + (i >= 2 ? 8 : 0);     // a2, a3: k + 8
              const int index = 2 * v3::chunk_pair(k / 8, (k % 8) / 2) + k % 2;  // B's code at k
              const uint8_t code = code_at(row, 16 * s + index);
              const uint32_t bits = (a[i] >> (16 * e)) & 0xFFFFu;
              ASSERT_EQ(half_value(bits), static_cast<double>(decode(f, code).signed_units()))
                  << name(f) << " slice " << s << " lane " << lane << " register " << i << " element " << e;
              EXPECT_TRUE(codes_of_row[row].insert(index).second) << "row " << row << " k " << k;
              ++elements;
            }
          }
        }
        for (const auto& [row, codes] : codes_of_row) EXPECT_EQ(codes.size(), 16u) << "row " << row;
        EXPECT_TRUE(conflict_free(loads_x)) << "slice " << s << " warp " << warp;
        EXPECT_TRUE(conflict_free(loads_y)) << "slice " << s << " warp " << warp;
      }
    }
  }
  EXPECT_EQ(elements, 3u * v3::kSlices * 4 * 32 * 8);
}

TEST(GemmV3Layout, E4M3DatapathAScalesLoadInRowPairsWithoutBankConflicts) {
  // The producer writes word a_scale_word(block, t) for its row t; a consumer
  // thread loads rows row0 and row0 + 8 (row0 % 16 < 8) as one 8-byte load.
  std::set<int> words;
  int phases = 0;
  for (int bi = 0; bi < v3::kMaxBlocksPerStage; ++bi) {
    for (int row = 0; row < v2::kBM; ++row) {
      const int w = v3::a_scale_word(bi, row);
      ASSERT_GE(w, 0);
      ASSERT_LE(4 * w + 4, v3::kAScaleBytes);
      EXPECT_TRUE(words.insert(w).second) << "block " << bi << " row " << row;
      if (row % 16 < 8) {
        EXPECT_EQ(w % 2, 0);
        EXPECT_EQ(v3::a_scale_word(bi, row + 8), w + 1) << "block " << bi << " row " << row;
      }
    }
    for (int warp = 0; warp < v3::kProducerThreads / 32; ++warp) {  // producer stores: lane l is row 32 warp + l
      std::vector<std::pair<int, int>> stores;
      for (int lane = 0; lane < 32; ++lane) stores.push_back({4 * v3::a_scale_word(bi, 32 * warp + lane), 4});
      EXPECT_TRUE(conflict_free(stores)) << "block " << bi << " warp " << warp;
      ++phases;
    }
    for (int warp = 0; warp < v3::kConsumerThreads / 32; ++warp) {  // consumer loads: rows 16 warp + group, + 8
      std::vector<std::pair<int, int>> loads;
      for (int lane = 0; lane < 32; ++lane) loads.push_back({4 * v3::a_scale_word(bi, 16 * warp + lane / 4), 8});
      EXPECT_TRUE(conflict_free(loads)) << "block " << bi << " warp " << warp;
      ++phases;
    }
  }
  EXPECT_EQ(words.size(), static_cast<size_t>(v3::kMaxBlocksPerStage * v2::kBM));
  EXPECT_EQ(phases, v3::kMaxBlocksPerStage * (4 + 8));
}

TEST(GemmV3Layout, ScaledDatapathScalesFillThePaddingAndLoadWithoutBankConflicts) {
  // A's decoded scales stay in the row's own scale window; B's fill the 16
  // padding bytes of the stage's 256 code rows, each word once, and nothing
  // the copies or the decode touch.
  std::set<int> words;
  for (int bi = 0; bi < v3::kMaxBlocksPerStage; ++bi) {
    for (int row = 0; row < v2::kBM; ++row) {
      const int a = v3::a_scale_offset(row, bi);
      EXPECT_GE(a, v2::scale_offset(0, row));
      EXPECT_LE(a + 4, v2::scale_offset(0, row) + v2::kScaleRowBytes);
      const int b = v3::b_scale_offset(bi, row);
      ASSERT_EQ(b % 4, 0);
      ASSERT_GE(b, 0);
      ASSERT_LE(b + 4, v2::kCodeBytes);
      EXPECT_GE(b % v2::kRowBytes, v2::kCodeBytesPerRow) << "block " << bi << " column " << row;
      EXPECT_TRUE(words.insert(b / 4).second);
      if (row % 2 == 0) {
        EXPECT_EQ(v3::b_scale_offset(bi, row + 1), b + 4);  // a column pair is one 8-byte load
        EXPECT_EQ(b % 8, 0);
      }
    }
  }
  EXPECT_EQ(words.size(), static_cast<size_t>((v2::kBM + v2::kBN) * (v2::kRowBytes - v2::kCodeBytesPerRow) / 4));
  int phases = 0;
  for (int bi = 0; bi < v3::kMaxBlocksPerStage; ++bi) {
    // The producer's stores: warp w's lane l writes column 32 w + l.
    for (int warp = 0; warp < v3::kProducerThreads / 32; ++warp) {
      std::vector<std::pair<int, int>> writes;
      for (int lane = 0; lane < 32; ++lane) writes.push_back({v3::b_scale_offset(bi, 32 * warp + lane), 4});
      EXPECT_TRUE(conflict_free(writes)) << "block " << bi << " warp " << warp;
      ++phases;
    }
    // A consumer's loads: lane (group, quad) reads columns 8 i + 2 quad, +1
    // for i = 2 m, 2 m + 1 (the same for every group: broadcast), one 16-byte
    // load per lane and m, at a constant step from m = 0.
    const int step = v3::b_scales_offset(0, 0, 1) - v3::b_scales_offset(0, 0, 0);
    for (int m = 0; m < 8; ++m) {
      std::vector<std::pair<int, int>> reads;
      for (int quad = 0; quad < 4; ++quad) {
        const int off = v3::b_scales_offset(bi, quad, m);
        EXPECT_EQ(off % 16, 0);
        EXPECT_EQ(off - v3::b_scales_offset(bi, quad, 0), m * step);
        for (int w = 0; w < 4; ++w) {
          const int column = 8 * (2 * m + w / 2) + 2 * quad + w % 2;
          EXPECT_EQ(v3::b_scale_offset(bi, column), off + 4 * w) << "block " << bi << " column " << column;
        }
        reads.push_back({off, 16});
      }
      EXPECT_TRUE(conflict_free(reads)) << "block " << bi << " m " << m;
      ++phases;
    }
  }
  EXPECT_EQ(phases, v3::kMaxBlocksPerStage * (4 + 8));
}

TEST(GemmV3Layout, BinaryScalesOfOneBlockPerStepNeedNoMoveForA) {
  // The scaled datapath's binary32 case (fp32_scales in gemm_v3.cu: both
  // operands with FP32 scales and blocks one k-block wide) leaves A's scales
  // where the stage copy puts them: the copy writes row t's window, whose
  // word bi is the scale of the stage's k-block bi, and the consumers must
  // read exactly that word. B's window is read whole by its own producer
  // thread and moved to code-row padding, which no scale window overlaps.
  EXPECT_LE(v2::kCodeBytes, v2::scale_offset(0, 0)) << "the scale windows follow every code row";
  int checked = 0;
  for (int step : {16, 32}) {
    const int blocks = v2::kBK / step;
    const int window = v2::scale_window_bytes(step, 4);
    EXPECT_EQ(window, 4 * blocks);
    EXPECT_EQ(window % 16, 0) << "fp32_scales loads B's window by 16 bytes";
    EXPECT_LE(window, v2::kScaleRowBytes);
    EXPECT_LE(blocks, v3::kMaxBlocksPerStage);
    for (int row = 0; row < v2::kBM; ++row) {
      for (int bi = 0; bi < blocks; ++bi) {
        EXPECT_EQ(v3::a_scale_offset(row, bi), v2::scale_offset(0, row) + 4 * bi) << "step " << step;
        const int b = v3::b_scale_offset(bi, row);
        EXPECT_LE(b + 4, v2::kCodeBytes);
        ++checked;
      }
    }
  }
  EXPECT_EQ(checked, v2::kBM * (v2::kBK / 16 + v2::kBK / 32));
}

TEST(GemmV3Layout, DecodedStageIsTheSwizzledLayoutWrittenOnceWithoutBankConflicts) {
  static_assert(v3::kSmemBytes <= 227 * 1024, "one CTA per SM");
  static_assert(v3::kProducerThreads == v2::kBN && v2::kBM == v2::kBN, "a producer thread per row of A and B");
  std::set<int> chunks;  // every 16-byte chunk of a decoded operand stage, once
  int phases = 0;
  for (int warp = 0; warp < v3::kProducerThreads / 32; ++warp) {
    // Producer thread t reads its raw row t with four 16-byte loads: per
    // load, each wavefront of 8 lanes conflict-free.
    for (int op = 0; op < 2; ++op) {
      for (int c = 0; c < v2::kCodeBytesPerRow / 16; ++c) {
        std::vector<std::pair<int, int>> reads;
        for (int lane = 0; lane < 32; ++lane) {
          const int off = v2::code_offset(op, warp * 32 + lane, 16 * c);
          ASSERT_EQ(off % 16, 0);
          reads.push_back({off, 16});
        }
        for (int q = 0; q < 4; ++q) {
          EXPECT_TRUE(conflict_free({reads.begin() + 8 * q, reads.begin() + 8 * q + 8})) << "raw chunk " << c;
          ++phases;
        }
      }
    }
    // ... and writes, per slice and k-half, one 16-byte chunk of row t.
    for (int s = 0; s < v3::kSlices; ++s) {
      for (int half = 0; half < 2; ++half) {
        std::vector<std::pair<int, int>> writes;
        for (int lane = 0; lane < 32; ++lane) {
          const int n = warp * 32 + lane;
          const int off = v3::decoded_offset(n, s, half);
          ASSERT_EQ(off % 16, 0);
          ASSERT_LT(off, v3::kDecodedBytes);
          // The 128-byte swizzle: the chunk of k = 16 s + 8 half within its
          // atom's row, XORed with the row's position in its group of 8.
          const int k = 16 * s + 8 * half;
          const int atom = k / v3::kAtomK;
          EXPECT_EQ(off, atom * v3::kAtomBytes + (n / 8) * 1024 + (n % 8) * 128 + (((k % 64) / 8) ^ (n % 8)) * 16);
          EXPECT_TRUE(chunks.insert(off / 16).second);
          writes.push_back({off, 16});
        }
        for (int q = 0; q < 4; ++q) {
          EXPECT_TRUE(conflict_free({writes.begin() + 8 * q, writes.begin() + 8 * q + 8})) << "slice " << s;
          ++phases;
        }
      }
    }
  }
  EXPECT_EQ(chunks.size(), static_cast<size_t>(v3::kDecodedBytes / 16));
  EXPECT_EQ(phases, 4 * (2 * 4 + v3::kSlices * 2) * 4);
  // The descriptor: start address at the slice's 32-byte column of its atom,
  // leading offset 1 (unused), stride 1 KiB, 128-byte swizzle.
  const uint64_t d = v3::rows_descriptor(0x10000u, 64) + v3::slice_step(5);
  EXPECT_EQ((d & 0x3FFFu) * 16, 0x10000u + v3::kAtomBytes + 8 * 1024 + 32);
  EXPECT_EQ((d >> 16) & 0x3FFFu, 1u);
  EXPECT_EQ((d >> 32) & 0x3FFFu, 1024u / 16);
  EXPECT_EQ(d >> 62, 1u);
  EXPECT_EQ((d >> 46) & 0xFFFFu, 0u);
  // Slice s's descriptor is slice 0's plus slice_step(s), without a carry out
  // of the start address field, for every 1 KiB-aligned base that fits.
  int descriptors = 0;
  for (uint32_t base = 0; base + v3::kDecodedBytes <= 256u * 1024u; base += 1024u) {
    for (int row0 : {0, 64}) {
      for (int s = 0; s < v3::kSlices; ++s) {
        const uint64_t ds = v3::rows_descriptor(base, row0) + v3::slice_step(s);  // as the consumers form it
        const uint32_t addr = base + static_cast<uint32_t>((s / 4) * v3::kAtomBytes + (row0 / 8) * 1024 + (s % 4) * 32);
        ASSERT_EQ((ds & 0x3FFFu) * 16, addr) << "base " << base << " slice " << s;
        ASSERT_EQ(ds >> 14, v3::rows_descriptor(base, row0) >> 14);
        ++descriptors;
      }
    }
  }
  EXPECT_EQ(descriptors, (256 - 32 + 1) * 2 * v3::kSlices);
}

// On full tiles every chunk of A's and B's 128 rows once; on half tiles
// (v3::HalfTile: 64 columns) every chunk of A's rows and of B's first 64 once,
// and none of B's others.
TEST(GemmV3Layout, TheProducerWarpgroupCopiesEveryChunkOnce) {
  for (int b_rows : {v3::FullTile::kCols, v3::HalfTile::kCols}) {
    std::set<std::tuple<int, int, int>> seen;
    const int per_thread = v2::code_copies(v3::kProducerThreads, b_rows);
    EXPECT_EQ(per_thread * v3::kProducerThreads, (v2::kBM + b_rows) * v2::kChunksPerRow);
    for (int tid = 0; tid < v3::kProducerThreads; ++tid) {
      for (int i = 0; i < per_thread; ++i) {
        const v2::CodeCopy c = v2::code_copy(i, tid, v3::kProducerThreads);
        ASSERT_TRUE(c.row >= 0 && c.row < (c.op == 0 ? v2::kBM : b_rows) && c.chunk >= 0 &&
                    c.chunk < v2::kChunksPerRow)
            << "B rows " << b_rows << ", thread " << tid << ", copy " << i;
        EXPECT_TRUE(seen.insert({c.op, c.row, c.chunk}).second);
      }
    }
    EXPECT_EQ(seen.size(), static_cast<size_t>((v2::kBM + b_rows) * v2::kChunksPerRow));
  }
}

// GEMM v3's persistent schedule, on full and half tiles, for shapes and CTA
// counts the GPU tests do not reach (a GPU launches one CTA per SM, or per
// tile where there are fewer): the CTAs' tiles are every output tile once,
// each where its m0 and n0 say; a CTA's stage count runs over its tiles'
// stages with Ring at G % 2 and G % 3; and on each decoded buffer's barrier
// the producer's waits and the consumers' hand-backs pair up in order, the
// wait before stage G taking the hand-back of stage G - 2, whose raw stage is
// the one stage G + 1's copy goes into. (An unpaired hand-back or wait leaves
// the named barrier a generation off: a hang or a race.)
TEST(GemmV3Layout, PersistentScheduleCoversEveryTileAndPairsEveryHandBack) {
  struct Shape {
    int64_t m, n, k;
  };
  const Shape shapes[] = {{1, 1, 1},         {128, 128, 128},  {129, 257, 129},    {1735, 3032, 300},
                          {300, 5000, 64},   {1000, 130, 1000}, {4096, 4096, 16384}, {8192, 8192, 8192},
                          {2000, 2000, 0}};
  const int cta_counts[] = {1, 2, 3, 7, 64, 132, 133, 1000};
  size_t schedules = 0, stages_checked = 0;
  for (int tile_n : {v3::FullTile::kCols, v3::HalfTile::kCols}) {  // full tiles and half tiles
    ASSERT_TRUE(tile_n == v2::kBN || tile_n == 64);
    const int tile_m = v3::FullTile::kRows;
    ASSERT_EQ(v3::HalfTile::kRows, tile_m);
    const bool half = tile_n < v2::kBN;
    for (const Shape& sh : shapes) {
      const v3::Tiles t(sh.m, sh.n, sh.k, tile_m, tile_n);
      const int64_t rows = (sh.m + tile_m - 1) / tile_m, cols = (sh.n + tile_n - 1) / tile_n;
      ASSERT_EQ(t.count, rows * cols);
      ASSERT_EQ(v3::tile_count(sh.m, sh.n, tile_m, tile_n), rows * cols);
      ASSERT_EQ(t.cols, cols);
      ASSERT_EQ(t.stages, (sh.k + v2::kBK - 1) / v2::kBK);
      for (int requested : cta_counts) {
        // The launch's count: at most one CTA per tile, but on half tiles a
        // grid sized for the other operand order may hold more, whose CTAs
        // past the last tile leave at once (gemm_cta).
        const int ctas = half ? std::max(requested, 1) : std::min(requested, t.count);
        ASSERT_TRUE(v3::counts_fit(t.count, ctas, t.stages));
        std::vector<int> seen(static_cast<size_t>(t.count), 0);
        int64_t all_stages = 0;
        for (int cta = 0; cta < ctas && cta < t.count; ++cta) {
          int tiles_of_cta = 0;
          for (int tile = cta; tile < t.count; tile += ctas) {
            ++seen[static_cast<size_t>(tile)];
            ++tiles_of_cta;
            const int64_t m0 = t.m0(tile), n0 = t.n0(tile);
            ASSERT_TRUE(m0 >= 0 && m0 < sh.m && n0 >= 0 && n0 < sh.n && m0 % tile_m == 0 && n0 % tile_n == 0);
            ASSERT_EQ(m0 / tile_m * cols + n0 / tile_n, tile);
          }
          const int total = t.cta_stages(cta, ctas);
          ASSERT_EQ(total, tiles_of_cta * t.stages) << "cta " << cta << " of " << ctas;
          all_stages += total;
          // The barrier protocol, stage by stage.
          std::vector<int> waits[2], hand_backs[2];
          v3::Ring ring;
          for (int g = 0; g < total; ++g) {
            ASSERT_EQ(ring.stage, g);
            ASSERT_EQ(ring.buf, g % 2);
            ASSERT_EQ(ring.raw, g % v2::kStages);
            if (v3::producer_waits(g)) {
              waits[g % 2].push_back(g);
              ASSERT_EQ(ring.next_raw(), (g - 2) % v2::kStages) << "stage " << g << " copies into a raw stage in use";
            } else {
              for (int used = 0; used <= g; ++used) ASSERT_NE(ring.next_raw(), used % v2::kStages);
            }
            if (v3::consumers_hand_back(g, total)) hand_backs[g % 2].push_back(g);
            ring.advance();
            ++stages_checked;
          }
          for (int b = 0; b < 2; ++b) {
            ASSERT_EQ(waits[b].size(), hand_backs[b].size()) << "buffer " << b << ", cta " << cta << " of " << ctas;
            for (size_t i = 0; i < waits[b].size(); ++i) ASSERT_EQ(waits[b][i], hand_backs[b][i] + 2);
          }
          ++schedules;
        }
        for (int v : seen) ASSERT_EQ(v, 1);
        EXPECT_EQ(all_stages, static_cast<int64_t>(t.count) * t.stages);
      }
    }
  }
  std::printf("%zu CTA schedules, %zu stages checked\n", schedules, stages_checked);
  EXPECT_GT(stages_checked, 0u);
  // The launch refuses what 32-bit counts cannot hold.
  EXPECT_FALSE(v3::counts_fit(int64_t{INT32_MAX}, 132, 1));
  EXPECT_FALSE(v3::counts_fit(int64_t{1} << 20, 1, int64_t{1} << 12));
  EXPECT_TRUE(v3::counts_fit(int64_t{1} << 20, 132, int64_t{1} << 12));
}

// The consumers of each tile shape (v3::TileShape): every output of the tile
// lies in exactly one thread's accumulators, where store_outputs (the m16n8
// fragment layout: acc index 4 ni + 2 h + e is row warp_row + group + 8 h,
// column 8 ni + 2 quad + e) expects it; each part's columns lie in
// the decoded B rows its wgmma reads; and the B scales a thread loads for an
// element (scaled datapath) are its column's.
template <class S>
size_t check_tile_shape() {
  static_assert(v3::kPartRegs * S::kParts == S::kAcc, "a thread's outputs are its parts' partial sums");
  std::vector<int> seen(static_cast<size_t>(S::kRows * S::kCols), 0);
  size_t elements = 0;
  for (int ctid = 0; ctid < v3::kConsumerThreads; ++ctid) {
    const v3::ConsumerPlace c = v3::consumer_place(ctid);
    for (int part = 0; part < S::kParts; ++part) {
      const int col0 = v3::part_col0(part);
      EXPECT_EQ(col0 % 8, 0);  // the descriptor's rows start at a group of 8
      for (int j = 0; j < v3::kPartRegs; ++j) {
        const int row = v3::part_row(c, j), col = v3::part_col(c, part, j);
        if (row < 0 || row >= S::kRows || col < 0 || col >= S::kCols) {
          ADD_FAILURE() << "thread " << ctid << " part " << part << " element " << j << " outside the tile";
          continue;
        }
        ++seen[static_cast<size_t>(row * S::kCols + col)];
        EXPECT_TRUE(row == c.row0 || row == c.row0 + 8);  // the rows of its A fragments and scales
        EXPECT_TRUE(col >= col0 && col < col0 + v3::kPartN);
        const int idx = v3::kPartRegs * part + j;
        EXPECT_EQ(row, c.warp_row + c.group + 8 * ((idx % 4) / 2)) << "thread " << ctid << " acc " << idx;
        EXPECT_EQ(col, 8 * (idx / 4) + 2 * c.quad + idx % 2) << "thread " << ctid << " acc " << idx;
        // b_scales_of_part: sb[2 (j / 4) + j % 2], word (that index) % 4 of
        // slot part_scale_slot + (that index) / 4.
        const int sb = 2 * (j / 4) + j % 2;
        for (int bi = 0; bi < v3::kMaxBlocksPerStage; ++bi) {
          EXPECT_EQ(v3::b_scales_offset(bi, c.quad, v3::part_scale_slot(part) + sb / 4) + 4 * (sb % 4),
                    v3::b_scale_offset(bi, col))
              << "thread " << ctid << " part " << part << " element " << j << " block " << bi;
        }
        ++elements;
      }
    }
  }
  for (size_t i = 0; i < seen.size(); ++i) EXPECT_EQ(seen[i], 1) << "output " << i / S::kCols << ", " << i % S::kCols;
  return elements;
}

TEST(GemmV3Layout, ConsumersOfEveryTileShapeHoldEachOutputOnce) {
  EXPECT_EQ(v3::kThreads, v3::kProducerThreads + v3::kConsumerThreads);
  EXPECT_EQ((v3::FullTile::kRows), 128);
  EXPECT_EQ((v3::FullTile::kCols), 128);
  EXPECT_EQ((v3::HalfTile::kRows), 128);
  EXPECT_EQ((v3::HalfTile::kCols), 64);
  EXPECT_FALSE(v3::FullTile::kHalf);
  EXPECT_TRUE(v3::HalfTile::kHalf);
  EXPECT_EQ((v3::FullTile::kParts), 4);
  EXPECT_EQ((v3::HalfTile::kParts), 2);
  const size_t full = check_tile_shape<v3::FullTile>();
  const size_t half = check_tile_shape<v3::HalfTile>();
  std::printf("outputs placed: %zu (128 x 128), %zu (128 x 64)\n", full, half);
  EXPECT_EQ(full, static_cast<size_t>(v2::kBM * v2::kBN));
  EXPECT_EQ(half, static_cast<size_t>(v2::kBM * 64));
}

// Half tiles where every one has an SM of its own (132 SMs: an H100 or H200).
TEST(GemmV3Layout, HalfTilesWhereEachHasAnSm) {
  struct Case {
    int64_t m, n;
    int sms;
    bool half;
  };
  const Case cases[] = {
      {1024, 1024, 132, true},    // 64 full tiles, 128 half: half the SMs idle on full tiles
      {1024, 1088, 132, false},   // 136 half tiles
      {1088, 1024, 132, false},   // 144
      {2048, 2048, 132, false},   // 256 full tiles: two waves either way
      {8192, 8192, 132, false},
      {64, 8448, 132, true},      // one row of 66 full tiles, each half empty
      {64, 8512, 132, false},     // 133 half tiles
      {1, 1, 1, true},
      {4160, 4096, 132, false},
      {130, 1000, 32, true},      // 32 half tiles
      {1000, 130, 24, true},      // 24
      {1000, 130, 23, false},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(v3::half_tiles(c.m, c.n, c.sms), c.half) << c.m << "x" << c.n << " on " << c.sms << " SMs";
    EXPECT_EQ(v3::half_tiles(c.m, c.n, c.sms), v3::tile_count(c.m, c.n, 128, 64) <= c.sms);
  }
}

// kAuto's tiles (132 SMs unless named): 128 x 64 where every one has an SM;
// else 64 x 128 for at most 64 rows, 128 x 64 for at most 64 columns, and
// 128 x 128 otherwise.
TEST(GemmV3Layout, AutoTilesKeepEveryRowOfATileInC) {
  using cuda::GemmTiles;
  struct Case {
    int64_t m, n;
    int sms;
    GemmTiles tiles;
  };
  const Case cases[] = {
      {64, 8448, 132, GemmTiles::kHalf},     // 132 tiles of 128 x 64, one an SM, half their rows empty
      {64, 8512, 132, GemmTiles::kWide},     // 133 of them; 67 of 64 x 128 (128 x 128 tiles before)
      {1, 16384, 132, GemmTiles::kWide},
      {64, 65, 132, GemmTiles::kHalf},
      {65, 8512, 132, GemmTiles::kFull},     // 65 rows: a wide tile would leave its second row of tiles near empty
      {64, 64, 132, GemmTiles::kHalf},       // one tile either way
      {1, 1, 1, GemmTiles::kHalf},
      {32768, 64, 132, GemmTiles::kHalf},    // 256 tiles either way, half tiles computing every output
      {32768, 65, 132, GemmTiles::kFull},
      {1024, 1024, 132, GemmTiles::kHalf},   // 128 half tiles
      {1024, 1088, 132, GemmTiles::kFull},   // 136
      {8192, 8192, 132, GemmTiles::kFull},
      {130, 1000, 32, GemmTiles::kHalf},
      {1000, 130, 23, GemmTiles::kFull},
      {40, 1000, 10, GemmTiles::kWide},      // 16 half tiles on 10 SMs
  };
  for (const Case& c : cases) {
    EXPECT_EQ(v3::auto_tiles(c.m, c.n, c.sms), c.tiles) << c.m << "x" << c.n << " on " << c.sms << " SMs";
  }
}

// A UE8M0 call runs its operands swapped (the other one's scales folded)
// only where that order's tiles take no more waves on the device's SMs.
TEST(GemmV3Layout, OtherOperandOrderOnlyWhereItTakesNoMoreWaves) {
  struct Case {
    int64_t m, n;
    int sms;
    bool full, half;
  };
  const Case cases[] = {
      {8448, 64, 132, true, true},   // wide tiles' order: 66 half tiles, 132 the other way (one wave each)
      {9000, 64, 132, true, false},  // 71 half tiles, 141 the other way: two waves
      {64, 9000, 132, true, true},   // fewer the other way
      {130, 1000, 132, true, true},
      {4160, 4096, 132, true, true},  // 2112 and 2080 half tiles: 16 waves each
  };
  for (const Case& c : cases) {
    EXPECT_EQ(v3::other_order_fits<v3::FullTile>(c.m, c.n, c.sms), c.full) << c.m << "x" << c.n;
    EXPECT_EQ(v3::other_order_fits<v3::HalfTile>(c.m, c.n, c.sms), c.half) << c.m << "x" << c.n;
    EXPECT_EQ(v3::other_order_fits<v3::HalfTile>(c.m, c.n, c.sms),
              v3::waves(v3::tile_count(c.n, c.m, 128, 64), c.sms) <= v3::waves(v3::tile_count(c.m, c.n, 128, 64),
                                                                                c.sms));
  }
}

// GEMM v3's FMA for UE8M0 scales on both operands (v3::fma_scale_code): for
// every code of A in and around the range beside codes of B at its ends and
// inside it, every format pair, partial sums from 0 to the largest a 32-wide
// block holds, and accumulators next to which a rounding or an overflow shows,
// golden's step fl(acc + block_product(P, fa, fb, sa, sb)) is fma(P', fl(sa sb),
// acc). One code past either end some case differs: the range is not wider
// than its bounds allow.
TEST(GemmV3Layout, Ue8m0ScalesInRangeMakeTheBlockStepOneFma) {
  constexpr int64_t kBlock = 32;  // the widest k-block
  const uint64_t seed = test::kKernelTestSeed;
  std::printf("seed %llu\n", static_cast<unsigned long long>(seed));
  std::mt19937_64 rng(seed);
  const uint32_t lo = v3::kFmaCodeLo, hi = v3::kFmaCodeHi;
  std::vector<uint32_t> codes_b = {lo - 1, lo, lo + 1, 127, hi - 1, hi, hi + 1};
  for (int i = 0; i < 4; ++i) codes_b.push_back(std::uniform_int_distribution<uint32_t>(lo, hi)(rng));
  const float max = std::numeric_limits<float>::max();
  const float accs[] = {0.0f,      1.0f,        -1.0f,      0x1p-149f,   -0x1p-149f, 0x3p-149f,
                        -0x3p-149f, 0x1p-126f,  -0x1p-126f, 0x1.8p127f,  -0x1.8p127f, max,
                        -max,       0x1.2345p-20f, -0x1.fffffep100f};
  size_t checks = 0, differ_inside = 0, differ_below = 0, differ_above = 0;
  for (Format fa : kAllFormats) {
    for (Format fb : kAllFormats) {
      const int32_t pmax = static_cast<int32_t>(kBlock * max_decode_units(fa) * max_decode_units(fb));
      const float unit = std::ldexp(1.0f, lsb_exp(fa) + lsb_exp(fb));
      ASSERT_LE(static_cast<float>(pmax) * unit, 0x1p11f) << "P' above the range's bound";
      ASSERT_GE(unit, 0x1p-4f) << "P' below the range's bound";
      std::vector<int32_t> sums = {0, 1, 2, 3, 5, 7, 1024, pmax - 1, pmax};
      for (int i = 0; i < 6; ++i) sums.push_back(std::uniform_int_distribution<int32_t>(0, pmax)(rng));
      for (uint32_t ca = lo - 1; ca <= hi + 1; ++ca) {
        for (uint32_t cb : codes_b) {
          const float sa = decode_scale(ScaleFormat::kUE8M0, ca), sb = decode_scale(ScaleFormat::kUE8M0, cb);
          const bool inside = v3::fma_scale_code(ca) && v3::fma_scale_code(cb);
          for (int32_t p : sums) {
            if (p > pmax) continue;
            for (int32_t sign : {1, -1}) {
              const int32_t ps = sign * p;
              const float q = static_cast<float>(ps) * unit;  // exact: |ps| < 2^24
              for (float acc : accs) {
                const float want = accumulate(acc, block_product(ps, fa, fb, sa, sb));
                const float got = canonical(std::fma(q, sa * sb, acc));
                ++checks;
                if (f32_bits(got) == f32_bits(want)) continue;
                if (inside) {
                  if (++differ_inside <= 5) {
                    ADD_FAILURE() << name(fa) << " x " << name(fb) << " codes " << ca << ", " << cb << " P " << ps
                                  << " acc " << acc << ": fma " << got << ", golden " << want;
                  }
                } else if (std::min(ca, cb) < lo) {
                  ++differ_below;
                } else {
                  ++differ_above;
                }
              }
            }
          }
        }
      }
    }
  }
  std::printf("%zu steps compared: %zu differ inside the range, %zu below it, %zu above it\n", checks,
              differ_inside, differ_below, differ_above);
  EXPECT_GT(checks, 0u);
  EXPECT_EQ(differ_inside, 0u);
  EXPECT_GT(differ_below, 0u);
  EXPECT_GT(differ_above, 0u);
  EXPECT_FALSE(v3::fma_scale_code(0xFFu));  // NaN
  EXPECT_FALSE(v3::fma_scale_code(0u));     // the padding's zero codes
}

// An operand's UE8M0 codes that fold into its FP16 values (v3::ue8m0_fold_codes): for
// each format a range inside the FMA's, every code of which leaves every
// value of the format times 2^(c - 127) zero or a normal FP16 (2^-14 to
// 65504) with at most 11 significant bits, and one code past either end
// leaves some value outside (or lies outside the FMA's range).
TEST(GemmV3Layout, Ue8m0FoldRangesKeepEveryValueAnExactFp16) {
  auto exact_fp16 = [](Format f, uint32_t code) {
    for (uint32_t c = 0; c < 16; ++c) {
      const int32_t units = decode(f, static_cast<uint8_t>(c)).signed_units();
      if (units == 0) continue;
      const double v = std::ldexp(std::fabs(static_cast<double>(units)), lsb_exp(f) + static_cast<int>(code) - 127);
      int e = 0;
      const double m = std::frexp(v, &e);  // v = m 2^e, m in [0.5, 1)
      if (v < 0x1p-14 || v > 65504.0 || std::ldexp(m, 11) != std::floor(std::ldexp(m, 11))) return false;
    }
    return true;
  };
  size_t formats = 0;
  for (Format f : kAllFormats) {
    uint32_t lo = 0, hi = 0;
    ASSERT_TRUE(v3::ue8m0_fold_codes(f, lo, hi)) << name(f);
    std::printf("%s: codes %u..%u fold (2^%d..2^%d)\n", std::string(name(f)).c_str(), lo, hi,
                static_cast<int>(lo) - 127, static_cast<int>(hi) - 127);
    EXPECT_TRUE(v3::fma_scale_code(lo) && v3::fma_scale_code(hi)) << name(f);
    for (uint32_t code = lo; code <= hi; ++code) EXPECT_TRUE(exact_fp16(f, code)) << name(f) << " " << code;
    for (uint32_t code : {lo - 1, hi + 1}) {
      EXPECT_TRUE(!exact_fp16(f, code) || !v3::fma_scale_code(code)) << name(f) << " " << code;
    }
    ++formats;
  }
  EXPECT_EQ(formats, kAllFormats.size());
}

}  // namespace
}  // namespace nibble
