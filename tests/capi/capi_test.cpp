// The C API against golden called directly: every result bit-exact, exhaustive over
// codes, seeded random over values and configurations. The seed is
// NIBBLE_CAPI_SEED (default 0x5eed2026), printed by every test.
#include <gtest/gtest.h>

#include <algorithm>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "nibble/dot.h"
#include "nibble/fp32.h"
#include "nibble/nibble_golden.h"
#include "nibble/philox.h"
#include "nibble/quantize.h"
#include "nibble/scale.h"

namespace nibble {
namespace {

uint64_t test_seed() {
  const char* env = std::getenv("NIBBLE_CAPI_SEED");
  const uint64_t seed = env != nullptr ? std::strtoull(env, nullptr, 0) : 0x5eed2026u;
  std::printf("NIBBLE_CAPI_SEED=0x%" PRIx64 "\n", seed);
  return seed;
}

// NaNs compare by NaN-ness (golden's host float operations do not fix their payload);
// everything else, signed zeros included, bit for bit.
bool same_f32(float a, float b) { return (a != a && b != b) || f32_bits(a) == f32_bits(b); }

// Gaussian values over many binades, with exact zeros, ties and the odd non-finite value.
float random_value(std::mt19937_64& rng, bool allow_non_finite) {
  const int kind = static_cast<int>(rng() % 20);
  if (kind == 0) return 0.0f;
  if (kind == 1 && allow_non_finite) return (rng() & 1) ? INFINITY : NAN;
  std::normal_distribution<float> g(0.0f, 1.0f);
  const int e = static_cast<int>(rng() % 24) - 12;
  return std::ldexp(g(rng), e);
}

int as_int(Format f) { return static_cast<int>(f); }
int as_int(ScaleMode m) { return static_cast<int>(m); }
int as_int(ScaleFormat f) { return static_cast<int>(f); }
int as_int(BlockShape b) { return static_cast<int>(b); }
int as_int(Rounding r) { return static_cast<int>(r); }
int as_int(ZeroPolicy z) { return static_cast<int>(z); }
int as_int(NonFinitePolicy p) { return static_cast<int>(p); }

TEST(CApi, VersionEnumsAndNamesMatchGolden) {
  int cases = 0;
  EXPECT_EQ(nibble_golden_api_version(), NIBBLE_GOLDEN_API_VERSION);
  for (Format f : kAllFormats) {
    ASSERT_NE(nibble_format_name(as_int(f)), nullptr);
    EXPECT_EQ(std::string(nibble_format_name(as_int(f))), name(f));
    ++cases;
  }
  for (ScaleFormat f : kAllScaleFormats) {
    EXPECT_EQ(std::string(nibble_scale_format_name(as_int(f))), name(f));
    ++cases;
  }
  for (ScaleMode m : kAllScaleModes) {
    EXPECT_EQ(std::string(nibble_scale_mode_name(as_int(m))), name(m));
    int sf = -1;
    ASSERT_EQ(nibble_scale_mode_format(as_int(m), &sf), NIBBLE_OK);
    EXPECT_EQ(sf, as_int(scale_format(m)));
    ++cases;
  }
  for (Rounding r : {Rounding::kNearestEven, Rounding::kStochastic}) {
    EXPECT_EQ(std::string(nibble_rounding_name(as_int(r))), name(r));
    ++cases;
  }
  for (BlockShape b : kAllBlockShapes) {
    EXPECT_EQ(std::string(nibble_block_shape_name(as_int(b))), name(b));
    ++cases;
  }
  for (ZeroPolicy z : kAllZeroPolicies) {
    EXPECT_EQ(std::string(nibble_zero_policy_name(as_int(z))), name(z));
    ++cases;
  }
  for (NonFinitePolicy p : kAllNonFinitePolicies) {
    EXPECT_EQ(std::string(nibble_nonfinite_policy_name(as_int(p))), name(p));
    ++cases;
  }
  EXPECT_STREQ(nibble_zero_policy_name(NIBBLE_ZERO_COUNT), "");
  EXPECT_STREQ(nibble_nonfinite_policy_name(-1), "");
  EXPECT_STREQ(nibble_format_name(NIBBLE_FMT_COUNT), "");
  EXPECT_STREQ(nibble_scale_format_name(-1), "");
  EXPECT_STREQ(nibble_scale_mode_name(NIBBLE_SCALE_MODE_COUNT), "");
  EXPECT_STREQ(nibble_rounding_name(NIBBLE_ROUND_COUNT), "");
  EXPECT_STREQ(nibble_block_shape_name(NIBBLE_BLOCK_COUNT), "");
  std::printf("%d enum values\n", cases);
  EXPECT_EQ(cases, 19);
}

TEST(CApi, ElementDecodeAndEncodeEveryCode) {
  int cases = 0;
  for (Format f : kAllFormats) {
    for (uint8_t c = 0; c < 16; ++c) {
      float v = -1.0f;
      ASSERT_EQ(nibble_element_decode(as_int(f), c, &v), NIBBLE_OK) << nibble_last_error();
      EXPECT_TRUE(same_f32(v, decode_value(f, c))) << name(f) << " code 0x" << std::hex << int{c};
      uint32_t bits = 0;
      ASSERT_EQ(nibble_dpi_element_decode(as_int(f), c, &bits), NIBBLE_OK);
      EXPECT_EQ(bits, f32_bits(v));
      // Every decoded value encodes back to golden's code for it (INT4 -8 saturates to -7).
      uint8_t code = 0xFF;
      ASSERT_EQ(nibble_element_encode(as_int(f), v, NIBBLE_ROUND_NEAREST_EVEN, 0, 8, &code), NIBBLE_OK);
      EXPECT_EQ(code, convert_to_format(v, f, Rounding::kNearestEven)) << name(f) << " code 0x" << std::hex << int{c};
      cases += 3;
    }
  }
  std::printf("%d element cases\n", cases);
  EXPECT_EQ(cases, 3 * 16 * 3);
}

TEST(CApi, ElementEncodeRandomValuesRneAndSr) {
  std::mt19937_64 rng(test_seed());
  int cases = 0;
  for (Format f : kAllFormats) {
    for (int i = 0; i < 20000; ++i) {
      const float v = random_value(rng, false);
      const int sr_bits = 1 + static_cast<int>(rng() % 8);
      const uint32_t random = static_cast<uint32_t>(rng()) >> (32 - sr_bits);
      uint8_t rne = 0xFF, sr = 0xFF;
      ASSERT_EQ(nibble_element_encode(as_int(f), v, NIBBLE_ROUND_NEAREST_EVEN, 0, 0, &rne), NIBBLE_OK);
      ASSERT_EQ(nibble_element_encode(as_int(f), v, NIBBLE_ROUND_STOCHASTIC, random, sr_bits, &sr), NIBBLE_OK)
          << nibble_last_error();
      ASSERT_EQ(rne, convert_to_format(v, f, Rounding::kNearestEven)) << std::hex << f32_bits(v);
      ASSERT_EQ(sr, convert_to_format(v, f, Rounding::kStochastic, random, sr_bits)) << std::hex << f32_bits(v);
      int dpi = -1;
      ASSERT_EQ(nibble_dpi_element_encode(as_int(f), f32_bits(v), NIBBLE_ROUND_STOCHASTIC, static_cast<int>(random),
                                          sr_bits, &dpi),
                NIBBLE_OK);
      ASSERT_EQ(dpi, sr);
      cases += 3;
    }
  }
  std::printf("%d encode cases\n", cases);
  EXPECT_GT(cases, 0);
}

TEST(CApi, ScaleDecodeAndEncodeEveryCode) {
  int cases = 0;
  for (ScaleFormat f : {ScaleFormat::kE4M3, ScaleFormat::kUE8M0}) {
    for (uint32_t c = 0; c < 256; ++c) {
      float v = 0.0f;
      ASSERT_EQ(nibble_scale_decode(as_int(f), c, &v), NIBBLE_OK) << nibble_last_error();
      EXPECT_TRUE(same_f32(v, decode_scale(f, c))) << name(f) << " 0x" << std::hex << c;
      uint32_t back = 0;
      ASSERT_EQ(nibble_scale_encode(as_int(f), v, &back), NIBBLE_OK) << name(f) << " " << nibble_last_error();
      if (f == ScaleFormat::kE4M3) {
        EXPECT_EQ(back, encode_e4m3(v)) << "0x" << std::hex << c;
      } else {
        EXPECT_EQ(back, c) << "ue8m0 0x" << std::hex << c;  // every UE8M0 code is one power of two or NaN
      }
      cases += 2;
    }
  }
  std::mt19937_64 rng(test_seed());
  for (int i = 0; i < 20000; ++i) {
    const uint32_t bits = static_cast<uint32_t>(rng());
    const float x = f32_from_bits(bits);
    float v = 0.0f;
    uint32_t code = 0;
    ASSERT_EQ(nibble_scale_decode(NIBBLE_SCALE_FMT_FP32, bits, &v), NIBBLE_OK);
    EXPECT_TRUE(same_f32(v, decode_scale(ScaleFormat::kFP32, bits)));
    ASSERT_EQ(nibble_scale_encode(NIBBLE_SCALE_FMT_FP32, x, &code), NIBBLE_OK);
    EXPECT_EQ(code, bits);
    const float y = random_value(rng, true) * 64.0f;
    ASSERT_EQ(nibble_scale_encode(NIBBLE_SCALE_FMT_E4M3, y, &code), NIBBLE_OK);
    EXPECT_EQ(code, encode_e4m3(y)) << std::hex << f32_bits(y);
    cases += 3;
  }
  // A UE8M0 value that is no power of two has no code.
  uint32_t code = 0;
  EXPECT_EQ(nibble_scale_encode(NIBBLE_SCALE_FMT_UE8M0, 3.0f, &code), NIBBLE_ERR_INVALID_ARGUMENT);
  std::printf("%d scale cases\n", cases);
  EXPECT_GT(cases, 0);
}

TEST(CApi, TensorAndBlockScalesEveryModeAndFormat) {
  std::mt19937_64 rng(test_seed());
  int cases = 0;
  for (ScaleMode m : kAllScaleModes) {
    for (Format f : kAllFormats) {
      for (int i = 0; i < 2000; ++i) {
        const float amax_t = std::fabs(random_value(rng, false)) * 8.0f;
        const float amax = amax_t * static_cast<float>(rng() % 1000) / 1000.0f;
        float te = 0, td = 0;
        ASSERT_EQ(nibble_tensor_scale(as_int(m), as_int(f), amax_t, &te, &td), NIBBLE_OK) << nibble_last_error();
        const TensorScale t = tensor_scale(m, f, amax_t);
        ASSERT_TRUE(same_f32(te, t.encode) && same_f32(td, t.decode));
        uint32_t code = 0;
        float dec = 0, enc = 0;
        ASSERT_EQ(nibble_block_scale(as_int(m), as_int(f), amax, te, td, &code, &dec, &enc), NIBBLE_OK);
        const BlockScale s = block_scale(m, f, amax, t);
        ASSERT_EQ(code, s.code);
        ASSERT_TRUE(same_f32(dec, s.decode) && same_f32(enc, s.encode));
        cases += 2;
      }
      uint32_t code = 0;
      ASSERT_EQ(nibble_block_scale(as_int(m), as_int(f), INFINITY, 1.0f, 1.0f, &code, nullptr, nullptr), NIBBLE_OK);
      EXPECT_EQ(code, nan_block_scale(m).code);
      ++cases;
    }
  }
  std::printf("%d scale-rule cases\n", cases);
  EXPECT_GT(cases, 0);
}

// A C quantized tensor with its own buffers.
struct CTensor {
  nibble_quantized q{};
  std::vector<uint8_t> codes;
  std::vector<uint32_t> scales;

  CTensor(const nibble_quant_config& cfg, int64_t rows, int64_t cols) {
    size_t nc = 0, ns = 0;
    EXPECT_EQ(nibble_quantized_sizes(&cfg, rows, cols, &nc, &ns), NIBBLE_OK) << nibble_last_error();
    codes.assign(nc, 0xEE);
    scales.assign(ns, 0xEEEEEEEEu);
    q = nibble_quantized{cfg, rows, cols, codes.data(), nc, scales.data(), ns, 0.0f, 0.0f};
  }
};

nibble_quant_config c_config(const QuantConfig& g) {
  nibble_quant_config c;
  EXPECT_EQ(nibble_quant_config_init(&c), NIBBLE_OK);
  c.format = as_int(g.format);
  c.block_shape = as_int(g.block);
  c.scale_mode = as_int(g.scale);
  c.rounding = as_int(g.rounding);
  c.sr_bits = g.sr_bits;
  c.rht_size = g.rht.size;
  c.rht_round_bf16 = g.rht.round_bf16 ? 1 : 0;
  c.seed = g.seed;
  c.stream = g.stream;
  return c;
}

TEST(CApi, ConfigDefaultsAreGoldens) {
  nibble_quant_config c;
  ASSERT_EQ(nibble_quant_config_init(&c), NIBBLE_OK);
  const QuantConfig g;
  EXPECT_EQ(c.format, as_int(g.format));
  EXPECT_EQ(c.block_shape, as_int(g.block));
  EXPECT_EQ(c.scale_mode, as_int(g.scale));
  EXPECT_EQ(c.rounding, as_int(g.rounding));
  EXPECT_EQ(c.sr_bits, g.sr_bits);
  EXPECT_EQ(c.rht_size, g.rht.size);
  EXPECT_EQ(c.seed, g.seed);
}

TEST(CApi, QuantizeDequantizeEveryConfiguration) {
  std::mt19937_64 rng(test_seed());
  int configs = 0;
  size_t elements = 0;
  for (Format f : kAllFormats) {
    for (ScaleMode m : kAllScaleModes) {
      for (BlockShape b : kAllBlockShapes) {
        for (Rounding r : {Rounding::kNearestEven, Rounding::kStochastic}) {
          for (int rht : {0, 16, 32}) {
            QuantConfig g;
            g.format = f;
            g.scale = m;
            g.block = b;
            g.rounding = r;
            g.sr_bits = 1 + static_cast<int>(rng() % 8);
            g.rht.size = rht;
            g.rht.round_bf16 = rht != 0 && (rng() & 1);
            g.seed = rng();
            g.stream = static_cast<uint32_t>(rng() % 4);
            const int64_t rows = 1 + static_cast<int64_t>(rng() % 20);
            const int64_t cols = rht != 0 ? rht * (1 + static_cast<int64_t>(rng() % 3))
                                          : 1 + static_cast<int64_t>(rng() % 70);
            std::vector<float> x(static_cast<size_t>(rows * cols));
            for (float& v : x) v = random_value(rng, rht == 0);
            const QuantizedTensor want = quantize(x.data(), rows, cols, g);

            CTensor t(c_config(g), rows, cols);
            ASSERT_EQ(nibble_quantize(x.data(), &t.q), NIBBLE_OK) << nibble_last_error();
            ASSERT_EQ(t.codes, want.codes) << name(f) << " " << name(m) << " " << name(b) << " " << name(r);
            ASSERT_EQ(t.scales, want.scales);
            ASSERT_TRUE(same_f32(t.q.tensor_encode, want.tensor.encode));
            ASSERT_TRUE(same_f32(t.q.tensor_decode, want.tensor.decode));

            std::vector<float> deq(x.size());
            ASSERT_EQ(nibble_dequantize(&t.q, deq.data(), deq.size()), NIBBLE_OK) << nibble_last_error();
            const std::vector<float> want_deq = dequantize(want);
            for (size_t i = 0; i < deq.size(); ++i) ASSERT_TRUE(same_f32(deq[i], want_deq[i])) << i;

            // One block alone, as a one-block tensor (its own values: the tensor above
            // may hold fewer than a block's).
            const int64_t bh = block_rows(b), bw = block_cols(b);
            if (rht == 0 || bw % rht == 0) {
              std::vector<float> blk(static_cast<size_t>(bh * bw));
              for (float& v : blk) v = random_value(rng, rht == 0);
              const QuantizedTensor one = quantize(blk.data(), bh, bw, g);
              std::vector<uint8_t> codes(blk.size());
              uint32_t scale = 0;
              float te = 0, td = 0;
              const nibble_quant_config cc = c_config(g);
              ASSERT_EQ(nibble_quantize_block(&cc, blk.data(), blk.size(), codes.data(), &scale, &te, &td), NIBBLE_OK)
                  << nibble_last_error();
              ASSERT_EQ(codes, one.codes);
              ASSERT_EQ(scale, one.scales[0]);
              ASSERT_TRUE(same_f32(td, one.tensor.decode));
            }
            ++configs;
            elements += x.size();
          }
        }
      }
    }
  }
  std::printf("%d configurations, %zu elements\n", configs, elements);
  EXPECT_EQ(configs, 3 * 4 * 3 * 2 * 3);
}

nibble_quant_policy c_policy(const QuantPolicy& p) { return nibble_quant_policy{as_int(p.zero), as_int(p.nonfinite)}; }

TEST(CApi, PolicyDefaultsAreGoldens) {
  nibble_quant_policy p{7, 7};
  ASSERT_EQ(nibble_quant_policy_init(&p), NIBBLE_OK);
  const QuantPolicy g;
  EXPECT_EQ(p.zero, as_int(g.zero));
  EXPECT_EQ(p.nonfinite, as_int(g.nonfinite));
  EXPECT_EQ(nibble_golden_api_version(), 2);
}

// The policy entry points against golden under every policy pair, on tensors with zeros,
// tiny negatives, NaN and Inf; and the version-1 entry points equal the default policies.
TEST(CApi, QuantizeWithEveryPolicy) {
  std::mt19937_64 rng(test_seed());
  int configs = 0;
  size_t negative_zero_codes = 0, nan_tensor_scales = 0;
  for (Format f : kAllFormats) {
    for (ScaleMode m : kAllScaleModes) {
      for (BlockShape b : kAllBlockShapes) {
        for (ZeroPolicy z : kAllZeroPolicies) {
          for (NonFinitePolicy nf : kAllNonFinitePolicies) {
            QuantConfig g;
            g.format = f;
            g.scale = m;
            g.block = b;
            g.rounding = (rng() & 1) ? Rounding::kStochastic : Rounding::kNearestEven;
            g.sr_bits = 1 + static_cast<int>(rng() % 8);
            g.seed = rng();
            g.policy = QuantPolicy{z, nf};
            const int64_t rows = 1 + static_cast<int64_t>(rng() % 20);
            const int64_t cols = 1 + static_cast<int64_t>(rng() % 70);
            std::vector<float> x(static_cast<size_t>(rows * cols));
            for (float& v : x) v = random_value(rng, rng() % 3 == 0);
            const QuantizedTensor want = quantize(x.data(), rows, cols, g);
            const nibble_quant_policy policy = c_policy(g.policy);

            CTensor t(c_config(g), rows, cols);
            ASSERT_EQ(nibble_quantize_with_policy(x.data(), &t.q, &policy), NIBBLE_OK) << nibble_last_error();
            ASSERT_EQ(t.codes, want.codes) << name(f) << " " << name(m) << " " << name(b) << " " << name(z) << " "
                                           << name(nf);
            ASSERT_EQ(t.scales, want.scales);
            ASSERT_EQ(f32_bits(t.q.tensor_encode), f32_bits(want.tensor.encode));
            ASSERT_EQ(f32_bits(t.q.tensor_decode), f32_bits(want.tensor.decode));
            if (g.policy == QuantPolicy{}) {
              CTensor v1(c_config(g), rows, cols);
              ASSERT_EQ(nibble_quantize(x.data(), &v1.q), NIBBLE_OK);
              ASSERT_EQ(v1.codes, t.codes);
              ASSERT_EQ(v1.scales, t.scales);
            }
            if (f != Format::kInt4) {
              negative_zero_codes += static_cast<size_t>(std::count(t.codes.begin(), t.codes.end(), 0x8));
            }
            nan_tensor_scales += std::isnan(t.q.tensor_encode) ? 1u : 0u;

            const int64_t bh = block_rows(b), bw = block_cols(b);
            std::vector<float> blk(static_cast<size_t>(bh * bw));
            for (float& v : blk) v = random_value(rng, true);
            const QuantizedTensor one = quantize(blk.data(), bh, bw, g);
            std::vector<uint8_t> codes(blk.size());
            uint32_t scale = 0;
            float te = 0, td = 0;
            const nibble_quant_config cc = c_config(g);
            ASSERT_EQ(nibble_quantize_block_with_policy(&cc, &policy, blk.data(), blk.size(), codes.data(), &scale, &te,
                                                        &td),
                      NIBBLE_OK)
                << nibble_last_error();
            ASSERT_EQ(codes, one.codes);
            ASSERT_EQ(scale, one.scales[0]);
            ASSERT_EQ(f32_bits(td), f32_bits(one.tensor.decode));
            ++configs;
          }
        }
      }
    }
  }
  std::printf("%d configurations, %zu negative-zero codes, %zu NaN tensor scales\n", configs, negative_zero_codes,
              nan_tensor_scales);
  EXPECT_EQ(configs, 3 * 4 * 3 * 2 * 2);
  EXPECT_GT(negative_zero_codes, 0u);
  EXPECT_GT(nan_tensor_scales, 0u);
}

TEST(CApi, TensorAndBlockScalesWithPolicy) {
  int cases = 0;
  for (Format f : kAllFormats) {
    for (ScaleMode m : kAllScaleModes) {
      for (float amax : {0.0f, 1.0f, 3.0f, INFINITY, NAN}) {
        for (NonFinitePolicy p : kAllNonFinitePolicies) {
          float te = 0, td = 0;
          const int s = nibble_tensor_scale_with_policy(as_int(m), as_int(f), as_int(p), amax, &te, &td);
          if (p == NonFinitePolicy::kFinite && !f32_is_finite(amax)) {
            EXPECT_EQ(s, NIBBLE_ERR_INVALID_ARGUMENT);
          } else {
            ASSERT_EQ(s, NIBBLE_OK) << nibble_last_error();
            const TensorScale t = tensor_scale(m, f, amax);
            EXPECT_EQ(f32_bits(te), f32_bits(t.encode));
            EXPECT_EQ(f32_bits(td), f32_bits(t.decode));
          }
          uint32_t code = 0;
          float dec = 0, enc = 0;
          ASSERT_EQ(nibble_block_scale_with_policy(as_int(m), as_int(f), as_int(p), amax, 1.0f, 1.0f, &code, &dec, &enc),
                    NIBBLE_OK);
          const BlockScale want = block_scale(m, f, amax, TensorScale{}, p);
          EXPECT_EQ(code, want.code) << name(f) << " " << name(m) << " " << name(p) << " " << amax;
          EXPECT_EQ(f32_bits(dec), f32_bits(want.decode));
          EXPECT_EQ(f32_bits(enc), f32_bits(want.encode));
          if (p == NonFinitePolicy::kFinite) {
            uint32_t v1 = 0;
            ASSERT_EQ(nibble_block_scale(as_int(m), as_int(f), amax, 1.0f, 1.0f, &v1, nullptr, nullptr), NIBBLE_OK);
            EXPECT_EQ(v1, code);
          }
          ++cases;
        }
      }
    }
  }
  std::printf("%d policy scale cases\n", cases);
  EXPECT_EQ(cases, 3 * 4 * 5 * 2);
}

TEST(CApi, BlockDotDotRowsAndGemm) {
  std::mt19937_64 rng(test_seed());
  int cases = 0;
  for (int trial = 0; trial < 60; ++trial) {
    QuantConfig ga, gb;
    ga.format = kAllFormats[rng() % 3];
    gb.format = kAllFormats[rng() % 3];
    ga.scale = kAllScaleModes[rng() % 4];
    gb.scale = kAllScaleModes[rng() % 4];
    ga.block = kAllBlockShapes[rng() % 3];
    gb.block = kAllBlockShapes[rng() % 3];
    const int64_t m = 1 + static_cast<int64_t>(rng() % 9), n = 1 + static_cast<int64_t>(rng() % 9);
    const int64_t k = 1 + static_cast<int64_t>(rng() % 80);
    std::vector<float> xa(static_cast<size_t>(m * k)), xb(static_cast<size_t>(n * k));
    for (float& v : xa) v = random_value(rng, false);
    for (float& v : xb) v = random_value(rng, false);
    const QuantizedTensor a = quantize(xa.data(), m, k, ga), b = quantize(xb.data(), n, k, gb);
    CTensor ca(c_config(ga), m, k), cb(c_config(gb), n, k);
    ASSERT_EQ(nibble_quantize(xa.data(), &ca.q), NIBBLE_OK);
    ASSERT_EQ(nibble_quantize(xb.data(), &cb.q), NIBBLE_OK);

    std::vector<float> c(static_cast<size_t>(m * n));
    ASSERT_EQ(nibble_gemm(&ca.q, &cb.q, c.data(), c.size()), NIBBLE_OK) << nibble_last_error();
    const std::vector<float> want = gemm(a, b);
    for (size_t i = 0; i < c.size(); ++i) ASSERT_TRUE(same_f32(c[i], want[i])) << "trial " << trial << " i " << i;
    float d = 0;
    ASSERT_EQ(nibble_dot_rows(&ca.q, m - 1, &cb.q, n - 1, &d), NIBBLE_OK);
    ASSERT_TRUE(same_f32(d, dot_rows(a, m - 1, b, n - 1)));
    cases += static_cast<int>(c.size()) + 1;

    // Row 0 rebuilt block by block with nibble_block_dot equals dot_rows before the tensor scales.
    const int64_t step = std::min(block_cols(ga.block), block_cols(gb.block));
    float acc = 0.0f, want_acc = 0.0f;
    for (int64_t k0 = 0; k0 < k; k0 += step) {
      const size_t len = static_cast<size_t>(std::min(step, k - k0));
      const ScaleFormat sfa = scale_format(ga.scale), sfb = scale_format(gb.scale);
      ASSERT_EQ(nibble_block_dot(as_int(ga.format), as_int(sfa), &a.codes[static_cast<size_t>(k0)],
                                 a.scale_code_at(0, k0), as_int(gb.format), as_int(sfb),
                                 &b.codes[static_cast<size_t>(k0)], b.scale_code_at(0, k0), len, acc, &acc),
                NIBBLE_OK)
          << nibble_last_error();
      const int32_t p = block_partial_sum(&a.codes[static_cast<size_t>(k0)], ga.format,
                                          &b.codes[static_cast<size_t>(k0)], gb.format, len);
      want_acc = accumulate(want_acc, block_product(p, ga.format, gb.format, decode_scale(sfa, a.scale_code_at(0, k0)),
                                                    decode_scale(sfb, b.scale_code_at(0, k0))));
      ASSERT_TRUE(same_f32(acc, want_acc));
      ++cases;
    }
    EXPECT_TRUE(same_f32(apply_tensor_scales(acc, a.tensor.decode, b.tensor.decode), dot_rows(a, 0, b, 0)));
  }
  std::printf("%d dot cases\n", cases);
  EXPECT_GT(cases, 0);
}

TEST(CApi, DpiEntryPointsMatchGolden) {
  std::mt19937_64 rng(test_seed());
  int cases = 0;
  for (int i = 0; i < 3000; ++i) {
    QuantConfig g;
    g.format = kAllFormats[rng() % 3];
    g.scale = kAllScaleModes[rng() % 4];
    g.rounding = (rng() & 1) ? Rounding::kStochastic : Rounding::kNearestEven;
    g.sr_bits = 1 + static_cast<int>(rng() % 8);
    g.seed = rng();
    g.stream = static_cast<uint32_t>(rng());
    uint32_t x_bits[16];
    float x[16];
    for (int j = 0; j < 16; ++j) {
      x[j] = random_value(rng, true);
      x_bits[j] = f32_bits(x[j]);
    }
    // Half the cases through the version-1 entry point (the default policies), half with a policy.
    const bool v1 = (i & 1) == 0;
    if (!v1) g.policy = QuantPolicy{kAllZeroPolicies[rng() % 2], kAllNonFinitePolicies[rng() % 2]};
    const QuantizedTensor want = quantize(x, 1, 16, g);
    uint32_t codes[2] = {0, 0}, scale = 0, te = 0, td = 0, random[4] = {0, 0, 0, 0};
    if (v1) {
      ASSERT_EQ(nibble_dpi_quantize_block16(as_int(g.format), as_int(g.scale), as_int(g.rounding), g.sr_bits, g.seed,
                                            g.stream, x_bits, codes, &scale, &te, &td),
                NIBBLE_OK)
          << nibble_last_error();
    } else {
      ASSERT_EQ(nibble_dpi_quantize_block16_with_policy(as_int(g.format), as_int(g.scale), as_int(g.rounding),
                                                        g.sr_bits, as_int(g.policy.zero), as_int(g.policy.nonfinite),
                                                        g.seed, g.stream, x_bits, codes, &scale, &te, &td),
                NIBBLE_OK)
          << nibble_last_error();
    }
    for (int j = 0; j < 16; ++j) ASSERT_EQ((codes[j / 8] >> (4 * (j % 8))) & 0xFu, want.codes[static_cast<size_t>(j)]);
    ASSERT_EQ(scale, want.scales[0]);
    ASSERT_EQ(te, f32_bits(want.tensor.encode));
    ASSERT_EQ(td, f32_bits(want.tensor.decode));
    ASSERT_EQ(nibble_dpi_sr_random16(g.seed, g.stream, g.sr_bits, random), NIBBLE_OK);
    const PhiloxWords w = philox4x32_10(g.seed, 0, g.stream, PhiloxDomain::kStochasticRounding);
    for (int j = 0; j < 16; ++j) ASSERT_EQ((random[j / 4] >> (8 * (j % 4))) & 0xFFu, sr_lane_bits(w, j, g.sr_bits));

    // The block dot of the quantized block with itself, one DPI step from a random accumulator.
    const ScaleFormat sf = scale_format(g.scale);
    const float acc_in = random_value(rng, false);
    uint32_t acc_out = 0;
    ASSERT_EQ(nibble_dpi_block_dot16(as_int(g.format), as_int(sf), codes, scale, as_int(g.format), as_int(sf), codes,
                                     scale, f32_bits(acc_in), &acc_out),
              NIBBLE_OK);
    const int32_t p = block_partial_sum(want.codes.data(), g.format, want.codes.data(), g.format, 16);
    const float s = decode_scale(sf, scale);
    ASSERT_TRUE(same_f32(f32_from_bits(acc_out), accumulate(acc_in, block_product(p, g.format, g.format, s, s))));
    cases += 3;
  }
  std::printf("%d DPI cases\n", cases);
  EXPECT_GT(cases, 0);
}

TEST(CApi, LastErrorIsPerThread) {
  std::string failed_msg, ok_msg;
  std::thread a([&] {
    float v = 0;
    EXPECT_EQ(nibble_element_decode(7, 0, &v), NIBBLE_ERR_INVALID_ENUM);
    failed_msg = nibble_last_error();
  });
  a.join();
  float v = 0;
  EXPECT_EQ(nibble_element_decode(NIBBLE_FMT_E2M1, 1, &v), NIBBLE_OK);
  ok_msg = nibble_last_error();
  std::thread b([&] {
    // A fresh thread has no message of its own, whatever other threads did.
    EXPECT_STREQ(nibble_last_error(), "");
  });
  b.join();
  EXPECT_NE(failed_msg.find("element format 7"), std::string::npos) << failed_msg;
  EXPECT_EQ(ok_msg, "");
  char buf[8];
  EXPECT_EQ(nibble_element_decode(NIBBLE_FMT_E2M1, 16, &v), NIBBLE_ERR_INVALID_ARGUMENT);
  const size_t n = nibble_last_error_copy(buf, sizeof buf);
  EXPECT_EQ(n, std::string(nibble_last_error()).size());
  EXPECT_EQ(std::string(buf), std::string(nibble_last_error()).substr(0, 7));
}

}  // namespace
}  // namespace nibble
