// The quantizer's two policies (docs/numerics.md section 3): the signed-zero policy against
// golden's own cvt (convert_to_format, which CUDA's conversions match), E1M2 = INT4 under
// each policy, and the non-finite policy 'propagate' against the behaviour of Transformer
// Engine's NVFP4 reference quantizer, worked out case by case. The seed is NIBBLE_POLICY_SEED
// (default 0x9011c1e5), printed.
#include <gtest/gtest.h>

#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "nibble/fp32.h"
#include "nibble/quantize.h"
#include "nibble/scale.h"

namespace nibble {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();
const float kNaN = f32_from_bits(kCanonicalNaN);

uint64_t test_seed() {
  const char* env = std::getenv("NIBBLE_POLICY_SEED");
  const uint64_t seed = env != nullptr ? std::strtoull(env, nullptr, 0) : 0x9011c1e5u;
  std::printf("NIBBLE_POLICY_SEED=0x%" PRIx64 "\n", seed);
  return seed;
}

std::string hex(uint32_t u) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%08x", u);
  return buf;
}

QuantConfig config(Format f, ScaleMode m, ZeroPolicy z, NonFinitePolicy p) {
  QuantConfig c;
  c.format = f;
  c.scale = m;
  c.policy = QuantPolicy{z, p};
  return c;
}

TEST(Policies, NamesRoundTripAndDefaults) {
  for (ZeroPolicy z : kAllZeroPolicies) EXPECT_EQ(parse_zero_policy(name(z)), z);
  for (NonFinitePolicy p : kAllNonFinitePolicies) EXPECT_EQ(parse_nonfinite_policy(name(p)), p);
  EXPECT_EQ(name(ZeroPolicy::kPositive), "positive");
  EXPECT_EQ(name(ZeroPolicy::kSigned), "signed");
  EXPECT_EQ(name(NonFinitePolicy::kFinite), "finite");
  EXPECT_EQ(name(NonFinitePolicy::kPropagate), "propagate");
  EXPECT_FALSE(parse_zero_policy("keep").has_value());
  EXPECT_FALSE(parse_nonfinite_policy("te").has_value());
  const QuantConfig c;
  EXPECT_EQ(c.policy.zero, ZeroPolicy::kPositive);
  EXPECT_EQ(c.policy.nonfinite, NonFinitePolicy::kFinite);
}

// Under the signed-zero policy the quantizer's element code is convert_to_format's (the cvt
// that golden_cuda_headers_test compares with CUDA's on every binary32 pattern); under the
// positive policy it differs exactly where that code is a zero of either sign. Every
// non-NaN pattern with a random sign, magnitude below 2^4 and any low bits, and all formats.
TEST(ZeroPolicy, SignedIsTheCvtAndPositiveDiffersOnlyOnZeros) {
  std::mt19937_64 rng(test_seed());
  uint64_t checked = 0, negative_zeros = 0;
  for (int i = 0; i < 400000; ++i) {
    uint32_t u = static_cast<uint32_t>(rng());
    const uint32_t biased = static_cast<uint32_t>(rng() % 131);  // 2^-127 .. 2^3: around every grid
    u = (u & 0x807FFFFFu) | (biased << 23);
    const float x = f32_from_bits(u);
    for (Format f : kAllFormats) {
      for (Rounding r : kAllRoundings) {
        const int bits = 1 + static_cast<int>(rng() % 8);
        const uint32_t random = static_cast<uint32_t>(rng()) & ((1u << bits) - 1u);
        const uint8_t cvt = convert_to_format(x, f, r, random, bits);
        uint8_t signed_code = 0xFF, positive_code = 0xFF;
        quantize_block_elements(&x, 1, 1.0f, f, r, &random, bits, ZeroPolicy::kSigned, &signed_code);
        quantize_block_elements(&x, 1, 1.0f, f, r, &random, bits, ZeroPolicy::kPositive, &positive_code);
        ASSERT_EQ(signed_code, cvt) << name(f) << " " << name(r) << " x=" << hex(u);
        const bool zero = decode(f, cvt).units == 0;
        ASSERT_EQ(positive_code, zero ? 0 : cvt) << name(f) << " " << name(r) << " x=" << hex(u);
        negative_zeros += cvt == 0x8 && f != Format::kInt4;
        ++checked;
      }
    }
  }
  std::printf("[ cases    ] %llu element codes, %llu of them minifloat -0\n",
              static_cast<unsigned long long>(checked), static_cast<unsigned long long>(negative_zeros));
  EXPECT_GT(negative_zeros, 1000u);
}

TEST(ZeroPolicy, NegativeZeroCodesPerFormat) {
  const float x[5] = {-0.0f, -1e-30f, -0.1f, 0.0f, 1e-30f};
  const uint8_t want_minifloat[5] = {0x8, 0x8, 0x8, 0x0, 0x0};
  for (Format f : kAllFormats) {
    uint8_t codes[5];
    quantize_block_elements(x, 5, 1.0f, f, Rounding::kNearestEven, nullptr, 8, ZeroPolicy::kSigned, codes);
    for (int i = 0; i < 5; ++i) {
      // INT4 has no negative zero: its code is 0 under both policies.
      EXPECT_EQ(codes[i], f == Format::kInt4 ? 0 : want_minifloat[i]) << name(f) << " i=" << i;
    }
    quantize_block_elements(x, 5, 1.0f, f, Rounding::kNearestEven, nullptr, 8, ZeroPolicy::kPositive, codes);
    for (int i = 0; i < 5; ++i) EXPECT_EQ(codes[i], 0) << name(f) << " i=" << i;
  }
}

// E1M2 and INT4 dequantize to identical bits under the positive policy (numerics.md
// section 9); under the signed policy to identical values, the bits differing exactly where
// E1M2 holds a negative zero and INT4 a positive one.
TEST(ZeroPolicy, E1M2AndInt4PerPolicy) {
  std::mt19937_64 rng(test_seed() + 1);
  std::normal_distribution<float> g(0.0f, 1.0f);
  std::vector<float> x(64 * 64);
  for (float& v : x) v = std::ldexp(g(rng), static_cast<int>(rng() % 20) - 10);
  size_t sign_only = 0, compared = 0;
  for (ScaleMode m : {ScaleMode::kFP32, ScaleMode::kMXFloor, ScaleMode::kMXCeil}) {
    for (BlockShape b : kAllBlockShapes) {
      for (ZeroPolicy z : kAllZeroPolicies) {
        QuantConfig e1m2 = config(Format::kE1M2, m, z, NonFinitePolicy::kFinite);
        QuantConfig int4 = config(Format::kInt4, m, z, NonFinitePolicy::kFinite);
        e1m2.block = int4.block = b;
        const std::vector<float> a = dequantize(quantize(x.data(), 64, 64, e1m2));
        const std::vector<float> c = dequantize(quantize(x.data(), 64, 64, int4));
        for (size_t i = 0; i < a.size(); ++i) {
          ++compared;
          if (z == ZeroPolicy::kPositive) {
            ASSERT_EQ(f32_bits(a[i]), f32_bits(c[i])) << name(m) << " " << name(b) << " i=" << i;
          } else {
            ASSERT_EQ(a[i], c[i]) << name(m) << " " << name(b) << " i=" << i;
            if (f32_bits(a[i]) != f32_bits(c[i])) {
              ASSERT_EQ(f32_bits(a[i]), 0x80000000u);
              ASSERT_EQ(f32_bits(c[i]), 0x00000000u);
              ++sign_only;
            }
          }
        }
      }
    }
  }
  std::printf("[ cases    ] %zu dequantized pairs, %zu differing only in the sign of zero\n", compared, sign_only);
  EXPECT_GT(sign_only, 0u);
}

TEST(NonFinitePolicy, ScaleAmax) {
  const float finite[3] = {-3.0f, 2.0f, 0.5f};
  const float with_inf[4] = {-3.0f, -kInf, 2.0f, 0.5f};
  const float with_nan[4] = {-3.0f, kInf, f32_from_bits(0xFFC00123u), 0.5f};
  for (NonFinitePolicy p : kAllNonFinitePolicies) EXPECT_EQ(scale_amax(finite, 3, p), 3.0f);
  EXPECT_EQ(scale_amax(with_inf, 4, NonFinitePolicy::kFinite), 3.0f);
  EXPECT_EQ(scale_amax(with_inf, 4, NonFinitePolicy::kPropagate), kInf);
  EXPECT_EQ(scale_amax(with_nan, 4, NonFinitePolicy::kFinite), 3.0f);
  EXPECT_EQ(f32_bits(scale_amax(with_nan, 4, NonFinitePolicy::kPropagate)), kCanonicalNaN);
  EXPECT_EQ(scale_amax(with_nan, 0, NonFinitePolicy::kPropagate), 0.0f);
}

// Transformer Engine's reference (NVFP4QuantizerRef._quantize_blockwise_reference) with one
// NaN anywhere: global amax = torch.max(|x|) = NaN, so S_enc = min(2688 / NaN, FLT_MAX) = NaN
// (not 0, so not replaced by 1), every block's fp8 scale is NaN (E4M3 0x7F), every encode
// scale NaN, and cast_to_fp4x2 of a NaN matches no range: code 0.
TEST(NonFinitePolicy, PropagateNanMakesEveryScaleNan) {
  std::vector<float> x(3 * 48);
  for (size_t i = 0; i < x.size(); ++i) x[i] = std::sin(static_cast<float>(i)) * 3.0f;
  x[77] = kNaN;
  for (ZeroPolicy z : kAllZeroPolicies) {
    const QuantizedTensor q = quantize(x.data(), 3, 48, config(Format::kE2M1, ScaleMode::kNVFP4, z,
                                                                 NonFinitePolicy::kPropagate));
    EXPECT_EQ(f32_bits(q.tensor.encode), kCanonicalNaN);
    EXPECT_EQ(f32_bits(q.tensor.decode), kCanonicalNaN);
    for (uint32_t s : q.scales) EXPECT_EQ(s, 0x7Fu);
    for (uint8_t c : q.codes) EXPECT_EQ(c, 0);
    for (float v : dequantize(q)) EXPECT_EQ(f32_bits(v), kCanonicalNaN);
    // The finite policy: only the block holding the NaN is NaN-scaled.
    const QuantizedTensor f = quantize(x.data(), 3, 48, config(Format::kE2M1, ScaleMode::kNVFP4, z,
                                                                 NonFinitePolicy::kFinite));
    EXPECT_TRUE(f32_is_finite(f.tensor.encode));
    for (size_t b = 0; b < f.scales.size(); ++b) EXPECT_EQ(f.scales[b] == 0x7Fu, b == 77 / 16) << b;
  }
}

// ... with +Inf (and no NaN): global amax = Inf, S_enc = 2688 / Inf = 0, replaced by 1, so
// g = 1. The block holding the infinity: amax Inf, decode scale Inf * fl(1/6) = Inf, clamped
// to FLT_MAX and then to 448 (E4M3 0x7E); encode scale fl(1/448); Inf -> 6 (code 0x7), -Inf
// -> -6 (0xF); its finite elements x * fl(1/448), rounded. Other blocks use S_enc = 1.
TEST(NonFinitePolicy, PropagateInfSaturatesItsBlockUnderAUnitTensorScale) {
  std::vector<float> x(48);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i % 7) - 3.0f;
  x[2] = kInf;
  x[5] = -kInf;
  x[6] = 900.0f;
  x[7] = -300.0f;
  const QuantizedTensor q =
      quantize(x.data(), 1, 48, config(Format::kE2M1, ScaleMode::kNVFP4, ZeroPolicy::kSigned,
                                       NonFinitePolicy::kPropagate));
  EXPECT_EQ(q.tensor.encode, 1.0f);
  EXPECT_EQ(q.tensor.decode, 1.0f);
  EXPECT_EQ(q.scales[0], 0x7Eu);  // 448
  EXPECT_EQ(q.codes[2], 0x7);
  EXPECT_EQ(q.codes[5], 0xF);
  const float e = 1.0f / 448.0f;
  EXPECT_EQ(q.codes[6], convert_to_format(900.0f * e, Format::kE2M1, Rounding::kNearestEven));   // 2.0 -> 0x4
  EXPECT_EQ(q.codes[7], convert_to_format(-300.0f * e, Format::kE2M1, Rounding::kNearestEven));  // -0.67 -> -0.5
  EXPECT_EQ(q.codes[0], 0x8);  // -3/448 rounds to -0: the signed policy keeps it
  // Block 1 (max |x| = 3) under S_enc = 1: E4M3(fl(3 * fl(1/6))) = 0.5.
  EXPECT_EQ(q.scales[1], encode_e4m3(3.0f * (1.0f / 6.0f)));
  EXPECT_EQ(decode_scale(ScaleFormat::kE4M3, q.scales[1]), 0.5f);
}

// The other scale modes under propagate: an infinite block amax clamps UE8M0's exponent to
// 127 (TE's cast_to_e8 does so for MXFP4) and gives FP32 the scale +Inf with encode 0 (every
// element is then 0, and Inf * 0 is NaN: code 0); a NaN amax gives the NaN code.
TEST(NonFinitePolicy, PropagateUnderFp32AndMx) {
  const float inf_block[16] = {1.0f, -kInf, 2.0f, -0.5f, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
  const float nan_block[16] = {1.0f, kNaN, 2.0f, -0.5f, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
  for (Format f : kAllFormats) {
    for (ScaleMode m : {ScaleMode::kMXFloor, ScaleMode::kMXCeil}) {
      const QuantizedTensor q = quantize(inf_block, 1, 16, config(f, m, ZeroPolicy::kPositive,
                                                                  NonFinitePolicy::kPropagate));
      EXPECT_EQ(q.scales[0], 254u) << name(f) << " " << name(m);
      EXPECT_EQ(q.codes[1], encode(f, true, max_units(f))) << name(f);
      EXPECT_EQ(q.codes[2], 0) << name(f);  // 2 * 2^-127 rounds to zero
      const QuantizedTensor n = quantize(nan_block, 1, 16, config(f, m, ZeroPolicy::kPositive,
                                                                  NonFinitePolicy::kPropagate));
      EXPECT_EQ(n.scales[0], 0xFFu);
      for (uint8_t c : n.codes) EXPECT_EQ(c, 0);
    }
    const QuantizedTensor q = quantize(inf_block, 1, 16, config(f, ScaleMode::kFP32, ZeroPolicy::kSigned,
                                                                NonFinitePolicy::kPropagate));
    EXPECT_EQ(q.scales[0], 0x7F800000u);
    EXPECT_EQ(q.codes[0], 0);
    EXPECT_EQ(q.codes[1], 0);                                     // -Inf * 0 = NaN
    EXPECT_EQ(q.codes[3], f == Format::kInt4 ? 0 : 0x8) << name(f);  // -0.5 * 0 = -0
    const std::vector<float> y = dequantize(q);
    for (float v : y) EXPECT_TRUE(std::isnan(v));  // 0 * Inf
  }
}

// On tensors without NaN or Inf the two non-finite policies agree bit for bit.
TEST(NonFinitePolicy, PoliciesAgreeOnFiniteTensors) {
  std::mt19937_64 rng(test_seed() + 2);
  std::normal_distribution<float> g(0.0f, 1.0f);
  size_t tensors = 0;
  for (Format f : kAllFormats) {
    for (ScaleMode m : kAllScaleModes) {
      for (BlockShape b : kAllBlockShapes) {
        std::vector<float> x(33 * 40);
        const int e = static_cast<int>(rng() % 60) - 30;
        for (float& v : x) v = std::ldexp(g(rng), e);
        QuantConfig finite = config(f, m, ZeroPolicy::kPositive, NonFinitePolicy::kFinite);
        finite.block = b;
        QuantConfig propagate = finite;
        propagate.policy.nonfinite = NonFinitePolicy::kPropagate;
        const QuantizedTensor a = quantize(x.data(), 33, 40, finite);
        const QuantizedTensor c = quantize(x.data(), 33, 40, propagate);
        EXPECT_EQ(a.codes, c.codes);
        EXPECT_EQ(a.scales, c.scales);
        EXPECT_EQ(f32_bits(a.tensor.encode), f32_bits(c.tensor.encode));
        ++tensors;
      }
    }
  }
  std::printf("[ cases    ] %zu tensors under both policies\n", tensors);
  EXPECT_EQ(tensors, 36u);
}

// block_scale with a policy: finite gives a non-finite amax the NaN code, propagate the rules.
TEST(NonFinitePolicy, BlockScaleWithPolicy) {
  const TensorScale unit;
  for (Format f : kAllFormats) {
    for (ScaleMode m : kAllScaleModes) {
      EXPECT_EQ(block_scale(m, f, kInf, unit, NonFinitePolicy::kFinite).code, nan_block_scale(m).code);
      EXPECT_EQ(block_scale(m, f, kNaN, unit, NonFinitePolicy::kFinite).code, nan_block_scale(m).code);
      EXPECT_EQ(block_scale(m, f, kNaN, unit, NonFinitePolicy::kPropagate).code, nan_block_scale(m).code);
      EXPECT_EQ(block_scale(m, f, 3.0f, unit, NonFinitePolicy::kFinite).code,
                block_scale(m, f, 3.0f, unit, NonFinitePolicy::kPropagate).code);
    }
    EXPECT_EQ(block_scale(ScaleMode::kNVFP4, f, kInf, unit, NonFinitePolicy::kPropagate).code, 0x7Eu);
    EXPECT_EQ(block_scale(ScaleMode::kFP32, f, kInf, unit, NonFinitePolicy::kPropagate).code, 0x7F800000u);
    EXPECT_EQ(block_scale(ScaleMode::kFP32, f, kInf, unit, NonFinitePolicy::kPropagate).encode, 0.0f);
    const TensorScale nan_tensor = tensor_scale(ScaleMode::kNVFP4, f, kNaN);
    EXPECT_EQ(f32_bits(nan_tensor.encode), kCanonicalNaN);
    EXPECT_EQ(block_scale(ScaleMode::kNVFP4, f, 1.0f, nan_tensor, NonFinitePolicy::kPropagate).code, 0x7Fu);
    const TensorScale inf_tensor = tensor_scale(ScaleMode::kNVFP4, f, kInf);
    EXPECT_EQ(inf_tensor.encode, 1.0f);
    EXPECT_EQ(inf_tensor.decode, 1.0f);
  }
}

}  // namespace
}  // namespace nibble
