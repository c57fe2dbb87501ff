// The energy-per-action table (sim/include/nibble/sim/energy.h): a table is
// read and every action priced as count x entry; actions the table lacks are
// named, never priced at zero; every bad table is refused naming its key; a
// GEMM's action counts follow from its stats. The hardware-cost flow's file
// (docs/results/energy-actions.json): the DPU prices derived for every lane
// design, scale-format set and operand statistics it has are its entries, read
// here with the same JSON parser; a combination it lacks, and every malformed
// file, is refused naming what is missing.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <map>
#include <regex>
#include <random>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "nibble/io/json.h"
#include "nibble/limits.h"
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

// --- the hardware-cost flow's file ---------------------------------------------

const std::string kFlowFile = std::string(NIBBLE_SOURCE_DIR) + "/docs/results/energy-actions.json";

// The format mask of the flow's literal "3'b101" (bit i: kAllFormats[i]), for the test's own reading.
std::vector<Format> literal_formats(const std::string& literal) {
  std::vector<Format> f;
  for (size_t i = 0; i < kAllFormats.size(); ++i) {
    if (literal.at(literal.size() - 1 - i) == '1') f.push_back(kAllFormats[i]);
  }
  return f;
}

TEST(EnergyFlow, DerivedPricesAreTheFilesEntries) {
  const nlohmann::json file = io::parse_json(io::read_text_file(kFlowFile, limits::kMaxJsonBytes));
  // (lane design, scale formats, operands) -> mask -> (A, B) formats -> pJ, as the file lists them.
  std::map<std::tuple<std::string, std::string, std::string>, std::map<std::string, std::map<FormatPair, double>>> want;
  for (const nlohmann::json& a : file["actions"]) {
    if (a["action"] != "block") continue;
    const auto format = [&](const char* key) { return *parse_format(a[key].get<std::string>()); };
    const FormatPair pair = a.contains("operand_format") ? FormatPair{format("operand_format"), format("operand_format")}
                                                         : FormatPair{format("operand_format_a"), format("operand_format_b")};
    want[{a["lane_design"], a["scale_formats"], a["operands"]}][mask_name(literal_formats(a["format_mask"]))][pair] =
        a["energy"].get<double>();
  }
  ASSERT_GE(want.size(), 2u) << kFlowFile << " has too few block entries to test";
  int compared = 0;
  for (const auto& [key, masks] : want) {
    const auto& [lane, scales, operands] = key;
    SCOPED_TRACE(lane + " / " + scales + " / " + operands);
    const EnergyTable t = energy_table_from_any_json_file(kFlowFile, {lane, operands, scales});
    EXPECT_TRUE(t.dpu_block_op.empty() && t.per_action.empty()) << "the flow prices the DPU only";
    EXPECT_EQ(t.dpu_block_op_by_format, masks);
    for (const auto& [mask, by_format] : masks) {
      for (const auto& [pair, pj] : by_format) {
        ActionCounts c;
        c[Action::kDpuBlockOp] = 1000;
        c[Action::kDramRead] = 5;
        const Energy e = price(t, mask, c, {{pair, 1000}});
        EXPECT_EQ(e.pj[0], 1000 * pj);
        EXPECT_EQ(e.total_pj, 1000 * pj);
        EXPECT_EQ(e.unpriced, std::vector<std::string>{"dram_read"}) << "the flow has no per-byte prices";
        ++compared;
      }
    }
  }
  std::printf("flow DPU prices compared: %d (%zu lane design x scale set x operands choices)\n", compared, want.size());
  EXPECT_GT(compared, 0);
}

TEST(EnergyFlow, TheDefaultChoiceIsTheRtlsLaneDesignAndTheTilesScaleFormats) {
  const DpuEnergyChoice all = resolve({}, {kAllScaleModes.begin(), kAllScaleModes.end()});
  EXPECT_EQ(all.lane_design, "split-short-shift");
  EXPECT_EQ(all.operands, "gaussian");
  EXPECT_EQ(all.scale_formats, "all");
  EXPECT_EQ(resolve({}, {ScaleMode::kNVFP4, ScaleMode::kMXFloor}).scale_formats, "e4m3+ue8m0");
  EXPECT_EQ(resolve({}, {ScaleMode::kFP32}).scale_formats, "fp32");
  EXPECT_EQ(resolve({"own-unit", "rht", "fp32"}, {ScaleMode::kNVFP4}).lane_design, "own-unit");
  const EnergyTable t = energy_table_from_any_json_file(kFlowFile, all);
  EXPECT_NE(t.source.find("lane design split-short-shift"), std::string::npos) << t.source;
  EXPECT_NE(t.source.find("gaussian operands"), std::string::npos) << t.source;
  // A pair the file has no entry for is named, not priced from another pair's entry; a pair's share is
  // priced at its own entry.
  const FormatPair e2m1{Format::kE2M1, Format::kE2M1}, int4_e1m2{Format::kInt4, Format::kE1M2};
  ASSERT_FALSE(t.dpu_block_op_by_format.at("e2m1+e1m2+int4").count(int4_e1m2))
      << kFlowFile << " now measures int4 x e1m2: pick a pair it lacks";
  ActionCounts c;
  c[Action::kDpuBlockOp] = 30;
  const Energy mixed = price(t, "e2m1+e1m2+int4", c, {{e2m1, 10}, {int4_e1m2, 20}});
  EXPECT_EQ(mixed.total_pj, 10 * t.dpu_block_op_by_format.at("e2m1+e1m2+int4").at(e2m1));
  ASSERT_EQ(mixed.unpriced.size(), 1u);
  EXPECT_NE(mixed.unpriced[0].find("int4 x e1m2"), std::string::npos) << mixed.unpriced[0];
  EXPECT_EQ(missing_dpu_prices(t, "e2m1+e1m2+int4", {e2m1, int4_e1m2, int4_e1m2}), std::vector<FormatPair>{int4_e1m2});
  EXPECT_TRUE(missing_dpu_prices(energy_table_from_json_text(kTable), "e2m1+e1m2+int4", {int4_e1m2}).empty())
      << "a per-mask price covers every pair";
  EXPECT_THROW(price(t, "e2m1", c, {{{Format::kE2M1, Format::kE2M1}, 29}}), std::invalid_argument)
      << "a split that does not add up to the count";
  // A user table adds the per-byte prices; one that prices the DPU too is refused.
  const EnergyTable user = energy_table_from_json_text(R"({"schema": "nibble-energy-per-action/1", "unit": "pJ",
    "source": "user", "per_byte": {"dram_read": 10}})");
  const EnergyTable both = merge_energy_tables(t, user);
  c[Action::kDramRead] = 4;
  EXPECT_EQ(price(both, "e2m1", c, {{e2m1, 30}}).total_pj,
            30 * t.dpu_block_op_by_format.at("e2m1").at(e2m1) + 40.0);
  EXPECT_THROW(merge_energy_tables(t, energy_table_from_json_text(kTable)), model::ConfigError);
}

// The cited memory energies (docs/results/energy-memory-cited.json): a table of the user
// schema that prices the SRAM and DRAM bytes only, each at one eighth of the 64-bit access
// energy its source line quotes, and merges with the flow's DPU prices.
TEST(EnergyFlow, CitedMemoryEnergiesPriceTheMemoryBytesBesideTheFlow) {
  const std::string path = std::string(NIBBLE_SOURCE_DIR) + "/docs/results/energy-memory-cited.json";
  const EnergyTable cited = energy_table_from_any_json_file(path, {});
  EXPECT_TRUE(cited.dpu_block_op.empty() && cited.dpu_block_op_by_format.empty()) << "the flow prices the DPU";
  const auto quoted = [&](const char* pattern, double unit_pj) {
    std::smatch m;
    EXPECT_TRUE(std::regex_search(cited.source, m, std::regex(pattern))) << pattern << " in: " << cited.source;
    return m.empty() ? -1.0 : std::stod(m[1].str()) * unit_pj;
  };
  const double sram = quoted(R"(([0-9.]+) pJ from a 1 MB SRAM)", 1.0), dram = quoted(R"(([0-9.]+) nJ from DRAM)", 1000.0);
  const std::map<std::string, double> want = {
      {"sram_read", sram / 8}, {"sram_write", sram / 8}, {"dram_read", dram / 8}, {"dram_write", dram / 8}};
  EXPECT_EQ(cited.per_action, want);
  const EnergyTable flow = energy_table_from_any_json_file(kFlowFile, resolve({}, {kAllScaleModes.begin(), kAllScaleModes.end()}));
  const EnergyTable both = merge_energy_tables(flow, cited);
  const FormatPair e2m1{Format::kE2M1, Format::kE2M1};
  ActionCounts c;
  c[Action::kDpuBlockOp] = 2;
  c[Action::kSramRead] = 3;
  c[Action::kDramWrite] = 5;
  c[Action::kOperandBufferRead] = 7;
  const Energy e = price(both, "e2m1", c, {{e2m1, 2}});
  EXPECT_DOUBLE_EQ(e.total_pj, 2 * flow.dpu_block_op_by_format.at("e2m1").at(e2m1) + 3 * sram / 8 + 5 * dram / 8);
  EXPECT_EQ(e.unpriced, std::vector<std::string>{"operand_buffer_read"}) << "no cited figure for the operand buffers";
}

TEST(EnergyFlow, RefusesAMissingChoiceAndEveryBadFileNamingIt) {
  const DpuEnergyChoice def = resolve({}, {kAllScaleModes.begin(), kAllScaleModes.end()});
  const auto refused = [](const std::string& text, const DpuEnergyChoice& choice, const std::string& want) {
    try {
      energy_table_from_flow_json_text(text, choice);
      ADD_FAILURE() << "accepted: " << text;
    } catch (const model::ConfigError& e) {
      EXPECT_NE(std::string(e.what()).find(want), std::string::npos) << e.what() << "\n  wanted: " << want;
      return 1;
    }
    return 0;
  };
  const std::string file = io::read_text_file(kFlowFile, limits::kMaxJsonBytes);
  int n = 0;
  n += refused(file, {"no-such-design", "gaussian", "all"}, "lane design 'no-such-design' (the file has: common-unit");
  n += refused(file, {def.lane_design, "uniform", "all"}, "operand statistics 'uniform' (the file has: gaussian");
  n += refused(file, {def.lane_design, "gaussian", "fp32"}, "scale-format set 'fp32'");
  const std::string entry = R"({"component": "nibble_dpu", "action": "block", "lane_design": "split-short-shift",
    "scale_formats": "all", "operands": "gaussian", "scale_mode": "nvfp4", "format_mask": "3'b001",
    "operand_format": "e2m1", "energy": 30.5})";
  const auto with = [&](const std::string& actions, const std::string& unit = "\"pJ\"") {
    return R"({"schema": "nibble-energy-actions/1", "energy_unit": )" + unit + R"(, "actions": [)" + actions + "]}";
  };
  const FormatPair e2m1{Format::kE2M1, Format::kE2M1};
  EXPECT_EQ(energy_table_from_flow_json_text(with(entry), def).dpu_block_op_by_format.at("e2m1").at(e2m1), 30.5);
  const auto edit = [&](const std::string& from, const std::string& to) {
    std::string e = entry;
    e.replace(e.find(from), from.size(), to);
    return with(e);
  };
  n += refused(with(entry, "\"E_NAND2\""), def, "'energy_unit' must be \"pJ\"");
  n += refused(R"({"schema": "nibble-energy-actions/2", "energy_unit": "pJ", "actions": []})", def, "'schema'");
  n += refused(R"({"schema": "nibble-energy-actions/1", "energy_unit": "pJ"})", def, "'actions' must be an array");
  n += refused(with(entry + ", " + entry), def, "second block entry for mask e2m1");
  n += refused(edit("3'b001", "3'b000"), def, "'actions[0].format_mask' must be a non-zero format mask");
  n += refused(edit("3'b001", "3'b1"), def, "'actions[0].format_mask'");
  n += refused(edit("\"e2m1\"", "\"fp8\""), def, "'actions[0].operand_format' is not a format");
  n += refused(edit("\"operand_format\": \"e2m1\"", "\"operand_format\": \"e2m1\", \"operand_format_b\": \"e2m1\""), def,
               "gives both operand_format and operand_format_a/_b");
  n += refused(edit("\"operand_format\"", "\"operand_format_a\""), def, "'actions[0].operand_format_b' is missing");
  n += refused(edit("\"operand_format\": \"e2m1\"", "\"operand_format_a\": \"e2m1\", \"operand_format_b\": \"fp4\""),
               def, "'actions[0].operand_format_b' is not a format");
  n += refused(edit("\"operand_format\": \"e2m1\", ", ""), def, "'actions[0].operand_format' is missing");
  n += refused(with(entry + ", " + [&] {
                 std::string e = entry;
                 const std::string from = "\"operand_format\": \"e2m1\"";
                 e.replace(e.find(from), from.size(), "\"operand_format_a\": \"e2m1\", \"operand_format_b\": \"e2m1\"");
                 return e;
               }()),
               def, "second block entry for mask e2m1, operands e2m1 x e2m1");
  n += refused(edit("30.5", "-1"), def, "'actions[0].energy' must be a finite number >= 0");
  n += refused(edit("30.5", "\"30\""), def, "'actions[0].energy' must be a number");
  n += refused(edit("\"operands\": \"gaussian\", ", ""), def, "'actions[0].operands' is missing");
  n += refused(edit("\"lane_design\": \"split-short-shift\"", "\"lane_design\": 3"), def,
               "'actions[0].lane_design' must be a non-empty string");
  n += refused(with("[]"), def, "'actions[0]' must be an object");
  n += refused(with(entry) + "x", def, "not valid JSON");
  n += refused(R"({"schema": "nibble-energy-actions/1", "schema": "nibble-energy-actions/1"})", def, "given twice");
  std::printf("bad flow files and choices refused: %d\n", n);
  EXPECT_EQ(n, 22);
}

}  // namespace
}  // namespace nibble::sim
