// `nibble workload` end to end: a training step expands into the Fprop, Dgrad
// and Wgrad GEMMs of every linear of the trainer's blocks at the shapes of the
// recipe table's operand layout, quantized as the recipe says; each GEMM's
// timing is what `nibble gemm --arch` gives for that GEMM; totals add up; the
// format mask changes the energy of the DPU operations and nothing else;
// energy is count x entry of the table and absent without one; the flow's
// energy-actions.json prices the DPU at its entries (read here with the same
// JSON parser) and a choice it lacks exits 2; every bad input exits 2 naming
// the problem.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "../cli/run_command.h"
#include "nibble/io/json.h"
#include "nibble/limits.h"
#include "nibble/train/train_config.h"

namespace nibble::test {
namespace {

std::string tmp(const std::string& name) { return ::testing::TempDir() + "nibble_workload_cli_" + name; }

nlohmann::json read_json(const std::string& path) {
  std::ifstream f(path);
  return nlohmann::json::parse(f);
}

const char* kArch = R"({"tiles": 4, "tile": {"rows": 4, "cols": 4, "lanes": 16, "bandwidth": 128,
  "scale_modes": ["fp32", "nvfp4", "mx-floor"]}, "operand_buffer_bytes": 4096, "double_buffer": true,
  "sram": {"bytes": 65536, "bandwidth": 64, "latency": 8}, "dram": {"bandwidth": 16, "latency": 100},
  "clock_ghz": 1.0, "quantizer": {"elements_per_cycle": 32, "rht_elements_per_cycle": 16}})";

const char* kEnergy = R"({"schema": "nibble-energy-per-action/1", "unit": "pJ", "source": "test values",
  "dpu_block_op": {"e2m1": 1.0, "e2m1+e1m2+int4": 1.25},
  "per_byte": {"operand_buffer_read": 0.5, "sram_read": 1, "sram_write": 1, "dram_read": 10, "dram_write": 10,
               "accumulator": 0.5},
  "per_element": {"quantize": 0.25, "rht": 0.5}})";

const char* kModel = "--layers 2 --d-model 64 --ctx 16 --batch 2";

TEST(WorkloadCli, ATrainingStepIsEveryLinearsThreeGemms) {
  std::ofstream(tmp("arch.json")) << kArch;
  const CommandResult r = run_nibble("workload --arch " + tmp("arch.json") + " " + kModel +
                                     " --recipe e2m1 --recipe ufp4 --per-gemm --json " + tmp("step.json") + " --csv " +
                                     tmp("step.csv"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("energy         not computed"), std::string::npos) << r.output;
  const nlohmann::json j = read_json(tmp("step.json"));
  ASSERT_EQ(j["configurations"].size(), 2u);
  const int64_t T = 2 * 16, d = 64;
  // [out, in] of qkv, proj, fc1, fc2 (the trainer's blocks).
  const int64_t lin[4][2] = {{3 * d, d}, {d, d}, {4 * d, d}, {d, 4 * d}};
  const char* names[4] = {"qkv", "proj", "fc1", "fc2"};
  int checked = 0;
  for (const nlohmann::json& c : j["configurations"]) {
    const bool ufp4 = c["recipe"] == "ufp4";
    const nlohmann::json& g = c["gemms"];
    ASSERT_EQ(g.size(), 4u * 3u + 6u + 3u)
        << "12 GEMMs of the linears (2 layers merged), attention's 6 batched products and the head's 3";
    uint64_t cycles = 0, quant = 0, rht = 0, qcycles = 0;
    for (int l = 0; l < 4; ++l) {
      const int64_t out = lin[l][0], in = lin[l][1];
      const int64_t want[3][3] = {{T, out, in}, {T, in, out}, {out, in, T}};  // fprop, dgrad, wgrad
      for (int gi = 0; gi < 3; ++gi) {
        const nlohmann::json& x = g[static_cast<size_t>(l * 3 + gi)];
        SCOPED_TRACE(x.dump());
        EXPECT_EQ(x["name"].get<std::string>().rfind(names[l], 0), 0u);
        EXPECT_EQ(x["m"], want[gi][0]);
        EXPECT_EQ(x["n"], want[gi][1]);
        EXPECT_EQ(x["k"], want[gi][2]);
        EXPECT_EQ(x["count"], 2);
        EXPECT_EQ(x["layers"], "0-1");
        EXPECT_EQ(x["format_a"], ufp4 ? "e1m2" : "e2m1");
        EXPECT_EQ(x["scale"], "fp32");
        const uint64_t elements = static_cast<uint64_t>(want[gi][0] * want[gi][2] + want[gi][1] * want[gi][2]);
        EXPECT_EQ(x["actions_per_run"]["quantize"], elements);
        // e2m1: RHT16 on wgrad only; ufp4: on all three.
        EXPECT_EQ(x["actions_per_run"]["rht"], (ufp4 || gi == 2) ? elements : 0u);
        cycles += x["per_run"]["cycles"].get<uint64_t>() * 2;
        quant += elements * 2;
        rht += x["actions_per_run"]["rht"].get<uint64_t>() * 2;
        qcycles += 2 * ((elements + 31) / 32 + (x["actions_per_run"]["rht"].get<uint64_t>() + 15) / 16);
        ++checked;
      }
    }
    // Attention per layer, sequence (T / ctx) and head (d_head = 64 / 4): six products of
    // ctx x ctx x d_head MACs each, in BF16; the head's three of T x vocab x d.
    const uint64_t heads = 4, ctx = 16, d_head = d / 4;
    uint64_t bf16_macs = 0;
    for (int a = 0; a < 6; ++a) {
      const nlohmann::json& x = g[static_cast<size_t>(12 + a)];
      SCOPED_TRACE(x.dump());
      EXPECT_EQ(x["name"].get<std::string>().rfind("attn.", 0), 0u);
      EXPECT_TRUE(x["bf16"].get<bool>());
      EXPECT_EQ(x["count"].get<uint64_t>(), 2 * (T / ctx) * heads);
      EXPECT_EQ(x["m"].get<uint64_t>() * x["n"].get<uint64_t>() * x["k"].get<uint64_t>(), ctx * ctx * d_head);
      bf16_macs += x["m"].get<uint64_t>() * x["n"].get<uint64_t>() * x["k"].get<uint64_t>() * x["count"].get<uint64_t>();
    }
    for (int h = 0; h < 3; ++h) {
      const nlohmann::json& x = g[static_cast<size_t>(18 + h)];
      EXPECT_TRUE(x["bf16"].get<bool>());
      EXPECT_EQ(x["layers"], "head");
      bf16_macs += x["m"].get<uint64_t>() * x["n"].get<uint64_t>() * x["k"].get<uint64_t>();
    }
    EXPECT_EQ(bf16_macs, 6 * 2 * static_cast<uint64_t>(T) * ctx * d + 3 * static_cast<uint64_t>(T) * train::kVocabSize * d);
    EXPECT_EQ(c["total"]["bf16_macs"].get<uint64_t>(), bf16_macs);
    EXPECT_EQ(c["total"]["gemm_cycles"], cycles);
    EXPECT_EQ(c["total"]["actions"]["quantize"], quant);
    EXPECT_EQ(c["total"]["actions"]["rht"], rht);
    EXPECT_EQ(c["total"]["quantizer_cycles"], qcycles) << "ceil(elements / 32) + ceil(RHT elements / 16) per run";
    EXPECT_GT(c["total"]["stats"]["traffic"]["dram_read_bytes"].get<uint64_t>(), 0u);
  }
  EXPECT_EQ(checked, 24);
  // The Fprop weights are the trainer's quantized linears: their elements are the parameter count
  // train_config.h gives for the model (and a recorded trainer run confirms, tests/train/study_test.cpp).
  train::ModelConfig model;
  model.layers = 2;
  model.d_model = 64;
  model.ctx = 16;
  uint64_t weights = 0;
  for (const nlohmann::json& x : j["configurations"][0]["gemms"]) {
    const std::string n = x["name"];
    if (x["layers"] == "head" || n.substr(n.find('.') + 1) != "fprop") continue;
    weights += x["n"].get<uint64_t>() * x["k"].get<uint64_t>() * x["count"].get<uint64_t>();
  }
  EXPECT_EQ(weights, static_cast<uint64_t>(train::quantized_linear_parameters(model)));
  std::ifstream csv(tmp("step.csv"));
  int lines = 0;
  size_t columns = 0;
  for (std::string line; std::getline(csv, line);) {
    const size_t fields = static_cast<size_t>(std::count(line.begin(), line.end(), ',')) + 1;
    if (lines++ == 0) columns = fields;
    EXPECT_EQ(fields, columns) << line;
  }
  EXPECT_EQ(lines, 1 + 2 * 21);
  EXPECT_EQ(columns, 31u);
}

TEST(WorkloadCli, EachGemmIsTheGemmCommandsTiming) {
  std::ofstream(tmp("arch2.json")) << kArch;
  const CommandResult r =
      run_nibble("workload --arch " + tmp("arch2.json") + " " + kModel + " --recipe nvfp4 --json " + tmp("nv.json"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const nlohmann::json g = read_json(tmp("nv.json"))["configurations"][0]["gemms"];
  int compared = 0;
  for (const nlohmann::json& x : g) {
    if (x["bf16"].get<bool>() || x["count"] != 1) continue;  // nvfp4 keeps the last block in BF16
    const std::string args = "gemm --backend event-timing --arch " + tmp("arch2.json") + " --m " + x["m"].dump() +
                             " --n " + x["n"].dump() + " --k " + x["k"].dump() + " --format-a " +
                             x["format_a"].get<std::string>() + " --format-b " + x["format_b"].get<std::string>() +
                             " --scale " + x["scale"].get<std::string>() + " --block " + x["block_a"].get<std::string>() +
                             " --json " + tmp("one.json");
    if (x["block_a"] != x["block_b"]) continue;  // nibble gemm takes one block shape for both operands
    const CommandResult one = run_nibble(args);
    ASSERT_EQ(one.exit_code, 0) << one.output;
    const nlohmann::json o = read_json(tmp("one.json"));
    EXPECT_EQ(o["cycles"], x["per_run"]["cycles"]) << x.dump();
    EXPECT_EQ(o["stalls"], x["per_run"]["stalls"]) << x.dump();
    EXPECT_EQ(o["traffic"], x["per_run"]["traffic"]) << x.dump();
    ++compared;
  }
  EXPECT_GT(compared, 0);
}

TEST(WorkloadCli, TheMaskChangesTheDpuEnergyAndNothingElse) {
  std::ofstream(tmp("arch3.json")) << kArch;
  std::ofstream(tmp("energy.json")) << kEnergy;
  const CommandResult r = run_nibble("workload --arch " + tmp("arch3.json") + " " + kModel +
                                     " --recipe e2m1 --mask e2m1 --mask e2m1,e1m2,int4 --energy " + tmp("energy.json") +
                                     " --json " + tmp("masks.json"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const nlohmann::json c = read_json(tmp("masks.json"))["configurations"];
  ASSERT_EQ(c.size(), 2u);
  EXPECT_EQ(c[0]["mask"], "e2m1");
  EXPECT_EQ(c[1]["mask"], "e2m1+e1m2+int4");
  EXPECT_EQ(c[0]["total"]["stats"], c[1]["total"]["stats"]) << "formats do not change timing or traffic";
  const nlohmann::json& acts = c[0]["total"]["actions"];
  const double rest = acts["operand_buffer_read"].get<double>() * 0.5 + acts["sram_read"].get<double>() +
                      acts["sram_write"].get<double>() + acts["dram_read"].get<double>() * 10 +
                      acts["dram_write"].get<double>() * 10 + acts["accumulator"].get<double>() * 0.5 +
                      acts["quantize"].get<double>() * 0.25 + acts["rht"].get<double>() * 0.5;
  const double dpu = acts["dpu_block_op"].get<double>();
  EXPECT_DOUBLE_EQ(c[0]["total"]["energy"]["total_pj"].get<double>(), dpu * 1.0 + rest);
  EXPECT_DOUBLE_EQ(c[1]["total"]["energy"]["total_pj"].get<double>(), dpu * 1.25 + rest);
  EXPECT_TRUE(c[0]["total"]["energy"]["unpriced"].empty());
}

const std::string kFlowFile = std::string(NIBBLE_SOURCE_DIR) + "/docs/results/energy-actions.json";

// The flow file's block energy of one lane design, scale set, operands, mask literal and format, read here.
double flow_entry(const std::string& lane, const std::string& scales, const std::string& operands,
                  const std::string& mask_literal, const std::string& format) {
  const nlohmann::json file = io::parse_json(io::read_text_file(kFlowFile, limits::kMaxJsonBytes));
  for (const nlohmann::json& a : file["actions"]) {
    if (a["action"] == "block" && a["lane_design"] == lane && a["scale_formats"] == scales &&
        a["operands"] == operands && a["format_mask"] == mask_literal && a["operand_format"] == format) {
      return a["energy"].get<double>();
    }
  }
  ADD_FAILURE() << kFlowFile << " has no entry " << lane << " " << scales << " " << operands << " " << mask_literal
                << " " << format;
  return 0;
}

TEST(WorkloadCli, TheFlowsEnergyFilePricesTheDpu) {
  std::ofstream(tmp("arch_flow.json")) << kArch;
  std::ofstream(tmp("bytes.json")) << R"({"schema": "nibble-energy-per-action/1", "unit": "pJ", "source": "bytes",
    "per_byte": {"dram_read": 10}})";
  // The default choice: the RTL's lane design, the tile's scale formats (all), Gaussian operands.
  const CommandResult r = run_nibble("workload --arch " + tmp("arch_flow.json") + " " + kModel +
                                     " --recipe e2m1 --recipe ufp4 --energy " +
                                     kFlowFile + " --energy " + tmp("bytes.json") + " --json " + tmp("flow.json"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("lane design split-short-shift, scale formats all, gaussian operands"), std::string::npos)
      << r.output;
  const nlohmann::json j = read_json(tmp("flow.json"));
  const nlohmann::json& c = j["configurations"];
  ASSERT_EQ(c.size(), 2u);
  int checked = 0;
  for (const nlohmann::json& x : c) {
    SCOPED_TRACE(x["recipe"].dump() + " " + x["mask"].dump());
    const std::string format = x["recipe"] == "ufp4" ? "e1m2" : "e2m1";
    EXPECT_EQ(x["mask"], "e2m1+e1m2+int4");
    const double pj = flow_entry("split-short-shift", "all", "gaussian", "3'b111", format);
    const nlohmann::json& e = x["total"]["energy"];
    const nlohmann::json& acts = x["total"]["actions"];
    EXPECT_DOUBLE_EQ(e["by_action_pj"]["dpu_block_op"].get<double>(), acts["dpu_block_op"].get<double>() * pj);
    EXPECT_DOUBLE_EQ(e["by_action_pj"]["dram_read"].get<double>(), acts["dram_read"].get<double>() * 10);
    EXPECT_DOUBLE_EQ(e["total_pj"].get<double>(), acts["dpu_block_op"].get<double>() * pj + acts["dram_read"].get<double>() * 10);
    // The table prices neither the SRAM nor the quantizer: named, not zero.
    const std::vector<std::string> unpriced = e["unpriced"];
    EXPECT_NE(std::find(unpriced.begin(), unpriced.end(), "quantize"), unpriced.end());
    EXPECT_EQ(std::count_if(unpriced.begin(), unpriced.end(), [](const std::string& u) { return u.rfind("dpu", 0) == 0; }), 0);
    for (const nlohmann::json& g : x["gemms"]) {
      if (g["bf16"].get<bool>()) continue;
      EXPECT_DOUBLE_EQ(g["energy_per_run"]["by_action_pj"]["dpu_block_op"].get<double>(),
                       g["actions_per_run"]["dpu_block_op"].get<double>() * pj);
    }
    ++checked;
  }
  EXPECT_EQ(checked, 2);
  // Another lane design and operand statistics, chosen by flag, on the E2M1-only mask.
  const CommandResult own = run_nibble("workload --arch " + tmp("arch_flow.json") + " " + kModel +
                                       " --recipe e2m1 --mask e2m1 --energy " + kFlowFile +
                                       " --energy-lane-design own-unit --energy-operands rht --json " + tmp("own.json"));
  ASSERT_EQ(own.exit_code, 0) << own.output;
  const nlohmann::json o = read_json(tmp("own.json"))["configurations"][0]["total"];
  EXPECT_DOUBLE_EQ(o["energy"]["by_action_pj"]["dpu_block_op"].get<double>(),
                   o["actions"]["dpu_block_op"].get<double>() * flow_entry("own-unit", "all", "rht", "3'b001", "e2m1"));
}

TEST(WorkloadCli, TheArchitectureFileChoosesTheEnergyAndFlagsOverrideIt) {
  // The architecture file sits in its own directory beside a copy of the flow's file, named relatively.
  const std::string dir = tmp("archdir/");
  std::filesystem::create_directories(dir);
  std::filesystem::copy_file(kFlowFile, dir + "flow.json", std::filesystem::copy_options::overwrite_existing);
  std::string arch = kArch;
  arch.insert(arch.rfind('}'), R"(, "energy": {"files": ["flow.json"], "lane_design": "own-unit", "operands": "rht"})");
  std::ofstream(dir + "arch.json") << arch;
  std::ofstream(tmp("bytes_only.json")) << R"({"schema": "nibble-energy-per-action/1", "unit": "pJ", "source": "b",
    "per_byte": {"dram_read": 10}})";
  const auto total = [&](const std::string& extra, const std::string& out) {
    const CommandResult r = run_nibble("workload --arch " + dir + "arch.json " + kModel + " --recipe e2m1 --mask e2m1" +
                                       extra + " --json " + tmp(out));
    EXPECT_EQ(r.exit_code, 0) << r.output;
    return read_json(tmp(out))["configurations"][0]["total"];
  };
  // The file's choice: own-unit, rht operands, the scale formats by default.
  const nlohmann::json own = total("", "arch_energy.json");
  EXPECT_DOUBLE_EQ(own["energy"]["by_action_pj"]["dpu_block_op"].get<double>(),
                   own["actions"]["dpu_block_op"].get<double>() * flow_entry("own-unit", "all", "rht", "3'b001", "e2m1"));
  // A flag overrides its key only: the operands stay the file's.
  const nlohmann::json common = total(" --energy-lane-design common-unit", "arch_energy_flag.json");
  EXPECT_DOUBLE_EQ(common["energy"]["by_action_pj"]["dpu_block_op"].get<double>(),
                   common["actions"]["dpu_block_op"].get<double>() *
                       flow_entry("common-unit", "all", "rht", "3'b001", "e2m1"));
  // --energy replaces the file's energy, its choice included: a table alone prices the bytes, not the DPU.
  const nlohmann::json bytes = total(" --energy " + tmp("bytes_only.json"), "arch_energy_table.json");
  EXPECT_DOUBLE_EQ(bytes["energy"]["total_pj"].get<double>(), bytes["actions"]["dram_read"].get<double>() * 10);
  const std::vector<std::string> unpriced = bytes["energy"]["unpriced"];
  EXPECT_NE(std::find(unpriced.begin(), unpriced.end(), "dpu_block_op (mask e2m1)"), unpriced.end());
  EXPECT_EQ(read_json(tmp("arch_energy.json"))["energy_table"]["paths"][0],
            std::filesystem::path(dir + "flow.json").lexically_normal().string());
  // --no-energy counts and prices nothing, the file's energy notwithstanding.
  const nlohmann::json none = total(" --no-energy", "arch_energy_none.json");
  EXPECT_FALSE(none.contains("energy"));
  EXPECT_EQ(none["actions"], own["actions"]);

  // Bad energy settings in the file: exit 2 naming them.
  std::string missing = kArch, table_choice = kArch;
  missing.insert(missing.rfind('}'), R"(, "energy": {"files": ["no_such_energy.json"]})");
  table_choice.insert(table_choice.rfind('}'),
                      R"(, "energy": {"files": [")" + tmp("bytes_only.json") + R"("], "operands": "rht"})");
  std::ofstream(dir + "missing.json") << missing;
  std::ofstream(dir + "table_choice.json") << table_choice;
  std::string bad_design = kArch;
  bad_design.insert(bad_design.rfind('}'), R"(, "energy": {"files": ["flow.json"], "lane_design": "wide"})");
  std::ofstream(dir + "bad_design.json") << bad_design;
  const std::vector<UsageCase> cases = {
      {"--arch " + dir + "missing.json " + kModel, dir + "no_such_energy.json"},
      {"--arch " + dir + "table_choice.json " + kModel, "chooses among the entries of the flow's energy file"},
      {"--arch " + dir + "bad_design.json " + kModel, "'energy.lane_design' unknown lane design \"wide\""},
      {"--arch " + dir + "arch.json " + kModel + " --energy-operands uniform",
       "no DPU block energy for operand statistics 'uniform'"},
      {"--arch " + dir + "arch.json " + kModel + " --no-energy --energy-operands rht", "--no-energy"},
  };
  EXPECT_EQ(expect_usage_errors("workload", cases), static_cast<int>(cases.size()));
}

// The flow's file with block entries for two-format streams added (the default choice, mask e2m1+e1m2+int4), at
// energies no single-format entry has, so that a GEMM priced at the wrong pair shows.
nlohmann::json flow_with_pairs(const std::vector<std::pair<std::string, std::string>>& pairs) {
  nlohmann::json file = io::parse_json(io::read_text_file(kFlowFile, limits::kMaxJsonBytes));
  nlohmann::json added = nlohmann::json::array();
  for (const auto& [fa, fb] : pairs) {
    nlohmann::json e;
    for (const nlohmann::json& a : file["actions"]) {
      if (a["action"] == "block" && a["lane_design"] == "split-short-shift" && a["scale_formats"] == "all" &&
          a["operands"] == "gaussian" && a["format_mask"] == "3'b111" && a["operand_format"] == fa) {
        e = a;
      }
    }
    EXPECT_FALSE(e.is_null()) << kFlowFile << " has no e2m1+e1m2+int4 entry for " << fa;
    e.erase("operand_format");
    e["operand_format_a"] = fa;
    e["operand_format_b"] = fb;
    e["energy"] = 0.5 * (flow_entry("split-short-shift", "all", "gaussian", "3'b111", fa) +
                         flow_entry("split-short-shift", "all", "gaussian", "3'b111", fb)) +
                  7.0;
    added.push_back(e);
  }
  for (const nlohmann::json& e : added) file["actions"].push_back(e);
  return file;
}

TEST(WorkloadCli, MixedFormatGemmsArePricedAtTheirOwnOperandFormats) {
  std::ofstream(tmp("arch_mixed.json")) << kArch;
  const nlohmann::json flow = flow_with_pairs({{"e2m1", "e1m2"}, {"e1m2", "int4"}});
  std::ofstream(tmp("flow_pairs.json")) << flow.dump(1);
  std::ofstream(tmp("bytes_mixed.json")) << R"({"schema": "nibble-energy-per-action/1", "unit": "pJ", "source": "b",
    "per_byte": {"dram_read": 10}})";
  // dY in E1M2 against W in E2M1 and the like: two formats per GEMM, fp32 and nvfp4 scales.
  std::ofstream(tmp("mixed_list.json")) << R"({"gemms": [
    {"name": "same", "m": 64, "n": 32, "k": 128, "format_a": "e2m1", "format_b": "e2m1", "count": 2},
    {"name": "mixed", "m": 48, "n": 80, "k": 96, "format_a": "e2m1", "format_b": "e1m2", "scale": "fp32", "count": 3},
    {"name": "mixed2", "m": 16, "n": 64, "k": 256, "format_a": "e1m2", "format_b": "int4"}]})";
  const CommandResult r = run_nibble("workload --arch " + tmp("arch_mixed.json") + " --gemms " + tmp("mixed_list.json") +
                                     " --energy " + tmp("flow_pairs.json") + " --energy " + tmp("bytes_mixed.json") +
                                     " --json " + tmp("mixed_out.json"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const nlohmann::json c = read_json(tmp("mixed_out.json"))["configurations"][0];
  EXPECT_EQ(c["mask"], "e2m1+e1m2+int4");
  // Each GEMM's block energy as the test reads it from the file it wrote: the entry of its own (A, B) formats.
  const auto entry = [&](const std::string& fa, const std::string& fb) {
    for (const nlohmann::json& a : flow["actions"]) {
      if (a["action"] != "block" || a["lane_design"] != "split-short-shift" || a["scale_formats"] != "all" ||
          a["operands"] != "gaussian" || a["format_mask"] != "3'b111") {
        continue;
      }
      const bool one = a.contains("operand_format");
      if ((one && fa == fb && a["operand_format"] == fa) ||
          (!one && a["operand_format_a"] == fa && a["operand_format_b"] == fb)) {
        return a["energy"].get<double>();
      }
    }
    ADD_FAILURE() << "no entry " << fa << " x " << fb;
    return 0.0;
  };
  double dpu = 0, dram = 0;
  int gemms = 0;
  for (const nlohmann::json& g : c["gemms"]) {
    SCOPED_TRACE(g["name"].dump());
    const double pj = entry(g["format_a"], g["format_b"]);
    const double ops = g["actions_per_run"]["dpu_block_op"].get<double>();
    const double dram_bytes = g["actions_per_run"]["dram_read"].get<double>();
    const nlohmann::json& e = g["energy_per_run"];
    EXPECT_DOUBLE_EQ(e["by_action_pj"]["dpu_block_op"].get<double>(), ops * pj);
    EXPECT_DOUBLE_EQ(e["total_pj"].get<double>(), ops * pj + dram_bytes * 10);
    dpu += g["count"].get<double>() * ops * pj;
    dram += g["count"].get<double>() * dram_bytes * 10;
    // Timed as the GEMM it is: nibble gemm with the same two formats gives the same cycles, stalls and bytes.
    const CommandResult one = run_nibble(
        "gemm --backend event-timing --arch " + tmp("arch_mixed.json") + " --m " + g["m"].dump() + " --n " +
        g["n"].dump() + " --k " + g["k"].dump() + " --format-a " + g["format_a"].get<std::string>() + " --format-b " +
        g["format_b"].get<std::string>() + " --scale " + g["scale"].get<std::string>() + " --block " +
        g["block_a"].get<std::string>() + " --json " + tmp("mixed_one.json"));
    EXPECT_EQ(one.exit_code, 0) << one.output;
    const nlohmann::json o = read_json(tmp("mixed_one.json"));
    EXPECT_EQ(o["cycles"], g["per_run"]["cycles"]);
    EXPECT_EQ(o["stalls"], g["per_run"]["stalls"]);
    EXPECT_EQ(o["traffic"], g["per_run"]["traffic"]);
    ++gemms;
  }
  EXPECT_EQ(gemms, 3);
  const nlohmann::json& total = c["total"]["energy"];
  EXPECT_DOUBLE_EQ(total["by_action_pj"]["dpu_block_op"].get<double>(), dpu);
  EXPECT_DOUBLE_EQ(total["total_pj"].get<double>(), dpu + dram);
  const std::vector<std::string> unpriced = total["unpriced"];
  EXPECT_EQ(std::count_if(unpriced.begin(), unpriced.end(), [](const std::string& u) { return u.rfind("dpu", 0) == 0; }), 0);

  // A pair the file has no entry for is refused, naming it, before anything runs; so is the reverse order of a
  // pair it has (the DPU's A and B sides are not assumed alike).
  std::ofstream(tmp("mixed_reverse.json")) << R"({"gemms": [{"name": "dgrad", "m": 16, "n": 16, "k": 64,
    "format_a": "e1m2", "format_b": "e2m1"}]})";
  const std::vector<UsageCase> cases = {
      {"--arch " + tmp("arch_mixed.json") + " --gemms " + tmp("mixed_list.json") + " --energy " + kFlowFile,
       "GEMM 'mixed' has operands e2m1 x e1m2 (A x B), and the flow's file has no DPU block energy for them on mask "
       "e2m1+e1m2+int4 with the choice made (it has: e2m1 x e2m1, e1m2 x e1m2, int4 x int4)"},
      {"--arch " + tmp("arch_mixed.json") + " --gemms " + tmp("mixed_reverse.json") + " --energy " +
           tmp("flow_pairs.json"),
       "GEMM 'dgrad' has operands e1m2 x e2m1"},
  };
  EXPECT_EQ(expect_usage_errors("workload", cases), static_cast<int>(cases.size()));
}

TEST(WorkloadCli, AGemmListFile) {
  std::ofstream(tmp("arch4.json")) << kArch;
  std::ofstream(tmp("list.json")) << R"({"gemms": [
    {"name": "a", "m": 64, "n": 48, "k": 256, "format_a": "int4", "format_b": "e1m2", "scale": "fp32", "count": 3},
    {"m": 16, "n": 16, "k": 32, "rht": true}]})";
  const CommandResult r =
      run_nibble("workload --arch " + tmp("arch4.json") + " --gemms " + tmp("list.json") + " --json " + tmp("list_out.json"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const nlohmann::json c = read_json(tmp("list_out.json"))["configurations"][0];
  ASSERT_EQ(c["gemms"].size(), 2u);
  EXPECT_EQ(c["gemms"][0]["name"], "a");
  EXPECT_EQ(c["gemms"][1]["name"], "gemms[1]");
  EXPECT_EQ(c["gemms"][1]["actions_per_run"]["rht"], 16 * 32 * 2);
  EXPECT_EQ(c["total"]["gemm_cycles"], c["gemms"][0]["per_run"]["cycles"].get<uint64_t>() * 3 +
                                           c["gemms"][1]["per_run"]["cycles"].get<uint64_t>());
}

TEST(WorkloadCli, BadInputExitsTwoWithAMessage) {
  std::ofstream(tmp("arch5.json")) << kArch;
  std::ofstream(tmp("e2m1_arch.json")) << R"({"tiles": 2, "tile": {"formats": ["e2m1"]}, "operand_buffer_bytes": 96})";
  std::ofstream(tmp("bad_list.json")) << R"({"gemms": [{"m": 4, "n": 4, "k": 0}]})";
  std::ofstream(tmp("bad_list2.json")) << R"({"gemms": [{"m": 4, "n": 4, "k": 16, "bias": 1}]})";
  std::ofstream(tmp("bad_list3.json")) << R"({"gemms": [{"m": 4, "n": 4, "k": 16, "format_a": "fp8"}]})";
  std::ofstream(tmp("bad_list4.json")) << R"({"gemms": [{"m": 4, "n": 4, "k": 16, "m": 8}]})";
  std::ofstream(tmp("bad_energy.json")) << R"({"schema": "nibble-energy-per-action/1", "unit": "pJ"})";
  std::ofstream(tmp("energy5.json")) << kEnergy;
  const std::string arch = " --arch " + tmp("arch5.json");
  const std::vector<UsageCase> cases = {
      {"", "--arch"},
      {"--arch /nonexistent/arch.json", "/nonexistent/arch.json"},
      {"--arch " + tmp("e2m1_arch.json") + " " + kModel + " --recipe ufp4", "not in the tile's formats"},
      {arch + " " + kModel + " --mask e2m1 --recipe ufp4-int4", "'int4' is not in the tile's formats"},
      {arch + " " + kModel + " --recipe fp8", "--recipe: unknown recipe 'fp8'"},
      {arch + " " + kModel + " --mask e2m1,fp6", "--mask: unknown format 'fp6'"},
      {arch + " " + kModel + " --mask e2m1,e2m1", "given twice"},
      {arch + " --layers 0", "--layers"},
      {arch + " --d-model 48", "multiple of 32"},
      {arch + " --size s40m", "--size"},
      {arch + " --study /nonexistent/study.json --size s40m", "/nonexistent/study.json"},
      {arch + " --gemms " + tmp("bad_list.json"), "'gemms[0].k' must be at least 1"},
      {arch + " --gemms " + tmp("bad_list2.json"), "'gemms[0].bias' is an unknown key"},
      {arch + " --gemms " + tmp("bad_list3.json"), "unknown name \"fp8\""},
      {arch + " --gemms " + tmp("bad_list4.json"), "'m' is given twice"},
      {arch + " --gemms " + tmp("bad_list.json") + " --recipe e2m1", "--gemms"},
      {arch + " " + kModel + " --energy " + tmp("bad_energy.json"), "'source' is missing"},
      {arch + " " + kModel + " --energy " + kFlowFile + " --energy-lane-design bogus",
       "no DPU block energy for lane design 'bogus'"},
      {arch + " " + kModel + " --energy " + kFlowFile + " --energy-operands uniform",
       "no DPU block energy for operand statistics 'uniform'"},
      {arch + " " + kModel + " --energy " + kFlowFile + " --energy-scale-formats fp32",
       "no DPU block energy for scale-format set 'fp32'"},
      {arch + " " + kModel + " --energy " + kFlowFile + " --mask e2m1,e1m2",
       "no DPU block energy for mask e2m1+e1m2"},
      {arch + " " + kModel + " --energy-lane-design split", "give it with --energy"},
      {arch + " " + kModel + " --energy " + kFlowFile + " --energy " + kFlowFile, "two hardware-cost flow"},
      {arch + " " + kModel + " --energy " + kFlowFile + " --energy " + tmp("energy5.json"),
       "'dpu_block_op' is priced by both"},
      {arch + " --layers 256 --d-model 16384 --ctx 65536 --batch 1048576", "2^36"},
  };
  const int ran = expect_usage_errors("workload", cases);
  std::printf("bad workload invocations: %d\n", ran);
  EXPECT_EQ(ran, static_cast<int>(cases.size()));
}

}  // namespace
}  // namespace nibble::test
