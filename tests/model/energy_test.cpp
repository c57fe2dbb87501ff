// The energy-per-action table (sim/include/nibble/sim/energy.h): a table is
// read and every action priced as count x entry; actions the table lacks are
// named, never priced at zero; every bad table is refused naming its key; a
// GEMM's action counts follow from its stats.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "nibble/model/config.h"
#include "nibble/sim/arch.h"
#include "nibble/sim/energy.h"
#include "nibble/sim/event_device.h"

#include "model_test_util.h"

namespace nibble::sim {
namespace {

const char* kTable = R"({"schema": "nibble-energy-per-action/1", "unit": "pJ", "source": "test values",
  "dpu_block_op": {"e2m1": 2.0, "e2m1+e1m2+int4": 2.5},
  "per_byte": {"operand_buffer_read": 0.125, "sram_read": 0.5, "sram_write": 0.75, "dram_read": 16,
               "dram_write": 20, "accumulator": 0.25},
  "per_element": {"quantize": 0.375, "rht": 1.5}})";

TEST(Energy, PricesEveryActionAsCountTimesEntry) {
  const EnergyTable t = energy_table_from_json_text(kTable);
  EXPECT_EQ(t.source, "test values");
  const double prices[kActionCount] = {2.5, 0.125, 0.5, 0.75, 16, 20, 0.25, 0.375, 1.5};
  const uint64_t seed = model_test::test_seed();
  std::mt19937_64 rng(seed + 31);
  for (int i = 0; i < 100; ++i) {
    ActionCounts c;
    double want = 0.0;
    for (int a = 0; a < kActionCount; ++a) {
      c.n[a] = rng() % 1000000;
      want += static_cast<double>(c.n[a]) * prices[a];
    }
    const Energy e = price(t, "e2m1+e1m2+int4", c);
    EXPECT_DOUBLE_EQ(e.total_pj, want);
    EXPECT_TRUE(e.unpriced.empty());
  }
  ActionCounts c;
  c[Action::kDpuBlockOp] = 10;
  c[Action::kDramRead] = 3;
  EXPECT_DOUBLE_EQ(price(t, "e2m1", c).total_pj, 10 * 2.0 + 3 * 16.0);
  // A mask the table has no entry for: named, not priced at zero.
  const Energy missing = price(t, "e2m1+int4", c);
  ASSERT_EQ(missing.unpriced.size(), 1u);
  EXPECT_NE(missing.unpriced[0].find("e2m1+int4"), std::string::npos);
  EXPECT_DOUBLE_EQ(missing.total_pj, 3 * 16.0);
  const EnergyTable bare = energy_table_from_json_text(R"({"schema": "nibble-energy-per-action/1", "unit": "pJ",
    "source": "only DRAM", "per_byte": {"dram_read": 10}})");
  const Energy partial = price(bare, "e2m1", c);
  EXPECT_EQ(partial.unpriced, std::vector<std::string>{"dpu_block_op (mask e2m1)"});
  EXPECT_DOUBLE_EQ(partial.total_pj, 30.0);
}

TEST(Energy, MaskNamesAreCanonical) {
  EXPECT_EQ(mask_name({Format::kInt4, Format::kE2M1}), "e2m1+int4");
  EXPECT_EQ(mask_name({Format::kE1M2, Format::kInt4, Format::kE2M1}), "e2m1+e1m2+int4");
  EXPECT_EQ(mask_name({Format::kE2M1}), "e2m1");
}

TEST(Energy, RefusesEveryBadTableNamingTheKey) {
  struct Case {
    std::string text, must_mention;
  };
  const std::string head = R"("schema": "nibble-energy-per-action/1", "unit": "pJ", "source": "s")";
  const std::vector<Case> cases = {
      {"", "not valid JSON"},
      {"[]", "must be a JSON object"},
      {R"({"unit": "pJ", "source": "s"})", "'schema' is missing"},
      {R"({"schema": "nibble-energy-per-action/2", "unit": "pJ", "source": "s"})", "'schema' must be"},
      {R"({"schema": "nibble-energy-per-action/1", "unit": "nJ", "source": "s"})", "'unit' must be \"pJ\""},
      {R"({"schema": "nibble-energy-per-action/1", "unit": "pJ", "source": ""})", "'source' must say"},
      {R"({"schema": "nibble-energy-per-action/1", "unit": "pJ"})", "'source' is missing"},
      {"{" + head + R"(, "mac": 1})", "unknown key 'mac'"},
      {"{" + head + R"(, "per_byte": {"l2_read": 1}})", "'per_byte' has an unknown key 'l2_read'"},
      {"{" + head + R"(, "per_byte": {"sram_read": -1}})", "'per_byte.sram_read' must be a finite number >= 0"},
      {"{" + head + R"(, "per_byte": {"sram_read": "1"}})", "'per_byte.sram_read' must be a number"},
      {"{" + head + R"(, "per_byte": 3})", "'per_byte' must be an object"},
      {"{" + head + R"(, "per_element": {"quantize": 1, "quantize": 2}})", "'quantize' is given twice"},
      {"{" + head + R"(, "dpu_block_op": {"int4+e2m1": 1}})", "'dpu_block_op' has an unknown key 'int4+e2m1'"},
      {"{" + head + R"(, "dpu_block_op": {"fp8": 1}})", "unknown key 'fp8'"},
  };
  int refused = 0;
  for (const Case& c : cases) {
    SCOPED_TRACE(c.text);
    try {
      energy_table_from_json_text(c.text);
      ADD_FAILURE() << "accepted";
    } catch (const model::ConfigError& e) {
      const std::string msg = e.what();
      EXPECT_NE(msg.find(c.must_mention), std::string::npos) << msg;
      refused += msg.find(c.must_mention) != std::string::npos;
    }
  }
  std::printf("bad energy tables refused naming the problem: %d\n", refused);
  EXPECT_EQ(refused, static_cast<int>(cases.size()));
  try {
    energy_table_from_json_file("/nonexistent/energy.json");
    ADD_FAILURE() << "a missing file was accepted";
  } catch (const model::ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/energy.json"), std::string::npos) << e.what();
  }
}

TEST(Energy, ActionCountsFollowFromTheStats) {
  ArchConfig a;
  a.tiles = 3;
  a.tile.rows = 4;
  a.tile.cols = 2;
  a.operand_buffer_bytes = 4096;
  a.sram = SramConfig{1 << 16, 64, 2};
  a.dram = DramConfig{8, 50};
  a.dataflow = Dataflow::kWeightStationary;
  GemmShape g;
  g.m = 37;
  g.n = 19;
  g.k = 100;
  const GemmStats s = EventDevice(a, {}, EventDevice::Values::kNone).time(g);
  const ActionCounts c = count_actions(a, s);
  EXPECT_EQ(c[Action::kDpuBlockOp], s.beats * 8);
  EXPECT_EQ(c[Action::kOperandBufferRead], s.operand_bytes);
  EXPECT_EQ(c[Action::kSramRead], s.traffic.buffer_fill_bytes + s.traffic.c_bytes);
  EXPECT_EQ(c[Action::kSramWrite], s.traffic.dram_read_bytes + s.traffic.c_bytes);
  EXPECT_EQ(c[Action::kDramRead], s.traffic.dram_read_bytes);
  EXPECT_EQ(c[Action::kDramWrite], 37u * 19u * 4u);
  EXPECT_EQ(c[Action::kAccumulator], s.traffic.accumulator_bytes);
  EXPECT_GT(c[Action::kAccumulator], 0u);
  EXPECT_EQ(c[Action::kQuantize], 0u) << "the workload adds the quantizer's work";
  a.sram.reset();
  const ActionCounts no_sram = count_actions(a, EventDevice(a, {}, EventDevice::Values::kNone).time(g));
  EXPECT_EQ(no_sram[Action::kSramRead] + no_sram[Action::kSramWrite], 0u) << "no SRAM, no SRAM actions";
}

}  // namespace
}  // namespace nibble::sim
