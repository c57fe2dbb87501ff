// E1M2 and INT4 are the same uniform grid {0, 1, ..., 7} in units of 1/4 and
// of 1. Under fp32 scales the INT4 decode scale is exactly a quarter of E1M2's
// (fl(a/7) = fl(a/1.75)/4 away from subnormals), so the two quantizers see the
// same scaled values in units and must dequantize to the same bits -- for every
// block shape, rounding and RHT setting, partial blocks included.
#include <gtest/gtest.h>

#include <cstdio>

#include "nibble/analysis/synthetic.h"
#include "nibble/fp32.h"
#include "nibble/quantize.h"

namespace nibble::analysis {
namespace {

TEST(UniformGrids, E1M2AndInt4DequantizeToIdenticalBitsUnderFp32Scales) {
  const int64_t rows = 40, cols = 80;  // partial blocks for 1x32 and 16x16
  int64_t checked = 0;
  for (uint64_t seed : {1ull, 2ull, 3ull, 0xfeedull}) {
    std::printf("seed %llu\n", static_cast<unsigned long long>(seed));
    for (Distribution d : kAllDistributions) {
      const std::vector<float> x = synthetic_tensor(d, rows, cols, seed);
      for (BlockShape b : kAllBlockShapes) {
        for (Rounding r : {Rounding::kNearestEven, Rounding::kStochastic}) {
          for (int sr_bits : {8, 3}) {
            if (r == Rounding::kNearestEven && sr_bits != 8) continue;
            for (int rht : {0, 16}) {
              QuantConfig cfg;
              cfg.scale = ScaleMode::kFP32;
              cfg.block = b;
              cfg.rounding = r;
              cfg.sr_bits = sr_bits;
              cfg.rht.size = rht;
              cfg.seed = seed;
              cfg.format = Format::kE1M2;
              const std::vector<float> e1m2 = dequantize(quantize(x.data(), rows, cols, cfg));
              cfg.format = Format::kInt4;
              const std::vector<float> int4 = dequantize(quantize(x.data(), rows, cols, cfg));
              ASSERT_EQ(e1m2.size(), int4.size());
              for (size_t i = 0; i < e1m2.size(); ++i) {
                ASSERT_EQ(f32_bits(e1m2[i]), f32_bits(int4[i]))
                    << std::hex << "e1m2 0x" << f32_bits(e1m2[i]) << " int4 0x" << f32_bits(int4[i]) << std::dec
                    << " at element " << i << ": " << name(d) << " " << name(b) << " " << name(r) << " sr_bits "
                    << sr_bits << " rht " << rht << " seed " << seed;
                ++checked;
              }
            }
          }
        }
      }
    }
  }
  EXPECT_GT(checked, 0);
}

}  // namespace
}  // namespace nibble::analysis
