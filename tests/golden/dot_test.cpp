// The block-scaled dot product contract.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <stdexcept>
#include <random>
#include <vector>

#include "nibble/dot.h"
#include "nibble/fp32.h"

namespace nibble {
namespace {

TEST(BlockPartialSum, IsTheExactSumOfCodeProducts) {
  const uint64_t seed = 3;
  SCOPED_TRACE("seed 3");
  std::mt19937 rng(seed);
  int checked = 0;
  for (Format fa : kAllFormats) {
    for (Format fb : kAllFormats) {
      for (int t = 0; t < 500; ++t) {
        uint8_t a[32], b[32];
        double want = 0;
        for (int i = 0; i < 32; ++i) {
          a[i] = static_cast<uint8_t>(rng() & 0xF);
          b[i] = static_cast<uint8_t>(rng() & 0xF);
          want += double(decode_value(fa, a[i])) * double(decode_value(fb, b[i]));
        }
        const int32_t p = block_partial_sum(a, fa, b, fb, 32);
        ASSERT_EQ(std::ldexp(double(p), lsb_exp(fa) + lsb_exp(fb)), want);
        ++checked;
      }
    }
  }
  EXPECT_EQ(checked, 9 * 500);
}

TEST(BlockPartialSum, ExtremesFitInFourteenBits) {
  uint8_t a[32], b[32];
  for (int i = 0; i < 32; ++i) a[i] = b[i] = 0x7;  // E2M1 6 * 6
  EXPECT_EQ(block_partial_sum(a, Format::kE2M1, b, Format::kE2M1, 32), 32 * 144);
  for (int i = 0; i < 32; ++i) a[i] = b[i] = 0x8;  // INT4 -8 * -8
  EXPECT_EQ(block_partial_sum(a, Format::kInt4, b, Format::kInt4, 32), 32 * 64);
}

TEST(DecodeUnits, EqualsDecodeOnEveryCodeOfEveryFormat) {
  int checked = 0;
  for (Format f : kAllFormats) {
    uint8_t codes[256];
    for (int c = 0; c < 256; ++c) codes[c] = static_cast<uint8_t>(c);  // the high nibble is ignored, as by decode
    int8_t units[256];
    decode_units(f, codes, 256, units);
    for (int c = 0; c < 256; ++c) {
      ASSERT_EQ(units[c], decode(f, codes[c]).signed_units()) << name(f) << " code 0x" << std::hex << c;
      ++checked;
    }
  }
  EXPECT_EQ(checked, 3 * 256);
}

// block_partial_sums over decoded units against block_partial_sum over the codes:
// every pair of codes of every format pair as a one-element block (exhaustive),
// then seeded random rows of every length up to 100 in blocks of 16, 32 and odd
// widths, with a partial last block wherever k is not a multiple.
TEST(BlockPartialSums, EqualBlockPartialSumOnTheCodes) {
  uint64_t checked = 0;
  for (Format fa : kAllFormats) {
    for (Format fb : kAllFormats) {
      for (int ca = 0; ca < 16; ++ca) {
        for (int cb = 0; cb < 16; ++cb) {
          const uint8_t a = static_cast<uint8_t>(ca), b = static_cast<uint8_t>(cb);
          int8_t ua, ub;
          decode_units(fa, &a, 1, &ua);
          decode_units(fb, &b, 1, &ub);
          int32_t p = 0;
          block_partial_sums(&ua, &ub, 1, 16, &p);
          ASSERT_EQ(p, block_partial_sum(&a, fa, &b, fb, 1)) << name(fa) << "*" << name(fb) << " 0x" << std::hex << ca
                                                              << " 0x" << cb;
          ++checked;
        }
      }
    }
  }
  EXPECT_EQ(checked, 9u * 256u);

  const uint64_t seed = 0xb10c;
  std::printf("BlockPartialSums seed 0x%llx\n", static_cast<unsigned long long>(seed));
  std::mt19937_64 rng(seed);
  uint64_t blocks = 0;
  for (Format fa : kAllFormats) {
    for (Format fb : kAllFormats) {
      for (size_t step : {size_t{16}, size_t{32}, size_t{1}, size_t{7}}) {
        for (size_t k = 1; k <= 100; ++k) {
          std::vector<uint8_t> a(k), b(k);
          for (size_t i = 0; i < k; ++i) {
            a[i] = static_cast<uint8_t>(rng() & 0xF);
            b[i] = static_cast<uint8_t>(rng() & 0xF);
          }
          if (k % 5 == 0) std::fill(a.begin(), a.end(), uint8_t{0x7});  // the largest products
          std::vector<int8_t> ua(k), ub(k);
          decode_units(fa, a.data(), k, ua.data());
          decode_units(fb, b.data(), k, ub.data());
          const size_t nb = (k + step - 1) / step;
          std::vector<int32_t> p(nb, -1);
          block_partial_sums(ua.data(), ub.data(), k, step, p.data());
          for (size_t j = 0; j < nb; ++j) {
            const size_t len = std::min(step, k - j * step);
            ASSERT_EQ(p[j], block_partial_sum(&a[j * step], fa, &b[j * step], fb, len))
                << name(fa) << "*" << name(fb) << " k " << k << " step " << step << " block " << j;
            ++blocks;
          }
        }
      }
    }
  }
  EXPECT_GT(blocks, 9u * 4u * 100u);
  EXPECT_THROW(block_partial_sums(nullptr, nullptr, 1, 0, nullptr), std::invalid_argument);
}

TEST(BlockProduct, RoundsOnceAndPropagatesNaN) {
  // E4M3-valued scales: exact.
  EXPECT_EQ(block_product(7, Format::kE2M1, Format::kE2M1, 448.0f, 0.5f), 7 * 0.25f * 224.0f);
  // FP32 scales: P * s rounded once, not P * sa then * sb.
  const float sa = 1.0f / 3.0f, sb = 3.0f;
  const float s = sa * sb;
  EXPECT_EQ(block_product(3, Format::kInt4, Format::kInt4, sa, sb), 3.0f * s);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  EXPECT_TRUE(std::isnan(block_product(5, Format::kInt4, Format::kInt4, nan, 1.0f)));
  EXPECT_TRUE(std::isnan(block_product(0, Format::kInt4, Format::kInt4, std::numeric_limits<float>::infinity(), 1.0f)));
  // 0 * Inf and Inf - Inf give the canonical NaN, whatever the host FPU makes of them.
  const float big = std::numeric_limits<float>::max();
  EXPECT_EQ(f32_bits(block_product(0, Format::kE2M1, Format::kE2M1, big, big)), kCanonicalNaN);
  EXPECT_EQ(f32_bits(accumulate(std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity())),
            kCanonicalNaN);
  // Subnormal results are kept, not flushed.
  EXPECT_EQ(block_product(1, Format::kInt4, Format::kInt4, std::ldexp(1.0f, -140), std::ldexp(1.0f, -8)),
            std::ldexp(1.0f, -148));
  // A 13-bit sum times a 24-bit scale significand: one rounding of the exact product.
  const float odd = f32_from_bits(0x3F800001u);  // 1 + 2^-23
  EXPECT_EQ(f32_bits(block_product(4095, Format::kInt4, Format::kInt4, odd, 1.0f)),
            f32_bits(round_to_f32(false, 4095ull * 0x800001ull, -23)));
}

TEST(DotRows, AccumulatesBlocksInIncreasingKOrder) {
  // Three 16-element blocks whose products are 2^25, -2^25 and 1 (in this order):
  // ((0 + 2^25) - 2^25) + 1 = 1, whereas any other order loses the 1.
  std::vector<float> a(48, 0.0f), b(48, 0.0f);
  a[0] = 1.0f; b[0] = std::ldexp(1.0f, 25);
  a[16] = -1.0f; b[16] = std::ldexp(1.0f, 25);
  a[32] = 1.0f; b[32] = 1.0f;
  QuantConfig cfg;
  cfg.format = Format::kInt4;
  cfg.scale = ScaleMode::kMXCeil;  // power-of-two scales: each r_b is exact
  const QuantizedTensor qa = quantize(a.data(), 1, 48, cfg);
  const QuantizedTensor qb = quantize(b.data(), 1, 48, cfg);
  EXPECT_EQ(dot_rows(qa, 0, qb, 0), 1.0f);
}

TEST(Gemm, MatchesDequantizedProductWhenEverythingIsExact) {
  // Power-of-two scales and short rows: every step is exact, so the gemm
  // equals the double-precision product of the dequantized operands.
  const uint64_t seed = 17;
  SCOPED_TRACE("seed 17");
  std::mt19937 rng(seed);
  std::normal_distribution<float> gauss;
  std::vector<float> a(8 * 64), b(5 * 64);
  for (float& v : a) v = gauss(rng);
  for (float& v : b) v = gauss(rng);
  int checked = 0;
  for (Format fa : kAllFormats) {
    for (Format fb : kAllFormats) {
      QuantConfig ca, cb;
      ca.format = fa;
      cb.format = fb;
      ca.scale = cb.scale = ScaleMode::kMXCeil;
      cb.block = BlockShape::k1x32;  // mixed block widths
      const QuantizedTensor qa = quantize(a.data(), 8, 64, ca);
      const QuantizedTensor qb = quantize(b.data(), 5, 64, cb);
      const std::vector<float> c = gemm(qa, qb);
      const std::vector<float> da = dequantize(qa), db = dequantize(qb);
      for (int m = 0; m < 8; ++m) {
        for (int n = 0; n < 5; ++n) {
          double want = 0;
          for (int k = 0; k < 64; ++k) want += double(da[static_cast<size_t>(m * 64 + k)]) * db[static_cast<size_t>(n * 64 + k)];
          ASSERT_EQ(double(c[static_cast<size_t>(m * 5 + n)]), want) << name(fa) << "x" << name(fb);
          ++checked;
        }
      }
    }
  }
  EXPECT_EQ(checked, 9 * 40);
}

TEST(Gemm, NanBlocksPoisonOnlyTheirOutputs) {
  std::vector<float> a(2 * 32, 1.0f), b(3 * 32, 1.0f);
  a[40] = std::numeric_limits<float>::quiet_NaN();  // row 1
  const QuantizedTensor qa = quantize(a.data(), 2, 32, QuantConfig{});
  const QuantizedTensor qb = quantize(b.data(), 3, 32, QuantConfig{});
  const std::vector<float> c = gemm(qa, qb);
  for (int n = 0; n < 3; ++n) {
    EXPECT_FALSE(std::isnan(c[static_cast<size_t>(n)]));
    EXPECT_TRUE(std::isnan(c[static_cast<size_t>(3 + n)]));
  }
}

TEST(Gemm, RejectsMismatchedOperands) {
  std::vector<float> a(64, 1.0f);
  const QuantizedTensor q32 = quantize(a.data(), 2, 32, QuantConfig{});
  const QuantizedTensor q16 = quantize(a.data(), 4, 16, QuantConfig{});
  EXPECT_THROW(gemm(q32, q16), std::invalid_argument);
  QuantConfig rot;
  rot.rht.size = 16;
  const QuantizedTensor r = quantize(a.data(), 2, 32, rot);
  EXPECT_THROW(gemm(q32, r), std::invalid_argument);
  rot.seed = 9;
  EXPECT_THROW(gemm(quantize(a.data(), 2, 32, rot), r), std::invalid_argument);
  // The same condition on its own, naming the operation.
  try {
    check_dot_operands(q32, q16, "dot_rows");
    ADD_FAILURE() << "check_dot_operands accepted 32 vs 16 columns";
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "dot_rows: contraction lengths differ (32 vs 16)");
  }
  EXPECT_NO_THROW(check_dot_operands(q32, q32, "dot_rows"));
  EXPECT_THROW(check_dot_operands(q32, r, "dot_rows"), std::invalid_argument);
}

}  // namespace
}  // namespace nibble
