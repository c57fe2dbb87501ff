// The throw-away format of docs/adding-a-format.md: built only with
// -DNIBBLE_PROBE_FORMAT=ON, against a copy of golden whose format table has
// one more row (E3M0: 3 exponent bits, no mantissa, bias 3) and whose Format
// enum one more value, nothing else edited. Every layer below derives its lists
// from that table: golden's decode, encode, quantizer and boundary vectors, the
// kernels' register arithmetic (quant_math.h, compiled for the host) and the
// format sets the lint, synthesis and CLI flows build.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <random>
#include <sstream>
#include <string>

#include "nibble/cuda/quant_math.h"
#include "nibble/format_sets.h"
#include "nibble/quantize.h"
#include "nibble/vectors.h"

namespace nibble {
namespace {

namespace math = cuda::math;
constexpr Format kProbe = Format::kE3M0;

TEST(ProbeFormat, TheTableRowIsAllGoldenNeeds) {
  ASSERT_EQ(kAllFormats.size(), 4u);
  EXPECT_EQ(format_names(","), "e2m1,e1m2,int4,e3m0");
  EXPECT_EQ(parse_format("e3m0"), kProbe);
  EXPECT_EQ(max_value(kProbe), 16.0f);  // 2^(7 - 3) at exponent field 7
  int checked = 0;
  for (uint8_t c = 0; c < 16; ++c) {
    const Decoded d = decode(kProbe, c);
    EXPECT_EQ(encode(kProbe, d.neg, d.units), c) << int(c);
    const math::GridValue g = math::decode_code(math::format_facts(kProbe), c);
    EXPECT_TRUE(g.neg == d.neg && g.units == d.units) << int(c);
    ++checked;
  }
  EXPECT_EQ(checked, 16);
}

TEST(ProbeFormat, KernelRoundingMatchesGolden) {
  const uint64_t seed = 7;
  std::printf("seed %llu\n", static_cast<unsigned long long>(seed));
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> normal(0.0f, 3.0f);
  size_t cases = 0;
  for (int t = 0; t < 20000; ++t) {
    float x[16];
    for (float& v : x) v = normal(rng);
    const float encode = std::ldexp(1.0f, static_cast<int>(rng() % 8) - 2);
    uint32_t words[4];
    for (uint32_t& w : words) w = static_cast<uint32_t>(rng());
    uint32_t random[16];
    for (int j = 0; j < 16; ++j) random[j] = (words[j / 4] >> (8 * (j % 4))) & 0xFFu;
    for (bool sr : {false, true}) {
      uint8_t want[16];
      quantize_block_elements(x, 16, encode, kProbe, sr ? Rounding::kStochastic : Rounding::kNearestEven, random, 8,
                              ZeroPolicy::kPositive, want);
      const math::PackedGroup got = sr ? math::group_codes<kProbe, true>(x, encode, words, math::sr_keep_mask(8))
                                       : math::group_codes<kProbe, false>(x, encode, words, math::sr_keep_mask(8));
      for (int j = 0; j < 16; ++j) {
        const uint32_t code = ((j < 8 ? got.lo : got.hi) >> (4 * (j % 8))) & 0xFu;
        ASSERT_EQ(code, want[j]) << "x " << x[j] << " encode " << encode << (sr ? " SR" : " RNE");
        ++cases;
      }
    }
  }
  EXPECT_EQ(cases, 20000u * 2u * 16u);
}

TEST(ProbeFormat, QuantizerVectorsAndFormatSetsPickItUp) {
  std::mt19937_64 rng(11);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> x(32 * 64);
  for (float& v : x) v = normal(rng);
  for (ScaleMode m : kAllScaleModes) {
    QuantConfig cfg;
    cfg.format = kProbe;
    cfg.scale = m;
    const std::vector<float> y = dequantize(quantize(x.data(), 32, 64, cfg));
    double err = 0;
    for (size_t i = 0; i < x.size(); ++i) err += (x[i] - y[i]) * (x[i] - y[i]);
    EXPECT_LT(std::sqrt(err / static_cast<double>(x.size())), 0.5) << name(m);
  }
  size_t naming = 0;
  for (const vectors::Vector& v : vectors::boundary_table(vectors::GenerateOptions{})) {
    std::ostringstream line;
    vectors::write_vector(line, v);
    naming += line.str().find("e3m0") != std::string::npos;
  }
  EXPECT_GT(naming, 0u) << "the boundary tables cover every listed format";
  EXPECT_EQ(kAllFormatsMask, 15u);
  EXPECT_EQ(sv_format_mask(kAllFormatsMask), "4'b1111");
  EXPECT_EQ(format_set_name(minifloat_mask()), "e2m1+e1m2+e3m0");
  EXPECT_EQ(format_set_label(format_bit(kProbe)), "E3M0-only");
}

}  // namespace
}  // namespace nibble
