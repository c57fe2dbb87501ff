// The memory hierarchy and dataflows of the event model (sim/include/nibble/sim/memory.h),
// which the RTL does not have, held to properties: levels that deliver at once
// add no stall and change no cycle; every byte count equals the closed form of
// the tiling the plan reports, computed here from the shape alone; the plan is
// the least-traffic window that fits (exhaustive over small grids); cycles are
// monotone in bandwidth and latency, traffic in buffer and SRAM size; every
// tile-cycle is a beat or one stall; the stationary dataflows follow their
// formula and leave C bit-exact. Exhaustive over small shapes, seeded random
// (seed printed) elsewhere.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "nibble/model/config.h"
#include "nibble/quantize.h"
#include "nibble/sim/arch.h"
#include "nibble/sim/device.h"
#include "nibble/sim/event_device.h"
#include "nibble/sim/memory.h"

#include "model_test_util.h"

namespace nibble::sim {
namespace {

using model_test::random_operand;
using model_test::test_seed;

int64_t cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Bytes of all of one operand as the beats carry it, from the shape alone:
// rows x (one code byte per two elements of each k-block + one scale code per k-block).
uint64_t operand_bytes_of(int64_t rows, int64_t k, int64_t step, ScaleMode s) {
  const int64_t scale = s == ScaleMode::kFP32 ? 4 : 1;
  int64_t per_row = 0;
  for (int64_t k0 = 0; k0 < k; k0 += step) per_row += (std::min(step, k - k0) + 1) / 2 + scale;
  return static_cast<uint64_t>(rows * per_row);
}

GemmShape shape(int64_t m, int64_t n, int64_t k, ScaleMode s = ScaleMode::kNVFP4) {
  GemmShape g;
  g.m = m;
  g.n = n;
  g.k = k;
  g.scale_a = g.scale_b = s;
  return g;
}

ArchConfig base_arch(int tiles, uint64_t buffer) {
  ArchConfig a;
  a.tiles = tiles;
  a.tile.bandwidth = 1e9;
  a.operand_buffer_bytes = std::max(buffer, largest_beat_bytes(a.tile));
  return a;
}

uint64_t all_stalls(const GemmStats& s) {
  return s.stall_operand + s.stall_output + s.stall_pipeline + s.stall_sram + s.stall_dram;
}

TEST(Memory, LevelsThatDeliverAtOnceAddNoStallExhaustive) {
  int cases = 0;
  for (const Dataflow flow : kAllDataflows) {
    for (const int tiles : {1, 2, 3}) {
      for (const bool db : {false, true}) {
        for (int64_t m = 1; m <= 13; m += 3) {
          for (int64_t n = 1; n <= 13; n += 4) {
            for (const int64_t k : {1, 16, 40}) {
              ArchConfig plain = base_arch(tiles, 200);
              plain.dataflow = flow;
              plain.double_buffer = db;
              ArchConfig fast = plain;
              fast.sram = SramConfig{1u << 20, 1e18, 0};
              fast.dram = DramConfig{1e18, 0};
              const GemmShape g = shape(m, n, k);
              const GemmStats p = EventDevice(plain, {}, EventDevice::Values::kNone).time(g);
              const GemmStats f = EventDevice(fast, {}, EventDevice::Values::kNone).time(g);
              const Tiling tp = EventDevice(plain, {}, EventDevice::Values::kNone).tiling(g);
              const Tiling tf = EventDevice(fast, {}, EventDevice::Values::kNone).tiling(g);
              SCOPED_TRACE(testing::Message() << name(flow) << " tiles " << tiles << " db " << db << " " << m << "x"
                                              << n << "x" << k << " plain " << tp.wm << "x" << tp.wn << "/" << tp.sm << "x" << tp.sn
                                              << " fast " << tf.wm << "x" << tf.wn << "/" << tf.sm << "x" << tf.sn);
              EXPECT_EQ(f.stall_sram, 0u);
              EXPECT_EQ(f.stall_dram, 0u);
              EXPECT_EQ(p.stall_sram + p.stall_dram, 0u) << "no levels, no memory stall";
              EXPECT_EQ(f.cycles, p.cycles);
              EXPECT_EQ(f.stall_pipeline, p.stall_pipeline);
              ++cases;
            }
          }
        }
      }
    }
  }
  std::printf("shapes x dataflows x arrays with instant levels: %d\n", cases);
  EXPECT_EQ(cases, 3 * 3 * 2 * 5 * 4 * 3);
}

TEST(Memory, BytesEqualTheClosedFormOfTheTiling) {
  const uint64_t seed = test_seed();
  std::mt19937_64 rng(seed + 21);
  int cases = 0;
  for (int i = 0; i < 300; ++i) {
    ArchConfig a = base_arch(1 + static_cast<int>(rng() % 6), 64 + rng() % 3000);
    a.tile.rows = 1 + static_cast<int>(rng() % 6);
    a.tile.cols = 1 + static_cast<int>(rng() % 6);
    a.operand_buffer_bytes = std::max(a.operand_buffer_bytes, largest_beat_bytes(a.tile));
    a.dataflow = kAllDataflows[rng() % 3];
    a.double_buffer = rng() % 2;
    if (rng() % 4) a.sram = SramConfig{static_cast<uint64_t>(a.tiles) * largest_beat_bytes(a.tile) + rng() % 20000, 32, 5};
    const ScaleMode sm = rng() % 2 ? ScaleMode::kFP32 : ScaleMode::kNVFP4;
    const int64_t m = 1 + static_cast<int64_t>(rng() % 40), n = 1 + static_cast<int64_t>(rng() % 40);
    const int64_t k = 1 + static_cast<int64_t>(rng() % 150);
    const GemmShape g = shape(m, n, k, sm);
    const EventDevice dev(a, {}, EventDevice::Values::kNone);
    const Tiling t = dev.tiling(g);
    const GemmStats s = dev.time(g);
    SCOPED_TRACE(testing::Message() << "case " << i << ": " << m << "x" << n << "x" << k << " " << name(a.dataflow)
                                    << " windows " << t.wm << "x" << t.wn << " sram " << t.sm << "x" << t.sn);
    const int64_t tm = cdiv(m, a.tile.rows), tn = cdiv(n, a.tile.cols), nk = cdiv(k, 16);
    const uint64_t A = operand_bytes_of(m, k, 16, sm), B = operand_bytes_of(n, k, 16, sm);
    ASSERT_EQ(t.a_bytes, A);
    ASSERT_EQ(t.b_bytes, B);
    const uint64_t fill = static_cast<uint64_t>(cdiv(tn, t.wn)) * A + static_cast<uint64_t>(cdiv(tm, t.wm)) * B;
    EXPECT_EQ(s.traffic.buffer_fill_bytes, fill);
    EXPECT_EQ(s.traffic.dram_read_bytes,
              t.sram_streams ? fill
                             : static_cast<uint64_t>(cdiv(tn, t.sn)) * A + static_cast<uint64_t>(cdiv(tm, t.sm)) * B);
    EXPECT_EQ(t.sm % t.wm, 0);
    EXPECT_EQ(t.sn % t.wn, 0);
    EXPECT_EQ(s.windows, static_cast<uint64_t>(cdiv(tm, t.wm) * cdiv(tn, t.wn)));
    // The operand buffer's reads: every beat carries both sub-blocks (output-stationary), or
    // the stationary one once per run of beats that share it.
    const uint64_t tm_u = static_cast<uint64_t>(tm), tn_u = static_cast<uint64_t>(tn);
    const uint64_t reads = a.dataflow == Dataflow::kOutputStationary ? tn_u * A + tm_u * B
                           : a.dataflow == Dataflow::kWeightStationary
                               ? tn_u * A + static_cast<uint64_t>(cdiv(tm, t.wm)) * B
                               : static_cast<uint64_t>(cdiv(tn, t.wn)) * A + tm_u * B;
    EXPECT_EQ(s.operand_bytes, reads);
    const uint64_t mn4 = static_cast<uint64_t>(m * n) * 4;
    EXPECT_EQ(s.traffic.c_bytes, mn4);
    EXPECT_EQ(s.traffic.dram_write_bytes, mn4);
    EXPECT_EQ(s.traffic.accumulator_bytes,
              a.dataflow == Dataflow::kOutputStationary ? 0u : static_cast<uint64_t>(2 * nk - 1) * mn4);
    EXPECT_EQ(s.beats, tm_u * tn_u * static_cast<uint64_t>(nk));
    ++cases;
  }
  EXPECT_EQ(cases, 300);
}

TEST(Memory, TheWindowIsTheLeastTrafficThatFitsExhaustive) {
  int cases = 0, reuse = 0;
  for (const int tiles : {1, 2, 5}) {
    for (const bool db : {false, true}) {
      for (const uint64_t buffer : {72u, 150u, 300u, 700u, 1500u, 5000u}) {
        for (int64_t m = 4; m <= 32; m += 7) {
          for (int64_t n = 4; n <= 32; n += 9) {
            for (const int64_t k : {16, 48}) {
              ArchConfig a = base_arch(tiles, buffer);
              a.double_buffer = db;
              const GemmShape g = shape(m, n, k);
              const Tiling t = EventDevice(a, {}, EventDevice::Values::kNone).tiling(g);
              const double cap = static_cast<double>(a.operand_buffer_bytes) * (db ? 0.5 : 1.0);
              const auto fits = [&](int64_t x, int64_t y) {
                return static_cast<double>(x * static_cast<int64_t>(t.a_panel_bytes) +
                                           y * static_cast<int64_t>(t.b_panel_bytes)) <= cap;
              };
              const auto traffic = [&](int64_t x, int64_t y) {
                return static_cast<uint64_t>(cdiv(t.tn, y)) * t.a_bytes + static_cast<uint64_t>(cdiv(t.tm, x)) * t.b_bytes;
              };
              const int64_t want = std::min<int64_t>(tiles, t.tm * t.tn);
              SCOPED_TRACE(testing::Message() << "tiles " << tiles << " db " << db << " buffer " << buffer << " " << m
                                              << "x" << n << "x" << k);
              if (!fits(1, 1)) {
                EXPECT_TRUE(t.buffer_streams);
                EXPECT_EQ(t.wm, 1);
                EXPECT_EQ(t.wn, 1);
              } else {
                EXPECT_FALSE(t.buffer_streams);
                EXPECT_TRUE(fits(t.wm, t.wn));
                uint64_t best = std::numeric_limits<uint64_t>::max();
                bool enough = false;  // whether any fitting window gives every tile work
                for (int64_t x = 1; x <= t.tm; ++x) {
                  for (int64_t y = 1; y <= t.tn; ++y) enough = enough || (fits(x, y) && cdiv(t.tm, x) * cdiv(t.tn, y) >= want);
                }
                for (int64_t x = 1; x <= t.tm; ++x) {
                  for (int64_t y = 1; y <= t.tn; ++y) {
                    if (fits(x, y) && (!enough || cdiv(t.tm, x) * cdiv(t.tn, y) >= want)) best = std::min(best, traffic(x, y));
                  }
                }
                EXPECT_EQ(traffic(t.wm, t.wn), best);
                if (enough) {
                  EXPECT_GE(static_cast<int64_t>(t.windows()), want);
                }
                reuse += t.wm * t.wn > 1;
              }
              ++cases;
            }
          }
        }
      }
    }
  }
  std::printf("tilings checked against every window: %d (%d with reuse)\n", cases, reuse);
  EXPECT_EQ(cases, 3 * 2 * 6 * 5 * 4 * 2);
  EXPECT_GT(reuse, 0);
}

TEST(Memory, MonotoneInBandwidthLatencyAndSize) {
  const uint64_t seed = test_seed();
  std::mt19937_64 rng(seed + 22);
  int cases = 0;
  for (int i = 0; i < 60; ++i) {
    ArchConfig a = base_arch(1 + static_cast<int>(rng() % 4), 100 + rng() % 4000);
    a.tile.bandwidth = 4.0 + static_cast<double>(rng() % 200);
    a.dataflow = kAllDataflows[rng() % 3];
    a.double_buffer = rng() % 2;
    a.sram = SramConfig{4096 + rng() % 65536, 1.0 + static_cast<double>(rng() % 64), static_cast<int64_t>(rng() % 40)};
    a.dram = DramConfig{0.5 + static_cast<double>(rng() % 32), static_cast<int64_t>(rng() % 300)};
    const StallConfig st{0.1 * static_cast<double>(rng() % 3), 0.1 * static_cast<double>(rng() % 3), rng()};
    const GemmShape g = shape(1 + static_cast<int64_t>(rng() % 48), 1 + static_cast<int64_t>(rng() % 48),
                              1 + static_cast<int64_t>(rng() % 200));
    SCOPED_TRACE(testing::Message() << "case " << i << " " << g.m << "x" << g.n << "x" << g.k << " " << name(a.dataflow));
    const auto run = [&](const ArchConfig& x) { return EventDevice(x, st, EventDevice::Values::kNone).time(g); };
    GemmStats prev = run(a);
    for (int step = 0; step < 4; ++step) {  // more bandwidth at either level: never slower
      ArchConfig b = a;
      (step % 2 ? b.dram->bandwidth : b.sram->bandwidth) *= 2.0;
      const GemmStats next = run(b);
      EXPECT_LE(next.cycles, prev.cycles);
      a = b;
      prev = next;
    }
    for (int step = 0; step < 4; ++step) {  // more latency: never faster
      ArchConfig b = a;
      (step % 2 ? b.dram->latency : b.sram->latency) += 1 + static_cast<int64_t>(rng() % 50);
      const GemmStats next = run(b);
      EXPECT_GE(next.cycles, prev.cycles);
      a = b;
      prev = next;
    }
    for (int step = 0; step < 4; ++step) {  // a larger buffer or SRAM: never more traffic
      ArchConfig b = a;
      if (step % 2) {
        b.sram->bytes *= 2;
      } else {
        b.operand_buffer_bytes *= 2;
      }
      const GemmStats next = run(b);
      EXPECT_LE(next.traffic.buffer_fill_bytes, prev.traffic.buffer_fill_bytes);
      if (step % 2) {
        EXPECT_LE(next.traffic.dram_read_bytes, prev.traffic.dram_read_bytes);
      }
      a = b;
      prev = next;
    }
    ++cases;
  }
  EXPECT_EQ(cases, 60);
}

TEST(Memory, EveryTileCycleIsABeatOrOneStall) {
  const uint64_t seed = test_seed();
  std::mt19937_64 rng(seed + 23);
  int with_memory_stalls = 0, cases = 0;
  for (int i = 0; i < 80; ++i) {
    ArchConfig a = base_arch(1 + static_cast<int>(rng() % 5), 100 + rng() % 2000);
    a.tile.bandwidth = 8.0 + static_cast<double>(rng() % 100);
    a.dataflow = kAllDataflows[rng() % 3];
    a.double_buffer = rng() % 2;
    a.sram = SramConfig{8192 + rng() % 8192, 2.0 + static_cast<double>(rng() % 30), static_cast<int64_t>(rng() % 20)};
    if (rng() % 2) a.dram = DramConfig{1.0 + static_cast<double>(rng() % 8), static_cast<int64_t>(rng() % 100)};
    const StallConfig st{0.1 * static_cast<double>(rng() % 4), 0.1 * static_cast<double>(rng() % 4), rng()};
    const GemmShape g = shape(1 + static_cast<int64_t>(rng() % 40), 1 + static_cast<int64_t>(rng() % 40),
                              1 + static_cast<int64_t>(rng() % 120));
    const GemmStats s = EventDevice(a, st, EventDevice::Values::kNone).time(g);
    SCOPED_TRACE(testing::Message() << "case " << i);
    EXPECT_EQ(static_cast<uint64_t>(a.tiles) * s.cycles, s.beats + all_stalls(s));
    with_memory_stalls += s.stall_sram + s.stall_dram > 0;
    ++cases;
  }
  std::printf("cases with memory stalls: %d of %d\n", with_memory_stalls, cases);
  EXPECT_EQ(cases, 80);
  EXPECT_GT(with_memory_stalls, 0);
}

TEST(Memory, OneLoadAtATimeStallsByItsLatencyAndTransfer) {
  // One tile, one window (the whole GEMM fits), single-buffered: the first fetch waits for the
  // DRAM latency and transfer, then the SRAM latency and transfer; nothing else stalls on memory.
  ArchConfig a = base_arch(1, 1 << 20);
  a.double_buffer = false;
  a.sram = SramConfig{1 << 20, 8.0, 7};
  a.dram = DramConfig{4.0, 100};
  const GemmShape g = shape(8, 8, 64);
  const Tiling t = EventDevice(a, {}, EventDevice::Values::kNone).tiling(g);
  ASSERT_EQ(t.windows(), 1u);
  const uint64_t bytes = t.a_bytes + t.b_bytes;
  const GemmStats s = EventDevice(a, {}, EventDevice::Values::kNone).time(g);
  ArchConfig plain = a;
  plain.sram.reset();
  plain.dram.reset();
  const GemmStats p = EventDevice(plain, {}, EventDevice::Values::kNone).time(g);
  // A transfer of t cycles delivers its last byte in its last cycle, usable there.
  const uint64_t dram = 100 + cdiv(static_cast<int64_t>(bytes), 4) - 1, sram = cdiv(static_cast<int64_t>(bytes), 8) - 1;
  EXPECT_EQ(s.stall_dram, dram + sram) << "the DRAM arrival bounds the SRAM transfer";
  EXPECT_EQ(s.stall_sram, 0u);
  EXPECT_EQ(s.cycles, p.cycles + dram + sram);
  // Without DRAM: the SRAM's latency and transfer alone.
  ArchConfig sram_only = a;
  sram_only.dram.reset();
  const GemmStats so = EventDevice(sram_only, {}, EventDevice::Values::kNone).time(g);
  EXPECT_EQ(so.stall_sram, 7 + sram);
  EXPECT_EQ(so.stall_dram, 0u);
}

TEST(Dataflow, StationaryDataflowsFollowTheirFormulaAndKeepCBitExact) {
  const uint64_t seed = test_seed();
  std::mt19937_64 rng(seed + 24);
  int cases = 0;
  for (const Dataflow flow : {Dataflow::kWeightStationary, Dataflow::kInputStationary}) {
    for (int i = 0; i < 6; ++i) {
      ArchConfig a = base_arch(1, largest_beat_bytes(model::TileConfig{}));
      a.tile.latency = 1 + static_cast<int>(rng() % 6);
      a.dataflow = flow;
      const int64_t m = 1 + static_cast<int64_t>(rng() % 20), n = 1 + static_cast<int64_t>(rng() % 20);
      const int64_t k = 1 + static_cast<int64_t>(rng() % 100);
      const QuantizedTensor qa = random_operand(rng, m, k, Format::kE1M2, ScaleMode::kNVFP4, BlockShape::k1x16, true);
      const QuantizedTensor qb = random_operand(rng, n, k, Format::kInt4, ScaleMode::kNVFP4, BlockShape::k1x16, false);
      SCOPED_TRACE(testing::Message() << name(flow) << " " << m << "x" << n << "x" << k << " latency " << a.tile.latency);
      const GemmResult r = EventDevice(a).run(qa, qb);
      const GemmStats& s = *r.stats;
      // Compute-bound, one beat per partial-sum tile: each waits for the previous one's drain.
      EXPECT_EQ(s.cycles, s.beats * static_cast<uint64_t>(a.tile.latency + a.tile.rows));
      EXPECT_EQ(s.cycles, s.beats + all_stalls(s));
      const CheckResult c = check_against_golden(qa, qb, r);
      EXPECT_TRUE(c.ok()) << c.describe();
      EXPECT_EQ(EventDevice(a, {}, EventDevice::Values::kNone).time(shape_of(qa, qb)).cycles, s.cycles);
      ++cases;
    }
  }
  EXPECT_EQ(cases, 12);
}

TEST(Dataflow, StationarySavesOperandBandwidthWhereTheBufferIsTheBound) {
  // A narrow operand buffer (8 B/cycle): output-stationary fetches A and B every beat,
  // weight-stationary A alone after the first beat of a run, so it needs fewer cycles.
  ArchConfig a = base_arch(1, 1 << 16);
  a.tile.bandwidth = 8.0;
  const GemmShape g = shape(64, 64, 256);
  const GemmStats os = EventDevice(a, {}, EventDevice::Values::kNone).time(g);
  a.dataflow = Dataflow::kWeightStationary;
  const GemmStats ws = EventDevice(a, {}, EventDevice::Values::kNone).time(g);
  EXPECT_LT(ws.operand_bytes, os.operand_bytes);
  EXPECT_LT(ws.cycles, os.cycles);
  EXPECT_GT(ws.traffic.accumulator_bytes, 0u);
  std::printf("64x64x256 at 8 B/cycle: output-stationary %llu cycles, weight-stationary %llu\n",
              static_cast<unsigned long long>(os.cycles), static_cast<unsigned long long>(ws.cycles));
}

TEST(Memory, TimeFromTheShapeEqualsTheRun) {
  const uint64_t seed = test_seed();
  std::mt19937_64 rng(seed + 25);
  for (int i = 0; i < 10; ++i) {
    ArchConfig a = base_arch(1 + static_cast<int>(rng() % 3), 500 + rng() % 2000);
    a.sram = SramConfig{20000, 16.0, 3};
    a.dataflow = kAllDataflows[rng() % 3];
    const StallConfig st{0.2, 0.2, rng()};
    const QuantizedTensor qa = random_operand(rng, 17, 70, Format::kE2M1, ScaleMode::kFP32, BlockShape::k1x16, false);
    const QuantizedTensor qb = random_operand(rng, 23, 70, Format::kE2M1, ScaleMode::kFP32, BlockShape::k1x16, false);
    const GemmStats r = *EventDevice(a, st, EventDevice::Values::kNone).run(qa, qb).stats;
    const GemmStats t = EventDevice(a, st, EventDevice::Values::kNone).time(shape_of(qa, qb));
    EXPECT_EQ(r.cycles, t.cycles);
    EXPECT_EQ(r.stall_sram, t.stall_sram);
    EXPECT_EQ(r.traffic.dram_read_bytes, t.traffic.dram_read_bytes);
  }
}

}  // namespace
}  // namespace nibble::sim
