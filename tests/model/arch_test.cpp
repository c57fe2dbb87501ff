// The architecture file (sim/include/nibble/sim/arch.h) and the event model on
// an array of tiles: every bad file refused naming its key; one tile is exactly
// the single-tile model (seeded stalls included); T tiles follow the
// compute-bound formula on their share of the output tiles, account for every
// tile-cycle, and leave C bit-exact.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "nibble/fp32.h"
#include "nibble/model/config.h"
#include "nibble/quantize.h"
#include "nibble/sim/arch.h"
#include "nibble/sim/device.h"
#include "nibble/sim/event_device.h"

#include "model_test_util.h"

namespace nibble::sim {
namespace {

using model_test::random_operand;
using model_test::test_seed;

const char* kGood = R"({"tiles": 4, "tile": {"rows": 4, "cols": 4, "lanes": 16, "bandwidth": 1e9,
  "formats": ["e2m1", "int4"], "scale_modes": ["nvfp4"]}, "operand_buffer_bytes": 72})";

TEST(Arch, ReadsAGoodFile) {
  const ArchConfig a = arch_from_json_text(kGood);
  EXPECT_EQ(a.tiles, 4);
  EXPECT_EQ(a.tile.rows, 4);
  EXPECT_EQ(a.tile.lanes, 16);
  EXPECT_EQ(a.tile.formats, (std::vector<Format>{Format::kE2M1, Format::kInt4}));
  EXPECT_EQ(a.operand_buffer_bytes, 72u);
  EXPECT_EQ(largest_beat_bytes(a.tile), 72u) << "8 panel rows of 8 code bytes + 1 scale byte";
  model::TileConfig fp32;
  EXPECT_EQ(largest_beat_bytes(fp32), 96u) << "fp32 scales take 4 bytes";
}

TEST(Arch, RefusesEveryBadFileNamingTheKey) {
  struct Case {
    std::string text, must_mention;
  };
  const std::string tile = R"("tile": {"rows": 4, "cols": 4, "lanes": 16})";
  const std::vector<Case> cases = {
      {"", "not valid JSON"},
      {"[1, 2]", "must be a JSON object"},
      {"{" + tile + R"(, "operand_buffer_bytes": 96})", "'tiles' is missing"},
      {R"({"tiles": 2, "operand_buffer_bytes": 96})", "'tile' is missing"},
      {R"({"tiles": 2, )" + tile + "}", "'operand_buffer_bytes' is missing"},
      {R"({"tiles": 2, )" + tile + R"(, "operand_buffer_bytes": 96, "pe_shape": "os"})", "unknown key 'pe_shape'"},
      {R"({"tiles": 2, )" + tile + R"(, "operand_buffer_bytes": 96, "dataflow": "os"})", "unknown dataflow \"os\""},
      {R"({"tiles": 2, )" + tile + R"(, "operand_buffer_bytes": 96, "dataflow": 1})", "'dataflow' must be a string"},
      {R"({"tiles": 2, )" + tile + R"(, "operand_buffer_bytes": 96, "double_buffer": 1})", "'double_buffer' must be true or false"},
      {R"({"tiles": 2, )" + tile + R"(, "operand_buffer_bytes": 96, "sram": 5})", "'sram' must be an object"},
      {R"({"tiles": 2, )" + tile + R"(, "operand_buffer_bytes": 96, "sram": {"bytes": 4096, "bandwidth": 8}})",
       "'sram.latency' is missing"},
      {R"({"tiles": 2, )" + tile + R"(, "operand_buffer_bytes": 96, "sram": {"bytes": 4096, "bandwidth": 8, "latency": 1, "banks": 2}})",
       "'sram' has an unknown key 'banks'"},
      {R"({"tiles": 2, )" + tile + R"(, "operand_buffer_bytes": 96, "sram": {"bytes": 191, "bandwidth": 8, "latency": 1}})",
       "'sram.bytes' 191 cannot hold one beat for each of the 2 tiles"},
      {R"({"tiles": 2, )" + tile + R"(, "operand_buffer_bytes": 96, "sram": {"bytes": 4096, "bandwidth": 0, "latency": 1}})",
       "'sram.bandwidth' must be a finite number > 0"},
      {R"({"tiles": 2, )" + tile + R"(, "operand_buffer_bytes": 96, "sram": {"bytes": 4096, "bandwidth": "8", "latency": 1}})",
       "'sram.bandwidth' must be a number"},
      {R"({"tiles": 2, )" + tile + R"(, "operand_buffer_bytes": 96, "sram": {"bytes": 4096, "bandwidth": 8, "latency": -1}})",
       "'sram.latency' must be at least 0"},
      {R"({"tiles": 2, )" + tile + R"(, "operand_buffer_bytes": 96, "dram": {"bandwidth": -4, "latency": 100}})",
       "'dram.bandwidth' must be a finite number > 0"},
      {R"({"tiles": 2, )" + tile + R"(, "operand_buffer_bytes": 96, "dram": {"bandwidth": 4, "latency": 2.5}})",
       "'dram.latency' must be an integer"},
      {R"({"tiles": 2, )" + tile + R"(, "operand_buffer_bytes": 96, "dram": {"bandwidth": 4, "latency": 9999999}})",
       "'dram.latency' must be at most"},
      {R"({"tiles": 2, )" + tile + R"(, "operand_buffer_bytes": 96, "dram": {"bandwidth": 4}})", "'dram.latency' is missing"},
      {R"({"tiles": 2, )" + tile + R"(, "operand_buffer_bytes": 96, "clock_ghz": 0})", "'clock_ghz' must be a finite number > 0"},
      {R"({"tiles": 2, )" + tile + R"(, "operand_buffer_bytes": 96, "quantizer": {"elements_per_cycle": 16}})",
       "'quantizer.rht_elements_per_cycle' is missing"},
      {R"({"tiles": 2, )" + tile + R"(, "operand_buffer_bytes": 96, "quantizer": {"elements_per_cycle": 0, "rht_elements_per_cycle": 4}})",
       "'quantizer.elements_per_cycle' must be a finite number > 0"},
      {R"({"tiles": 2, )" + tile + R"(, "operand_buffer_bytes": 96, "sram": {"bytes": 4096, "bandwidth": 8, "latency": 1, "latency": 2}})",
       "'latency' is given twice"},
      {R"({"tiles": 0, )" + tile + R"(, "operand_buffer_bytes": 96})", "'tiles' must be at least 1"},
      {R"({"tiles": 5000, )" + tile + R"(, "operand_buffer_bytes": 96})", "'tiles' must be at most 4096"},
      {R"({"tiles": 2.5, )" + tile + R"(, "operand_buffer_bytes": 96})", "'tiles' must be an integer"},
      {R"({"tiles": "4", )" + tile + R"(, "operand_buffer_bytes": 96})", "'tiles' must be an integer"},
      {R"({"tiles": 18446744073709551615, )" + tile + R"(, "operand_buffer_bytes": 96})", "'tiles' must be at most"},
      {R"({"tiles": 2, "tile": 4, "operand_buffer_bytes": 96})", "'tile' must be an object"},
      {R"({"tiles": 2, "tile": {"rows": 0}, "operand_buffer_bytes": 96})", "'rows'"},
      {R"({"tiles": 2, "tile": {"lanes": 24}, "operand_buffer_bytes": 96})", "'lanes'"},
      {R"({"tiles": 2, "tile": {"bandwidth": 0}, "operand_buffer_bytes": 96})", "'bandwidth'"},
      {R"({"tiles": 2, "tile": {"bandwidth": -8}, "operand_buffer_bytes": 96})", "'bandwidth'"},
      {R"({"tiles": 2, "tile": {"formats": []}, "operand_buffer_bytes": 96})", "'formats'"},
      {R"({"tiles": 2, "tile": {"formats": ["fp8"]}, "operand_buffer_bytes": 96})", "unknown name 'fp8'"},
      {R"({"tiles": 2, "tile": {"depth": 3}, "operand_buffer_bytes": 96})", "unknown key 'depth'"},
      {R"({"tiles": 2, )" + tile + R"(, "operand_buffer_bytes": 95})", "cannot hold one beat"},
      {R"({"tiles": 2, )" + tile + R"(, "operand_buffer_bytes": 0})", "'operand_buffer_bytes' must be at least 1"},
      {R"({"tiles": 2, )" + tile + R"(, "operand_buffer_bytes": -96})", "'operand_buffer_bytes' must be at least 1"},
      {R"({"tiles": 2, )" + tile + R"(, "operand_buffer_bytes": 1e3})", "'operand_buffer_bytes' must be an integer"},
      {R"({"tiles": 2, "tiles": 3, )" + tile + R"(, "operand_buffer_bytes": 96})", "'tiles' is given twice"},
      {R"({"tiles": 2, "tile": {"rows": 4, "rows": 8}, "operand_buffer_bytes": 96})", "'rows' is given twice"},
      {R"({"tiles": 2, )" + tile + R"(, "operand_buffer_bytes": 96, "energy": "e.json"})", "'energy' must be an object"},
      {R"({"tiles": 2, )" + tile + R"(, "operand_buffer_bytes": 96, "energy": {"lane_design": "split"}})",
       "'energy.files' is missing"},
      {R"({"tiles": 2, )" + tile + R"(, "operand_buffer_bytes": 96, "energy": {"files": ["e.json"], "node": "sky130"}})",
       "'energy' has an unknown key 'node'"},
      {R"({"tiles": 2, )" + tile + R"(, "operand_buffer_bytes": 96, "energy": {"files": "e.json"}})",
       "'energy.files' must be an array"},
      {R"({"tiles": 2, )" + tile + R"(, "operand_buffer_bytes": 96, "energy": {"files": []}})",
       "'energy.files' must list 1 or 2 files"},
      {R"({"tiles": 2, )" + tile + R"(, "operand_buffer_bytes": 96, "energy": {"files": ["a", "b", "c"]}})",
       "'energy.files' must list 1 or 2 files"},
      {R"({"tiles": 2, )" + tile + R"(, "operand_buffer_bytes": 96, "energy": {"files": [""]}})",
       "'energy.files[0]' must be a non-empty string"},
      {R"({"tiles": 2, )" + tile + R"(, "operand_buffer_bytes": 96, "energy": {"files": ["e.json", 3]}})",
       "'energy.files[1]' must be a non-empty string"},
      {R"({"tiles": 2, )" + tile + R"(, "operand_buffer_bytes": 96, "energy": {"files": ["e.json"], "lane_design": "wide"}})",
       "'energy.lane_design' unknown lane design \"wide\" (known: common-unit"},
      {R"({"tiles": 2, )" + tile + R"(, "operand_buffer_bytes": 96, "energy": {"files": ["e.json"], "lane_design": 4}})",
       "'energy.lane_design' must be a non-empty string"},
      {R"({"tiles": 2, )" + tile + R"(, "operand_buffer_bytes": 96, "energy": {"files": ["e.json"], "operands": ""}})",
       "'energy.operands' must be a non-empty string"},
      {R"({"tiles": 2, )" + tile + R"(, "operand_buffer_bytes": 96, "energy": {"files": ["e.json"], "scale_formats": "fp16"}})",
       "'energy.scale_formats' unknown scale-format set \"fp16\" (known: e4m3"},
      {R"({"tiles": 2, )" + tile + R"(, "operand_buffer_bytes": 96, "energy": {"files": ["e.json"], "files": ["f.json"]}})",
       "'files' is given twice"},
  };
  int refused = 0;
  for (const Case& c : cases) {
    SCOPED_TRACE(c.text);
    try {
      arch_from_json_text(c.text);
      ADD_FAILURE() << "accepted";
    } catch (const model::ConfigError& e) {
      const std::string msg = e.what();
      EXPECT_NE(msg.find(c.must_mention), std::string::npos) << msg;
      refused += msg.find(c.must_mention) != std::string::npos;
    }
  }
  std::printf("bad architecture files refused naming the problem: %d\n", refused);
  EXPECT_EQ(refused, static_cast<int>(cases.size()));

  try {
    arch_from_json_file("/nonexistent/arch.json");
    ADD_FAILURE() << "a missing file was accepted";
  } catch (const model::ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/arch.json"), std::string::npos) << e.what();
  }
  const std::string path = ::testing::TempDir() + "nibble_arch_bad.json";
  std::ofstream(path) << R"({"tiles": 1})";
  try {
    arch_from_json_file(path);
    ADD_FAILURE() << "an incomplete file was accepted";
  } catch (const model::ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
  }
  ArchConfig too_small;
  too_small.operand_buffer_bytes = 10;
  EXPECT_THROW(EventDevice{too_small}, model::ConfigError);
}

TEST(Arch, ReadsEveryOptionalKeyAndWritesThemBack) {
  const std::string text = R"({"tiles": 16, "tile": {"rows": 4, "cols": 4, "lanes": 16}, "operand_buffer_bytes": 8192,
    "dataflow": "weight-stationary", "double_buffer": false,
    "sram": {"bytes": 1048576, "bandwidth": 256, "latency": 12}, "dram": {"bandwidth": 32.5, "latency": 200},
    "clock_ghz": 1.5, "quantizer": {"elements_per_cycle": 64, "rht_elements_per_cycle": 32},
    "energy": {"files": ["../results/energy-actions.json", "/abs/bytes.json"], "lane_design": "own-unit",
               "operands": "rht", "scale_formats": "e4m3+ue8m0"}})";
  const ArchConfig a = arch_from_json_text(text);
  ASSERT_TRUE(a.energy);
  EXPECT_EQ(a.energy->files, (std::vector<std::string>{"../results/energy-actions.json", "/abs/bytes.json"}));
  EXPECT_EQ(a.energy->lane_design, "own-unit");
  EXPECT_EQ(a.energy->operands, "rht");
  EXPECT_EQ(a.energy->scale_formats, "e4m3+ue8m0");
  // A file takes its relative energy paths from its own directory; absolute ones stay.
  const std::string dir = ::testing::TempDir() + "nibble_arch_dir/";
  std::filesystem::create_directories(dir + "arch");
  std::ofstream(dir + "arch/a.json") << text;
  const ArchConfig from_file = arch_from_json_file(dir + "arch/a.json");
  ASSERT_TRUE(from_file.energy);
  EXPECT_EQ(from_file.energy->files,
            (std::vector<std::string>{std::filesystem::path(dir + "results/energy-actions.json").lexically_normal().string(),
                                      "/abs/bytes.json"}));
  EXPECT_EQ(a.dataflow, Dataflow::kWeightStationary);
  EXPECT_FALSE(a.double_buffer);
  ASSERT_TRUE(a.sram && a.dram && a.clock_ghz && a.quantizer);
  EXPECT_EQ(a.sram->bytes, 1048576u);
  EXPECT_EQ(a.sram->latency, 12);
  EXPECT_EQ(a.dram->bandwidth, 32.5);
  EXPECT_EQ(*a.clock_ghz, 1.5);
  EXPECT_EQ(a.quantizer->rht_elements_per_cycle, 32.0);
  const ArchConfig back = arch_from_json_text(to_json_text(a));
  EXPECT_EQ(to_json_text(back), to_json_text(a));
  for (const Dataflow d : kAllDataflows) EXPECT_EQ(parse_dataflow(name(d)), d);
  EXPECT_FALSE(parse_dataflow("row-stationary"));
  const ArchConfig plain = arch_from_json_text(kGood);
  EXPECT_EQ(plain.dataflow, Dataflow::kOutputStationary) << "the RTL's dataflow is the default";
  EXPECT_TRUE(plain.double_buffer);
  EXPECT_FALSE(plain.sram || plain.dram || plain.clock_ghz || plain.quantizer || plain.energy);
  const ArchConfig files_only =
      arch_from_json_text(R"({"tiles": 1, "tile": {}, "operand_buffer_bytes": 96, "energy": {"files": ["e.json"]}})");
  ASSERT_TRUE(files_only.energy);
  EXPECT_TRUE(files_only.energy->lane_design.empty() && files_only.energy->operands.empty() &&
              files_only.energy->scale_formats.empty())
      << "keys left out take the defaults where the energy is priced";
}

TEST(ArchEvent, OneTileIsTheSingleTileModel) {
  const uint64_t seed = test_seed();
  std::mt19937_64 rng(seed + 5);
  int cases = 0;
  for (int i = 0; i < 12; ++i) {
    ArchConfig arch;
    arch.tile.rows = 1 + static_cast<int>(rng() % 8);
    arch.tile.cols = 1 + static_cast<int>(rng() % 8);
    arch.tile.bandwidth = i % 2 ? 1e9 : 8.0 + static_cast<double>(rng() % 40);
    arch.operand_buffer_bytes = largest_beat_bytes(arch.tile);
    const StallConfig st{0.1 * static_cast<double>(i % 4), 0.1 * static_cast<double>(i % 5), rng()};
    const int64_t m = 1 + static_cast<int64_t>(rng() % 30), n = 1 + static_cast<int64_t>(rng() % 30);
    const int64_t k = 1 + static_cast<int64_t>(rng() % 200);
    const QuantizedTensor a = random_operand(rng, m, k, Format::kE1M2, ScaleMode::kFP32, BlockShape::k1x16, false);
    const QuantizedTensor b = random_operand(rng, n, k, Format::kE2M1, ScaleMode::kFP32, BlockShape::k1x16, false);
    SCOPED_TRACE(testing::Message() << "case " << i << " stall seed 0x" << std::hex << st.seed);
    const GemmStats one = *EventDevice(arch, st, EventDevice::Values::kNone).run(a, b).stats;
    const GemmStats tile = *EventDevice(arch.tile, st, EventDevice::Values::kNone).run(a, b).stats;
    EXPECT_EQ(one.cycles, tile.cycles);
    EXPECT_EQ(one.beats, tile.beats);
    EXPECT_EQ(one.stall_operand, tile.stall_operand);
    EXPECT_EQ(one.stall_output, tile.stall_output);
    EXPECT_EQ(one.stall_pipeline, tile.stall_pipeline);
    EXPECT_EQ(one.operand_bytes, tile.operand_bytes);
    EXPECT_EQ(one.peak_macs_per_cycle, tile.peak_macs_per_cycle);
    ++cases;
  }
  EXPECT_EQ(cases, 12);
}

TEST(ArchEvent, TilesShareTheOutputTilesRoundRobin) {
  const uint64_t seed = test_seed();
  std::mt19937_64 rng(seed + 6);
  int cases = 0;
  for (const int t : {1, 2, 3, 8, 64}) {
    ArchConfig arch;  // 4x4x16, latency 4
    arch.tiles = t;
    arch.tile.bandwidth = 1e9;
    arch.operand_buffer_bytes = largest_beat_bytes(arch.tile);
    const uint64_t nk = 3, L = 4, R = 4;
    const int64_t m = 24, n = 16, k = static_cast<int64_t>(nk) * 16;  // 6 x 4 = 24 output tiles
    const QuantizedTensor a = random_operand(rng, m, k, Format::kInt4, ScaleMode::kNVFP4, BlockShape::k1x16, true);
    const QuantizedTensor b = random_operand(rng, n, k, Format::kE2M1, ScaleMode::kNVFP4, BlockShape::k1x16, false);
    SCOPED_TRACE(testing::Message() << t << " tiles");
    const GemmResult r = EventDevice(arch).run(a, b);
    const GemmStats& s = *r.stats;
    // The busiest array tile has ceil(24 / t) output tiles, compute-bound.
    const uint64_t share = (24 + static_cast<uint64_t>(t) - 1) / static_cast<uint64_t>(t);
    EXPECT_EQ(s.cycles, nk + (share - 1) * std::max(nk, L + R) + L + R - 1);
    EXPECT_EQ(s.beats, 24 * nk);
    EXPECT_EQ(s.tiles, 24u);
    EXPECT_EQ(static_cast<uint64_t>(t) * s.cycles, s.beats + s.stall_operand + s.stall_output + s.stall_pipeline)
        << "every tile-cycle is a beat or one stall";
    EXPECT_EQ(s.peak_macs_per_cycle, static_cast<uint64_t>(t) * 4 * 4 * 16);
    const CheckResult c = check_against_golden(a, b, r);
    EXPECT_TRUE(c.ok()) << c.describe();
    ++cases;
  }
  // Stalls: every array tile draws its own coins; the accounting still closes.
  ArchConfig arch;
  arch.tiles = 5;
  arch.operand_buffer_bytes = largest_beat_bytes(arch.tile);
  const QuantizedTensor a = random_operand(rng, 37, 70, Format::kE2M1, ScaleMode::kNVFP4, BlockShape::k1x16, false);
  const QuantizedTensor b = random_operand(rng, 29, 70, Format::kE1M2, ScaleMode::kNVFP4, BlockShape::k1x16, false);
  const GemmStats s = *EventDevice(arch, StallConfig{0.3, 0.4, seed}, EventDevice::Values::kNone).run(a, b).stats;
  EXPECT_EQ(5 * s.cycles, s.beats + s.stall_operand + s.stall_output + s.stall_pipeline);
  EXPECT_GT(s.stall_output, 0u);
  EXPECT_EQ(cases, 5);
}

}  // namespace
}  // namespace nibble::sim
