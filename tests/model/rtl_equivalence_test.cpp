// Three timing models of one tile, on the same stimulus: the SystemC model and
// the Verilated RTL tile (verilator --sc), driven by the one testbench
// (sim/src/tile_testbench.h) cycle by cycle, and the event-skipping model
// (sim/include/nibble/sim/event_device.h), with its values in bulk and timing
// only. C bit for bit equal between them and equal to golden::gemm, and
// identical cycle counts and stall breakdowns, including seeded random input
// bubbles and output stalls. Every Verilated shape of the build, all 9 format pairs, all 4 scale
// modes, M/N/K larger than the array and not multiples of it. Seeds are printed
// (NIBBLE_MODEL_SEED overrides).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "nibble/fp32.h"
#include "nibble/model/config.h"
#include "nibble/quantize.h"
#include "nibble/sim/device.h"
#include "nibble/sim/event_device.h"
#include "nibble/sim/rtl_device.h"
#include "nibble/sim/systemc_device.h"

#include "model_test_util.h"

namespace nibble::sim {
namespace {

using model_test::test_seed;

using model_test::random_operand;

struct Shape {
  int rows, cols, lanes;
};

std::vector<Shape> rtl_shapes() {
  std::vector<Shape> out;
  for (const std::string& s : RtlDevice::shapes()) {
    Shape sh{};
    if (std::sscanf(s.c_str(), "%dx%dx%d", &sh.rows, &sh.cols, &sh.lanes) == 3) out.push_back(sh);
  }
  return out;
}

void expect_same_timing(const char* who, const GemmStats& s, const GemmStats& rtl) {
  EXPECT_EQ(s.cycles, rtl.cycles) << who << " vs rtl";
  EXPECT_EQ(s.beats, rtl.beats) << who << " vs rtl";
  EXPECT_EQ(s.tiles, rtl.tiles) << who << " vs rtl";
  EXPECT_EQ(s.stall_operand, rtl.stall_operand) << who << " vs rtl";
  EXPECT_EQ(s.stall_output, rtl.stall_output) << who << " vs rtl";
  EXPECT_EQ(s.stall_pipeline, rtl.stall_pipeline) << who << " vs rtl";
  EXPECT_EQ(s.operand_bytes, rtl.operand_bytes) << who << " vs rtl";
  EXPECT_EQ(s.macs, rtl.macs) << who << " vs rtl";
}

void expect_same_values(const char* who, const GemmResult& r, const GemmResult& rtl) {
  ASSERT_EQ(r.c.size(), rtl.c.size()) << who;
  for (size_t i = 0; i < r.c.size(); ++i) {
    if (f32_bits(r.c[i]) != f32_bits(rtl.c[i])) {
      ADD_FAILURE() << "C element " << i << ": " << who << " 0x" << std::hex << f32_bits(r.c[i]) << " rtl 0x"
                    << f32_bits(rtl.c[i]);
      return;
    }
  }
}

// Runs the RTL, the SystemC model and the event model (values in bulk, and timing
// only) on (a, b) with the same stalls; checks values and timing. Returns the
// RTL's timing.
GemmStats expect_equivalent(const model::TileConfig& cfg, const StallConfig& st, const QuantizedTensor& a,
                            const QuantizedTensor& b, uint64_t& elements) {
  SystemCDevice model(cfg, st);
  RtlDevice rtl(cfg, st, {}, {}, st.seed);
  EventDevice event(cfg, st);
  EventDevice timing(cfg, st, EventDevice::Values::kNone);
  const GemmResult rm = model.run(a, b);
  const GemmResult rr = rtl.run(a, b);
  const GemmResult re = event.run(a, b);
  const GemmResult rt = timing.run(a, b);
  const CheckResult cr = check_against_golden(a, b, rr);
  EXPECT_TRUE(cr.ok()) << "rtl: " << cr.describe();
  expect_same_values("systemc", rm, rr);
  expect_same_values("event", re, rr);
  EXPECT_TRUE(rt.c.empty()) << "the timing-only model computed values";
  if (!rm.stats || !rr.stats || !re.stats || !rt.stats) {
    ADD_FAILURE() << "a timed device returned no timing";
    return {};
  }
  const GemmStats& sr = *rr.stats;
  expect_same_timing("systemc", *rm.stats, sr);
  expect_same_timing("event", *re.stats, sr);
  expect_same_timing("event-timing", *rt.stats, sr);
  EXPECT_EQ(sr.cycles, sr.beats + sr.stall_operand + sr.stall_output + sr.stall_pipeline);
  elements += cr.compared;
  return sr;
}

TEST(RtlEquivalence, EveryShapeFormatPairScaleModeWithStalls) {
  const std::vector<Shape> shapes = rtl_shapes();
  ASSERT_FALSE(shapes.empty()) << "this build has no Verilated tile";
  const uint64_t seed = test_seed();
  std::mt19937_64 rng(seed);
  uint64_t cases = 0, stalled = 0, elements = 0, stall_output = 0;
  for (const Shape& sh : shapes) {
    model::TileConfig cfg;
    cfg.rows = sh.rows;
    cfg.cols = sh.cols;
    cfg.lanes = sh.lanes;
    // Four rounds: round r gives format pair p the scale mode (p + r) mod 4, so every
    // pair meets every scale mode on every shape.
    for (int round = 0; round < 4; ++round) {
    int pair = 0;
    for (Format fa : kAllFormats) {
      for (Format fb : kAllFormats) {
        const ScaleMode sm = kAllScaleModes[static_cast<size_t>(pair++ + round) % kAllScaleModes.size()];
        // Larger than the array, not a multiple of it (edge tiles are padded).
        int64_t m = sh.rows + 1 + static_cast<int64_t>(rng() % static_cast<uint64_t>(2 * sh.rows - 1));
        int64_t n = sh.cols + 1 + static_cast<int64_t>(rng() % static_cast<uint64_t>(2 * sh.cols - 1));
        int64_t k = sh.lanes + 1 + static_cast<int64_t>(rng() % static_cast<uint64_t>(3 * sh.lanes));
        if (m % sh.rows == 0) ++m;
        if (n % sh.cols == 0) ++n;
        if (k % sh.lanes == 0) ++k;
        const BlockShape ba = sh.lanes == 32 && rng() % 2 ? BlockShape::k1x32
                              : rng() % 3                   ? BlockShape::k1x16
                                                            : BlockShape::k16x16;
        const BlockShape bb = sh.lanes == 32 && rng() % 2 ? BlockShape::k1x32 : BlockShape::k1x16;
        const QuantizedTensor a = random_operand(rng, m, k, fa, sm, ba, rng() % 4 == 0);
        const QuantizedTensor b = random_operand(rng, n, k, fb, sm, bb, false);
        cfg.bandwidth = rng() % 2 ? 1e9 : 24.0 + static_cast<double>(rng() % 64);
        StallConfig st;
        st.seed = rng();
        if ((pair + round) % 3 != 0) {  // two cases in three with bubbles and stalls
          st.input = 0.1 * static_cast<double>(1 + rng() % 4);
          st.output = 0.1 * static_cast<double>(1 + rng() % 4);
          ++stalled;
        }
        SCOPED_TRACE(testing::Message() << "array " << sh.rows << "x" << sh.cols << "x" << sh.lanes << " gemm " << m
                                        << "x" << n << "x" << k << " " << name(fa) << "*" << name(fb) << " "
                                        << name(sm) << " blocks " << name(ba) << "/" << name(bb) << " bandwidth "
                                        << cfg.bandwidth << " stalls in " << st.input << " out " << st.output
                                        << " stall seed 0x" << std::hex << st.seed);
        const GemmStats s = expect_equivalent(cfg, st, a, b, elements);
        if (HasFailure()) return;
        stall_output += s.stall_output;
        ++cases;
      }
    }
    }
  }
  std::printf("RTL vs SystemC model vs event model: %llu GEMMs (%llu with bubbles/stalls), %llu elements bit-exact, "
              "cycles and stalls identical\n",
              static_cast<unsigned long long>(cases), static_cast<unsigned long long>(stalled),
              static_cast<unsigned long long>(elements));
  EXPECT_EQ(cases, shapes.size() * 9 * 4);
  EXPECT_GT(stall_output, 0u) << "no case held a last beat back behind output stalls";
}

// Deep GEMMs (many tiles, long k) under heavy bubbles and stalls, compute- and
// bandwidth-bound, on every shape.
TEST(RtlEquivalence, DeepGemmsUnderHeavyStalls) {
  const uint64_t seed = test_seed();
  std::mt19937_64 rng(seed + 2);
  uint64_t cases = 0, elements = 0, cycles = 0;
  for (const Shape& sh : rtl_shapes()) {
    model::TileConfig cfg;
    cfg.rows = sh.rows;
    cfg.cols = sh.cols;
    cfg.lanes = sh.lanes;
    for (int i = 0; i < 3; ++i) {
      const int64_t m = 5 * sh.rows + 1 + static_cast<int64_t>(rng() % static_cast<uint64_t>(sh.rows));
      const int64_t n = 5 * sh.cols + 1 + static_cast<int64_t>(rng() % static_cast<uint64_t>(sh.cols));
      const int64_t k = 12 * sh.lanes + 1 + static_cast<int64_t>(rng() % static_cast<uint64_t>(sh.lanes - 1));
      const Format fa = kAllFormats[rng() % 3], fb = kAllFormats[rng() % 3];
      const ScaleMode sm = kAllScaleModes[rng() % 4];
      const BlockShape blk = sh.lanes == 32 ? BlockShape::k1x32 : BlockShape::k1x16;
      const QuantizedTensor a = random_operand(rng, m, k, fa, sm, blk, true);
      const QuantizedTensor b = random_operand(rng, n, k, fb, sm, blk, false);
      cfg.bandwidth = i == 0 ? 1e9 : 16.0 * (1 + i);
      const StallConfig st{0.5, i == 2 ? 0.7 : 0.5, rng()};
      SCOPED_TRACE(testing::Message() << "array " << sh.rows << "x" << sh.cols << "x" << sh.lanes << " gemm " << m
                                      << "x" << n << "x" << k << " " << name(fa) << "*" << name(fb) << " " << name(sm)
                                      << " bandwidth " << cfg.bandwidth << " stall seed 0x" << std::hex << st.seed);
      cycles += expect_equivalent(cfg, st, a, b, elements).cycles;
      if (HasFailure()) return;
      ++cases;
    }
  }
  std::printf("deep GEMMs, RTL vs SystemC model vs event model: %llu, %llu elements bit-exact, %llu cycles identical\n",
              static_cast<unsigned long long>(cases), static_cast<unsigned long long>(elements),
              static_cast<unsigned long long>(cycles));
  EXPECT_EQ(cases, rtl_shapes().size() * 3);
}

// Every scale mode on every shape, several tiles deep, no stalls: the
// documented compute-bound cycle formula holds on the RTL itself.
TEST(RtlEquivalence, ScaleModesAndTheCycleFormulaOnTheRtl) {
  const uint64_t seed = test_seed();
  std::mt19937_64 rng(seed + 1);
  int cases = 0;
  for (const Shape& sh : rtl_shapes()) {
    model::TileConfig cfg;
    cfg.rows = sh.rows;
    cfg.cols = sh.cols;
    cfg.lanes = sh.lanes;
    cfg.bandwidth = 1e9;
    for (ScaleMode sm : kAllScaleModes) {
      const uint64_t nk = 1 + rng() % 10;
      const int64_t m = 2 * sh.rows, n = 2 * sh.cols, k = static_cast<int64_t>(nk) * 16;
      const QuantizedTensor a = random_operand(rng, m, k, Format::kE1M2, sm, BlockShape::k1x16, false);
      const QuantizedTensor b = random_operand(rng, n, k, Format::kInt4, sm, BlockShape::k1x16, false);
      uint64_t elements = 0;
      SCOPED_TRACE(testing::Message() << "array " << sh.rows << "x" << sh.cols << "x" << sh.lanes << " nk " << nk
                                      << " " << name(sm));
      const GemmStats s = expect_equivalent(cfg, {}, a, b, elements);
      const uint64_t t = 4, L = static_cast<uint64_t>(cfg.latency), R = static_cast<uint64_t>(sh.rows);
      EXPECT_EQ(s.cycles, nk + (t - 1) * std::max(nk, L + R) + L + R - 1);
      EXPECT_EQ(s.stall_operand, 0u);
      ++cases;
    }
  }
  EXPECT_EQ(cases, static_cast<int>(rtl_shapes().size() * 4));
}

TEST(RtlEquivalence, RefusesShapesAndLatenciesItWasNotBuiltFor) {
  model::TileConfig cfg;
  cfg.rows = 16;
  cfg.cols = 16;
  try {
    RtlDevice dev(cfg);
    FAIL() << "16x16x16 accepted";
  } catch (const std::invalid_argument& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("16x16x16"), std::string::npos) << msg;
    for (const std::string& s : RtlDevice::shapes()) EXPECT_NE(msg.find(s), std::string::npos) << msg;
  }
  model::TileConfig slow;
  slow.latency = 7;
  EXPECT_THROW(RtlDevice{slow}, std::invalid_argument);
  model::TileConfig ok;
  RtlDevice dev(ok);
  std::mt19937_64 rng(5);
  const QuantizedTensor a = random_operand(rng, 4, 32, Format::kE2M1, ScaleMode::kNVFP4, BlockShape::k1x32, false);
  EXPECT_THROW(dev.run(a, a), std::invalid_argument) << "1x32 blocks need 32 lanes";
}

}  // namespace
}  // namespace nibble::sim
