// The event-skipping model (sim/include/nibble/sim/event_device.h) and the bulk
// GEMM (bulk_gemm.h), where no Verilated tile is needed: the event model against
// the SystemC model on shapes and latencies the RTL was not built for, with and
// without seeded bubbles and stalls (every cycle and stall count equal, C
// bit-identical); bulk_gemm bit-exact against golden::gemm over every format
// pair, scale mode and block shape; the documented cycle formulas on many tiles;
// timing only; refusals. Seeds are printed (NIBBLE_MODEL_SEED overrides).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>
#include <stdexcept>
#include <vector>

#include "nibble/dot.h"
#include "nibble/fp32.h"
#include "nibble/model/config.h"
#include "nibble/quantize.h"
#include "nibble/sim/bulk_gemm.h"
#include "nibble/sim/device.h"
#include "nibble/sim/event_device.h"
#include "nibble/sim/systemc_device.h"

#include "model_test_util.h"

namespace nibble::sim {
namespace {

using model_test::random_operand;
using model_test::test_seed;

TEST(EventModel, CycleExactWithTheSystemCModelOnOtherShapesAndLatencies) {
  const uint64_t seed = test_seed();
  std::mt19937_64 rng(seed + 3);
  struct Shape {
    int rows, cols, lanes;
  };
  const std::vector<Shape> shapes = {{1, 1, 16}, {3, 5, 16}, {16, 2, 16}, {8, 2, 32}, {2, 7, 32}};
  uint64_t cases = 0, stalled = 0, held_by_output = 0;
  for (const Shape& sh : shapes) {
    for (const int latency : {1, 4, 9}) {
      for (int i = 0; i < 4; ++i) {
        model::TileConfig cfg;
        cfg.rows = sh.rows;
        cfg.cols = sh.cols;
        cfg.lanes = sh.lanes;
        cfg.latency = latency;
        cfg.bandwidth = i == 0 ? 1e9 : 4.0 + static_cast<double>(rng() % 60);
        const Format fa = kAllFormats[rng() % 3], fb = kAllFormats[rng() % 3];
        const ScaleMode sm = kAllScaleModes[rng() % 4];
        const BlockShape blk = sh.lanes == 32 && rng() % 2 ? BlockShape::k1x32 : BlockShape::k1x16;
        const int64_t m = 1 + static_cast<int64_t>(rng() % static_cast<uint64_t>(3 * sh.rows + 2));
        const int64_t n = 1 + static_cast<int64_t>(rng() % static_cast<uint64_t>(3 * sh.cols + 2));
        const int64_t k = 1 + static_cast<int64_t>(rng() % static_cast<uint64_t>(6 * sh.lanes));
        const QuantizedTensor a = random_operand(rng, m, k, fa, sm, blk, rng() % 4 == 0);
        const QuantizedTensor b = random_operand(rng, n, k, fb, sm, blk, false);
        StallConfig st;
        st.seed = rng();
        if (i % 3 != 0) {
          st.input = 0.1 * static_cast<double>(rng() % 6);
          st.output = 0.1 * static_cast<double>(1 + rng() % 6);
          ++stalled;
        }
        SCOPED_TRACE(testing::Message() << "array " << sh.rows << "x" << sh.cols << "x" << sh.lanes << " latency "
                                        << latency << " gemm " << m << "x" << n << "x" << k << " " << name(fa) << "*"
                                        << name(fb) << " " << name(sm) << " bandwidth " << cfg.bandwidth
                                        << " stalls in " << st.input << " out " << st.output << " stall seed 0x"
                                        << std::hex << st.seed);
        const GemmResult want = SystemCDevice(cfg, st).run(a, b);
        const GemmResult got = EventDevice(cfg, st).run(a, b);
        const GemmResult timing = EventDevice(cfg, st, EventDevice::Values::kNone).run(a, b);
        ASSERT_TRUE(want.stats && got.stats && timing.stats);
        for (const GemmStats* s : {&*got.stats, &*timing.stats}) {
          EXPECT_EQ(s->cycles, want.stats->cycles);
          EXPECT_EQ(s->beats, want.stats->beats);
          EXPECT_EQ(s->tiles, want.stats->tiles);
          EXPECT_EQ(s->stall_operand, want.stats->stall_operand);
          EXPECT_EQ(s->stall_output, want.stats->stall_output);
          EXPECT_EQ(s->stall_pipeline, want.stats->stall_pipeline);
          EXPECT_EQ(s->operand_bytes, want.stats->operand_bytes);
          EXPECT_EQ(s->macs, want.stats->macs);
          EXPECT_EQ(s->peak_macs_per_cycle, want.stats->peak_macs_per_cycle);
        }
        ASSERT_EQ(got.c.size(), want.c.size());
        for (size_t j = 0; j < got.c.size(); ++j) {
          ASSERT_EQ(f32_bits(got.c[j]), f32_bits(want.c[j])) << "C element " << j;
        }
        EXPECT_TRUE(timing.c.empty());
        if (HasFailure()) return;
        held_by_output += got.stats->stall_output;
        ++cases;
      }
    }
  }
  std::printf("event model vs SystemC model: %llu GEMMs (%llu with bubbles/stalls), cycles and stalls identical\n",
              static_cast<unsigned long long>(cases), static_cast<unsigned long long>(stalled));
  EXPECT_EQ(cases, shapes.size() * 3 * 4);
  EXPECT_GT(held_by_output, 0u) << "no case held a last beat back behind output stalls";
}

TEST(BulkGemm, BitExactWithGoldenEveryFormatPairScaleModeAndBlock) {
  const uint64_t seed = test_seed();
  std::mt19937_64 rng(seed + 4);
  uint64_t cases = 0, elements = 0, nonzero = 0;
  for (Format fa : kAllFormats) {
    for (Format fb : kAllFormats) {
      for (ScaleMode sm : kAllScaleModes) {
        for (BlockShape ba : kAllBlockShapes) {
          const BlockShape bb = kAllBlockShapes[rng() % kAllBlockShapes.size()];
          const int64_t m = 1 + static_cast<int64_t>(rng() % 20);
          const int64_t n = 1 + static_cast<int64_t>(rng() % 20);
          const int64_t k = 1 + static_cast<int64_t>(rng() % 150);
          const QuantizedTensor a = random_operand(rng, m, k, fa, sm, ba, rng() % 3 == 0);
          const QuantizedTensor b = random_operand(rng, n, k, fb, sm, bb, rng() % 5 == 0);
          SCOPED_TRACE(testing::Message() << "gemm " << m << "x" << n << "x" << k << " " << name(fa) << "*"
                                          << name(fb) << " " << name(sm) << " blocks " << name(ba) << "/" << name(bb));
          const std::vector<float> want = gemm(a, b);
          const std::vector<float> got = bulk_gemm(a, b);
          ASSERT_EQ(got.size(), want.size());
          for (size_t i = 0; i < got.size(); ++i) {
            ASSERT_EQ(f32_bits(got[i]), f32_bits(want[i])) << "C element " << i;
            nonzero += got[i] != 0.0f;
          }
          elements += got.size();
          ++cases;
        }
      }
    }
  }
  std::printf("bulk GEMM vs golden: %llu GEMMs, %llu elements bit-exact\n", static_cast<unsigned long long>(cases),
              static_cast<unsigned long long>(elements));
  EXPECT_EQ(cases, 9u * 4u * kAllBlockShapes.size());
  EXPECT_GT(nonzero, elements / 2) << "the data is mostly zero";
  std::mt19937_64 r2(1);
  const QuantizedTensor a = random_operand(r2, 2, 32, Format::kE2M1, ScaleMode::kNVFP4, BlockShape::k1x16, false);
  const QuantizedTensor b = random_operand(r2, 2, 48, Format::kE2M1, ScaleMode::kNVFP4, BlockShape::k1x16, false);
  EXPECT_THROW(bulk_gemm(a, b), std::invalid_argument);
}

// The closed forms of systemc_device.h on many tiles, timing only.
TEST(EventModel, FollowsTheCycleFormulasOnManyTiles) {
  std::mt19937_64 rng(6);
  int cases = 0;
  for (const int latency : {1, 4, 12}) {
    model::TileConfig cfg;  // 4x4x16
    cfg.latency = latency;
    const uint64_t L = static_cast<uint64_t>(latency), R = static_cast<uint64_t>(cfg.rows);
    for (const uint64_t nk : {1u, 3u, 8u, 17u}) {
      const int64_t k = static_cast<int64_t>(nk) * 16;
      const QuantizedTensor a = random_operand(rng, 40, k, Format::kE2M1, ScaleMode::kNVFP4, BlockShape::k1x16, false);
      const QuantizedTensor b = random_operand(rng, 24, k, Format::kInt4, ScaleMode::kNVFP4, BlockShape::k1x16, false);
      const uint64_t t = 10 * 6;
      cfg.bandwidth = 1e9;
      const GemmStats s = *EventDevice(cfg, {}, EventDevice::Values::kNone).run(a, b).stats;
      EXPECT_EQ(s.cycles, nk + (t - 1) * std::max(nk, L + R) + L + R - 1) << "latency " << latency << " nk " << nk;
      EXPECT_EQ(s.stall_operand, 0u);
      // A full nvfp4 beat is 72 bytes (4 rows and 4 columns of 8 code bytes + 1 scale byte).
      for (const double bw : {8.0, 20.0}) {
        cfg.bandwidth = bw;
        const uint64_t f = static_cast<uint64_t>(std::ceil(72.0 / bw));
        if (nk * f < L + R) continue;
        const GemmStats sb = *EventDevice(cfg, {}, EventDevice::Values::kNone).run(a, b).stats;
        EXPECT_EQ(sb.cycles, t * nk * f + L + R - 1) << "latency " << latency << " nk " << nk << " bandwidth " << bw;
        EXPECT_EQ(sb.stall_operand, t * nk * (f - 1));
        EXPECT_EQ(sb.operand_bytes, t * nk * 72);
        EXPECT_EQ(sb.cycles, sb.beats + sb.stall_operand + sb.stall_output + sb.stall_pipeline);
        ++cases;
      }
      ++cases;
    }
  }
  EXPECT_GE(cases, 20);
}

TEST(EventModel, RefusesWhatTheTileCannotTake) {
  model::TileConfig cfg;
  cfg.formats = {Format::kE2M1};
  EXPECT_THROW(EventDevice(cfg, StallConfig{1.0, 0.0, 1}), std::invalid_argument);
  EXPECT_THROW(EventDevice(cfg, StallConfig{0.0, -0.5, 1}), std::invalid_argument);
  model::TileConfig bad;
  bad.lanes = 24;
  EXPECT_THROW(EventDevice{bad}, std::invalid_argument);
  EventDevice dev(cfg);
  std::mt19937_64 rng(7);
  const QuantizedTensor e2m1 = random_operand(rng, 4, 32, Format::kE2M1, ScaleMode::kNVFP4, BlockShape::k1x16, false);
  const QuantizedTensor int4 = random_operand(rng, 4, 32, Format::kInt4, ScaleMode::kNVFP4, BlockShape::k1x16, false);
  const QuantizedTensor wide = random_operand(rng, 4, 32, Format::kE2M1, ScaleMode::kNVFP4, BlockShape::k1x32, false);
  EXPECT_NO_THROW(dev.run(e2m1, e2m1));
  EXPECT_THROW(dev.run(e2m1, int4), std::invalid_argument) << "INT4 is not in the tile's formats";
  EXPECT_THROW(dev.run(wide, wide), std::invalid_argument) << "1x32 blocks need 32 lanes";
  model::TileConfig slow;
  slow.bandwidth = 1e-9;
  EXPECT_THROW(EventDevice(slow).run(e2m1, e2m1), std::invalid_argument) << "over the 2^36-cycle limit";
}

}  // namespace
}  // namespace nibble::sim
