#include "nibble/power/energy_flow.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <exception>
#include <filesystem>
#include <iterator>
#include <map>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "nibble/formats.h"
#include "nibble/io/json.h"
#include "nibble/io/shell.h"
#include "nibble/io/tensor_file.h"
#include "nibble/power/area_flow.h"
#include "nibble/power/dpu_stream.h"
#include "nibble/power/gate_sim.h"

namespace nibble::power {

using io::find_executable;
using io::run_command;
using io::shell_quote;
namespace fs = std::filesystem;

namespace {

// Horowitz, "Computing's energy problem", ISSCC 2014, 45 nm, 0.9 V: energy per operation.
struct Published {
  const char* top;
  int n;
  const char* label;
  double pj;
};
constexpr Published kHorowitz[] = {
    {"calib_add", 8, "8-bit int add", 0.03},
    {"calib_add", 32, "32-bit int add", 0.1},
    {"calib_mul", 8, "8-bit int mult", 0.2},
    {"calib_mul", 32, "32-bit int mult", 3.1},
};

// Scalar floating-point MACs of rtl/synth/calib_fpmac.v: acc <= fma(a, b, acc) into an FP32
// register, one rounding. Horowitz lists no FP8 or BF16 operator; for BF16 the nearest
// published figure is composed from his FP16 multiply and FP32 add.
struct FpMac {
  const char* label;
  const char* format;
  int exp_bits, man_bits;
  double pj;  // published (composed) energy per MAC, < 0 where there is none
};
constexpr FpMac kFpMacs[] = {
    {"E4M3 MAC, FP32 acc", "e4m3", 4, 3, -1.0},
    {"BF16 MAC, FP32 acc", "bf16", 8, 7, 1.1 + 0.9},
};

// A random finite operand code: E4M3 any code but the two NaNs (S.1111.111); BF16 a random
// sign and mantissa with the exponent within 2^-9 .. 2^8, the binades E4M3 spans.
uint32_t finite_operand(const FpMac& m, std::mt19937_64& rng) {
  if (m.exp_bits == 4) {
    uint32_t c;
    do {
      c = static_cast<uint32_t>(rng() & 0xFFu);
    } while ((c & 0x7Fu) == 0x7Fu);
    return c;
  }
  return static_cast<uint32_t>(rng() & 0x807Fu) | (static_cast<uint32_t>(127 - 9 + rng() % 18) << 7);
}

struct Result {
  const LaneDesignInfo* design;
  const ScaleConfig* scales;
  const Config* config;
  Format format;
  std::string dist;
  size_t blocks;
  EnergyReport e;
  double area = 0;
  std::string area_unit;
  long flops = 0;
  // --breakdown: the same stream on the hierarchical netlist, energy per sub-block (run total)
  std::vector<std::pair<std::string, double>> sub_blocks;
  double hier_total = 0;
};

// An idle cycle of one synthesized DPU (valid_i low, inputs held, pipeline drained): the
// clock of every flop and leakage; for --actions.
struct Idle {
  const LaneDesignInfo* design;
  const ScaleConfig* scales;
  const Config* config;
  double per_cycle;
};

// One operand stream through the operand register file (OperandRfNetlist): energy per cycle
// of one write and one read, for the A and for the B file.
struct Staging {
  double a = 0, b = 0;              // per cycle
  double clock_a = 0, clock_b = 0;  // of which the flops' clock pins
  size_t cycles = 0;
};
using StreamKey = std::tuple<const ScaleConfig*, Format, std::string>;  // scale formats, format, operands

Distribution parse_dist(const std::string& s) {
  if (s == "gaussian") return Distribution::kGaussian;
  if (s == "student-t") return Distribution::kStudentT;
  if (s == "rht") return Distribution::kRht;
  throw FlowError(fmt::format("--dists: unknown distribution '{}' (gaussian, student-t, rht)", s));
}

std::vector<float> read_rows(const std::string& spec, int64_t k) {
  // FILE or FILE:NAME (a safetensors tensor); rows of k elements (flattened, truncated)
  std::string path = spec, tname;
  const size_t colon = spec.rfind(':');
  if (colon != std::string::npos && !fs::exists(spec)) {
    path = spec.substr(0, colon);
    tname = spec.substr(colon + 1);
  }
  if (!fs::is_regular_file(path)) throw FlowError(fmt::format("--tensor: no such file: {}", path));
  io::Tensor t;
  try {
    t = io::read_tensor(path, tname);
  } catch (const std::exception& e) {
    throw FlowError(fmt::format("--tensor {}: {}", spec, e.what()));
  }
  const size_t rows = t.data.size() / static_cast<size_t>(k);
  if (rows == 0) throw FlowError(fmt::format("--tensor {}: fewer than k = {} elements", spec, k));
  t.data.resize(rows * static_cast<size_t>(k));
  for (float v : t.data) {
    if (!std::isfinite(v)) throw FlowError(fmt::format("--tensor {}: non-finite element", spec));
  }
  return t.data;
}

void say(const Progress& progress, const std::string& line) {
  if (progress) progress(line);
}

}  // namespace

EnergyFlowReport run_energy(const EnergyOptions& a) {
  EnergyFlowReport report;
  const std::vector<const Config*> configs = parse_configs(a.configs);
  const std::vector<const LaneDesignInfo*> designs = parse_lane_designs(a.lane_designs, "--lane-design");
  const std::vector<const ScaleConfig*> scale_sets = parse_scale_configs(a.scales, "--scales");
  std::vector<std::string> dists;
  for (const std::string& d : split_list(a.dists)) {
    if (d.empty()) continue;
    parse_dist(d);
    dists.push_back(d);
  }
  std::vector<float> user_a, user_b;
  if (!a.tensor_a.empty()) {
    user_a = read_rows(a.tensor_a, a.k);
    if (!a.tensor_b.empty()) user_b = read_rows(a.tensor_b, a.k);
    dists.push_back("user");
  } else if (!a.tensor_b.empty()) {
    throw FlowError("--tensor-b needs --tensor");
  }
  if (dists.empty()) throw FlowError("--dists: nothing to run");
  if (a.blocks < 16 || a.blocks > 1000000) throw FlowError("--blocks: want 16 .. 1000000");
  if (a.k <= 0 || a.k % 16 != 0) throw FlowError(fmt::format("--k: want a positive multiple of 16, got {}", a.k));
  if (!(a.clock_ns > 0)) throw FlowError("--clock-ns: want > 0");
  if (a.calibration && !a.tile.empty()) throw FlowError("--tile: not with --calibration (it has no array)");
  const TileShape array = a.tile.empty() ? TileShape{kLevelArrayRows, kLevelArrayCols} : parse_tile(a.tile);
  if (!a.liberty.empty() && !fs::is_regular_file(a.liberty)) {
    throw FlowError(fmt::format("--liberty: no such file: {}", a.liberty));
  }
  const std::string yosys = find_executable(a.yosys.empty() ? default_yosys() : a.yosys);
  if (yosys.empty()) {
    throw FlowError("yosys not found: install Yosys (Debian: apt-get install yosys) or pass --yosys PATH");
  }
  const std::string python = find_executable(a.python.empty() ? "python3" : a.python);
  if (python.empty()) throw FlowError("python3 not found; pass --python PATH");
  const fs::path synth_dir = a.synth_dir.empty() ? default_synth_dir() : a.synth_dir;
  const fs::path driver = synth_dir / "nibble_synth.py";
  if (!fs::is_regular_file(driver)) {
    throw FlowError(fmt::format("flow driver not found: {} (pass --synth-dir or set NIBBLE_SOURCE_DIR)",
                                 driver.string()));
  }
  if (!a.cache.empty() && a.prepare_directory) a.prepare_directory(a.cache, "--cache");
  const std::string liberty = a.liberty.empty() ? (synth_dir / "nibble_generic.lib").string() : fs::absolute(a.liberty).string();

  const ScratchDir scratch("nibble_energy");
  const fs::path& tmp = scratch.path();

  const fs::path cells = tmp / "cells.json";
  std::string output;
  int rc = run_command(fmt::format("{} {} {} {}", shell_quote(python), shell_quote((synth_dir / "liberty_cells.py").string()),
                                   shell_quote(liberty), shell_quote(cells.string())),
                       output);
  if (rc != 0) throw FlowError(fmt::format("cell models of {} failed:\n{}", liberty, output));

  // One synthesis through the flow; returns its record, leaves the netlist at `net`.
  auto synthesize = [&](const std::string& top, const std::string& source, const std::vector<std::string>& params,
                        const std::string& what, const fs::path& net, bool hier = false) {
    const fs::path rec = fs::path(net.string() + ".rec.json");
    std::string cmd = fmt::format("{} {} --top {} --yosys {} --json {} --netlist {} --liberty {}", shell_quote(python),
                                  shell_quote(driver.string()), top, shell_quote(yosys), shell_quote(rec.string()),
                                  shell_quote(net.string()), shell_quote(liberty));
    if (!source.empty()) cmd += " --source " + shell_quote((synth_dir / source).string());
    for (const std::string& p : params) cmd += " --param " + shell_quote(p);
    if (!a.cache.empty()) cmd += " --cache " + shell_quote(fs::absolute(a.cache).string());
    if (hier) cmd += " --hier";
    std::string out;
    if (run_command(cmd, out) != 0 || !fs::exists(net)) throw FlowError(fmt::format("synthesis of {} failed:\n{}", what, out));
    return io::read_json_file(rec.string());
  };

  if (a.calibration) {
    const std::string lib_label = a.liberty.empty() ? "rtl/synth/nibble_generic.lib" : a.liberty;
    nlohmann::json cal = nlohmann::json::array();
    fmt::format_to(std::back_inserter(report.table), "calibration: energy per operation, {} cycles each (liberty {})\n", a.blocks, lib_label);
    fmt::format_to(std::back_inserter(report.table), "{:<18} {:>7} {:>11} {:>12} {:>14} {:>14}\n", "block", "cells", "energy/op", "vs 8b add",
               "Horowitz pJ", "Horowitz ratio");
    double base = 0;
    std::string unit;
    // Integer adders and multipliers of the published table, uniformly random operands.
    for (const Published& p : kHorowitz) {
      const fs::path net = tmp / fmt::format("{}_{}.netlist.json", p.top, p.n);
      synthesize(p.top, "calib_blocks.v", {fmt::format("N={}", p.n)}, fmt::format("{} N={}", p.top, p.n), net);
      GateSim sim(cells.string(), net.string());
      std::mt19937_64 rng(a.seed);
      auto drive = [&] {
        for (const std::string& port : sim.input_ports()) {
          for (int lsb = 0; lsb < sim.port_width(port); lsb += 64) {
            sim.set_input(port, rng(), lsb, std::min(64, sim.port_width(port) - lsb));
          }
        }
        sim.tick();
      };
      drive();
      sim.clear_activity();
      for (size_t i = 0; i < a.blocks; ++i) drive();
      const EnergyReport e = sim.energy(a.clock_ns);
      const double per_op = e.total() / static_cast<double>(a.blocks);
      unit = e.unit;
      if (base == 0) base = per_op;
      fmt::format_to(std::back_inserter(report.table), "{:<18} {:>7} {:>11.4g} {:>12.2f} {:>14.2f} {:>14.2f}\n", p.label, sim.num_cells(), per_op,
                 per_op / base, p.pj, p.pj / kHorowitz[0].pj);
      cal.push_back({{"block", p.label}, {"top", p.top}, {"n", p.n}, {"cells", sim.num_cells()}, {"energy_per_op", per_op},
                     {"energy_unit", e.unit}, {"horowitz_45nm_pj", p.pj}});
    }
    // Floating-point MACs: the accumulator cleared by reset, then one fma per cycle on random
    // finite operands, the sum running (16 warm-up cycles not counted).
    std::map<std::string, double> mac_energy;
    for (const FpMac& m : kFpMacs) {
      const fs::path net = tmp / fmt::format("calib_fpmac_{}.netlist.json", m.format);
      const nlohmann::json rec =
          synthesize("calib_fpmac", "calib_fpmac.v",
                     {fmt::format("ExpBits={}", m.exp_bits), fmt::format("ManBits={}", m.man_bits)},
                     fmt::format("calib_fpmac {}", m.format), net);
      GateSim sim(cells.string(), net.string());
      std::mt19937_64 rng(a.seed);
      sim.set_input("rst_ni", 0);
      sim.settle();
      sim.set_input("rst_ni", 1);
      auto step = [&] {
        sim.set_input("a_i", finite_operand(m, rng));
        sim.set_input("b_i", finite_operand(m, rng));
        sim.tick();
      };
      for (int i = 0; i < 16; ++i) step();
      sim.clear_activity();
      for (size_t i = 0; i < a.blocks; ++i) step();
      const uint32_t acc = static_cast<uint32_t>(sim.get("acc_o"));
      if ((acc & 0x7F80'0000u) == 0x7F80'0000u) {
        throw FlowError(fmt::format("calibration: the {} accumulator ended non-finite (0x{:08x})", m.format, acc));
      }
      const EnergyReport e = sim.energy(a.clock_ns);
      const double per_op = e.total() / static_cast<double>(a.blocks);
      mac_energy[m.format] = per_op;
      fmt::format_to(std::back_inserter(report.table), "{:<18} {:>7} {:>11.4g} {:>12.2f} {:>14} {:>14}\n", m.label, sim.num_cells(), per_op, per_op / base,
                 m.pj < 0 ? "-" : fmt::format("{:.2f}c", m.pj), m.pj < 0 ? "-" : fmt::format("{:.2f}", m.pj / kHorowitz[0].pj));
      cal.push_back({{"block", m.label}, {"top", "calib_fpmac"}, {"format", m.format}, {"exp_bits", m.exp_bits},
                     {"man_bits", m.man_bits}, {"cells", sim.num_cells()}, {"flops", sim.num_flops()},
                     {"area", rec.at("area")}, {"area_unit", rec.at("area_unit")}, {"energy_per_op", per_op},
                     {"energy_unit", e.unit}, {"logic_per_op", e.logic / static_cast<double>(a.blocks)},
                     {"flops_per_op", e.flops / static_cast<double>(a.blocks)},
                     {"clock_per_op", e.clock / static_cast<double>(a.blocks)},
                     {"leakage_per_op", e.leakage / static_cast<double>(a.blocks)},
                     {"horowitz_45nm_pj", m.pj < 0 ? nlohmann::json(nullptr) : nlohmann::json(m.pj)},
                     {"horowitz_reference", m.pj < 0 ? "none (no FP8 entry)" : "composed: FP16 mult 1.1 + FP32 add 0.9 pJ"}});
    }
    // The project's 4-bit MAC: the E2M1-only DPU on Gaussian operands, per block / 16.
    {
      const Config& c = baseline_config();
      const fs::path net = tmp / fmt::format("dpu_{}.netlist.json", c.name);
      say(a.progress, fmt::format("nibble energy: synthesizing nibble_dpu {} ...", c.label));
      const LaneDesignInfo& d = *designs.front();
      const nlohmann::json rec =
          synthesize("nibble_dpu", "",
                     {fmt::format("FormatMask={}", c.mask), "Lanes=16",
                      fmt::format("LaneDesign={}", static_cast<unsigned>(d.id))},
                     fmt::format("nibble_dpu {} {}", d.name, c.label), net);
      GateSim sim(cells.string(), net.string());
      DpuNetlist dpu(sim);
      StreamSpec s;
      s.format = Format::kE2M1;
      s.lanes = dpu.lanes();
      s.k = a.k;
      s.blocks = a.blocks;
      s.seed = a.seed;
      const std::vector<DpuBlock> blocks = make_stream(s);
      dpu.reset();
      for (size_t i = 0; i < 4 && i < blocks.size(); ++i) dpu.step(&blocks[i]);
      sim.clear_activity();
      for (const DpuBlock& b : blocks) dpu.step(&b);
      const EnergyReport e = sim.energy(a.clock_ns);
      const double per_mac = e.total() / static_cast<double>(blocks.size()) / 16.0;
      mac_energy["dpu"] = per_mac;
      fmt::format_to(std::back_inserter(report.table), "{:<18} {:>7} {:>11.4g} {:>12.2f} {:>14} {:>14}\n", "4-bit MAC (DPU)", sim.num_cells(), per_mac,
                 per_mac / base, "-", "-");
      cal.push_back({{"block", "4-bit MAC (DPU)"}, {"top", "nibble_dpu"}, {"config", c.name}, {"format_mask", c.mask},
                     {"lane_design", d.name},
                     {"lanes", 16}, {"operands", "gaussian"}, {"cells", sim.num_cells()}, {"flops", sim.num_flops()},
                     {"area", rec.at("area")}, {"area_unit", rec.at("area_unit")}, {"energy_per_op", per_mac},
                     {"energy_per_block", per_mac * 16.0}, {"energy_unit", e.unit}, {"horowitz_45nm_pj", nullptr}});
    }
    fmt::format_to(std::back_inserter(report.table), "energy unit: {}; Horowitz: ISSCC 2014, 45 nm (published ratios, not this library's)\n", unit);
    fmt::format_to(std::back_inserter(report.table), "integer blocks: uniformly random operands. MACs: acc <= fma(a, b, acc), one FP32 accumulator register "
               "(rtl/synth/calib_fpmac.v), random finite operands (E4M3: any non-NaN code; BF16: exponents 2^-9..2^8, "
               "random mantissa), the sum running from reset.\n");
    fmt::format_to(std::back_inserter(report.table), "4-bit MAC (DPU): E2M1-only nibble_dpu, 16 lanes, lane design {} (cells: all 16 lanes), Gaussian "
               "operands quantized by golden, energy per block / 16: one FP32 accumulate per 16 MACs.\n",
               designs.front()->name);
    fmt::format_to(std::back_inserter(report.table), "c: composed, Horowitz FP16 mult 1.1 + FP32 add 0.9 pJ (no BF16 or FP8 entry in the table).\n");
    fmt::format_to(std::back_inserter(report.table), "per MAC: E4M3 / 4-bit {:.2f}x, BF16 / 4-bit {:.2f}x, BF16 / E4M3 {:.2f}x\n",
               mac_energy["e4m3"] / mac_energy["dpu"], mac_energy["bf16"] / mac_energy["dpu"],
               mac_energy["bf16"] / mac_energy["e4m3"]);
    report.json = nlohmann::json{{"calibration", cal}, {"liberty", lib_label}, {"cycles", a.blocks}, {"seed", a.seed},
                                 {"clock_ns", a.clock_ns}};
    return report;
  }

  std::vector<Result> results;
  std::vector<Idle> idles;
  // The tensor core's operand staging, as nibble area --level tensor-core synthesizes it (the
  // same parameters, so the same cache entry), run on each operand stream below.
  const int rf_depth = AreaOptions{}.rf_depth;
  const fs::path rf_net = tmp / "operand_rf.netlist.json";
  say(a.progress, fmt::format("nibble energy: synthesizing nibble_operand_rf (16 lanes, {} entries) ...", rf_depth));
  const nlohmann::json rf_rec = synthesize("nibble_operand_rf", "", {"Lanes=16", fmt::format("Depth={}", rf_depth)},
                                           "nibble_operand_rf", rf_net);
  GateSim rf_sim(cells.string(), rf_net.string());
  OperandRfNetlist rf(rf_sim);
  std::map<StreamKey, Staging> staging;
  for (const LaneDesignInfo* ld : designs) {
    for (const ScaleConfig* sc : scale_sets) {
    for (const Config* c : configs) {
      std::vector<std::string> params = {fmt::format("FormatMask={}", c->mask), "Lanes=16",
                                         fmt::format("LaneDesign={}", static_cast<unsigned>(ld->id))};
      // the RTL's default, every scale format, is not passed (the same cache key as nibble area's)
      if (std::string(sc->name) != "all") params.push_back(fmt::format("ScaleFormatMask={}", sc->mask));
      const fs::path net = tmp / fmt::format("{}_{}_{}.netlist.json", ld->name, sc->name, c->name);
      say(a.progress, fmt::format("nibble energy: synthesizing nibble_dpu {} {} {} ...", ld->name, c->label, sc->label));
      const nlohmann::json r = synthesize("nibble_dpu", "", params,
                                          fmt::format("nibble_dpu {} {} {}", ld->name, c->label, sc->label), net);
      GateSim sim(cells.string(), net.string());
      DpuNetlist dpu(sim);
      // --breakdown: the hierarchical synthesis, flattened after mapping (cells keep their
      // instance paths), run on the same streams.
      std::unique_ptr<GateSim> hsim;
      std::unique_ptr<DpuNetlist> hdpu;
      if (a.breakdown) {
        const fs::path hnet = tmp / fmt::format("{}_{}_{}.hier.netlist.json", ld->name, sc->name, c->name);
        say(a.progress, fmt::format("nibble energy: synthesizing nibble_dpu {} {} {} hierarchically ...", ld->name,
                                    c->label, sc->label));
        synthesize("nibble_dpu", "", params,
                   fmt::format("nibble_dpu {} {} {} (hierarchical)", ld->name, c->label, sc->label), hnet, true);
        hsim = std::make_unique<GateSim>(cells.string(), hnet.string());
        hdpu = std::make_unique<DpuNetlist>(*hsim);
      }
      for (Format f : kAllFormats) {
        if ((c->bits & format_bit(f)) == 0) continue;
        for (const std::string& d : dists) {
          StreamSpec s;
          s.dist = d == "user" ? Distribution::kUser : parse_dist(d);
          s.format = f;
          s.lanes = dpu.lanes();
          s.k = a.k;
          s.blocks = a.blocks;
          s.seed = a.seed;
          s.student_t_dof = a.dof;
          s.scale_mode = sc->scale_mode;
          if (s.dist == Distribution::kUser) {
            s.user_a = &user_a;
            s.user_b = user_b.empty() ? nullptr : &user_b;
          }
          std::vector<DpuBlock> blocks;
          try {
            blocks = make_stream(s);
          } catch (const std::exception& e) {
            throw FlowError(fmt::format("operand stream ({}, {}): {}", d, name(f), e.what()));
          }
          dpu.reset();
          // warm-up: the pipeline filled with this stream before counting
          for (size_t i = 0; i < 4 && i < blocks.size(); ++i) dpu.step(&blocks[i]);
          sim.clear_activity();
          for (const DpuBlock& b : blocks) dpu.step(&b);
          Result res{ld, sc, c, f, d, blocks.size(), sim.energy(a.clock_ns), r.at("area").get<double>(),
                     r.at("area_unit").get<std::string>(), r.at("flops").get<long>(), {}, 0.0};
          if (hdpu) {
            hdpu->reset();
            for (size_t i = 0; i < 4 && i < blocks.size(); ++i) hdpu->step(&blocks[i]);
            hsim->clear_activity();
            for (const DpuBlock& b : blocks) hdpu->step(&b);
            const std::map<std::string, EnergyReport> by = hsim->energy_by(dpu_sub_block, a.clock_ns);
            for (const std::string& name : dpu_sub_block_names()) {
              const auto it = by.find(name);
              res.sub_blocks.emplace_back(name, it == by.end() ? 0.0 : it->second.total());
            }
            res.hier_total = hsim->energy(a.clock_ns).total();
          }
          results.push_back(res);
          const StreamKey key{sc, f, d};
          if (staging.count(key) == 0) {
            Staging st;
            try {
              const EnergyReport ea = rf.run(blocks, false, a.clock_ns), eb = rf.run(blocks, true, a.clock_ns);
              st.cycles = ea.cycles;
              st.a = ea.total() / static_cast<double>(ea.cycles);
              st.b = eb.total() / static_cast<double>(eb.cycles);
              st.clock_a = ea.clock / static_cast<double>(ea.cycles);
              st.clock_b = eb.clock / static_cast<double>(eb.cycles);
            } catch (const std::exception& e) {
              throw FlowError(fmt::format("operand register file on the {} {} stream: {}", name(f), d, e.what()));
            }
            staging[key] = st;
          }
          say(a.progress, fmt::format("  {} {} {} {}: {:.4g} {} per block", ld->name, c->label, name(f), d,
                                      res.e.total() / static_cast<double>(res.blocks), res.e.unit));
        }
      }
      // An idle cycle: the last stream's inputs held with valid_i low, counted once drained.
      constexpr size_t kIdleCycles = 256;
      for (int i = 0; i < 8; ++i) dpu.step(nullptr);
      sim.clear_activity();
      for (size_t i = 0; i < kIdleCycles; ++i) dpu.step(nullptr);
      idles.push_back({ld, sc, c, sim.energy(a.clock_ns).total() / static_cast<double>(kIdleCycles)});
    }
    }
  }

  const std::string unit = results.front().e.unit;
  const bool generic = unit == "E_NAND2";
  auto per_block = [](const Result& r) { return r.e.total() / static_cast<double>(r.blocks); };
  // Operand movement per MAC in the tensor-core level's array: a file per row (A) and per
  // column (B), each one write and one read per cycle, for rows x cols DPUs of 16 MACs a cycle.
  auto staging_per_mac = [&](const Result& r) {
    const Staging& s = staging.at({r.scales, r.format, r.dist});
    return (array.rows * s.a + array.cols * s.b) / (16.0 * array.rows * array.cols);
  };
  auto tensor_core_per_mac = [&](const Result& r) { return per_block(r) / 16.0 + staging_per_mac(r); };
  const bool several = designs.size() > 1;
  const bool several_scales = scale_sets.size() > 1;
  auto label = [&](const Result& r) {
    std::string l = several ? fmt::format("{} {}", r.design->name, r.config->label) : std::string(r.config->label);
    return several_scales ? fmt::format("{} {}", l, r.scales->label) : l;
  };
  size_t lw = 16;
  for (const Result& r : results) lw = std::max(lw, label(r).size());
  fmt::format_to(std::back_inserter(report.table), "energy of nibble_dpu, 16 lanes{}{}, one 16-element block per cycle ({}; liberty {}{})\n",
             several ? "" : fmt::format(", lane design {}", designs.front()->name),
             several_scales ? "" : fmt::format(", {} ({} streams)", scale_sets.front()->label, scale_sets.front()->scale_mode),
             generic ? "generic library: E_NAND2 = one NAND2 output toggle" : "pJ",
             a.liberty.empty() ? "rtl/synth/nibble_generic.lib" : a.liberty,
             generic ? "" : fmt::format(", leakage at {} ns per cycle", a.clock_ns));
  fmt::format_to(std::back_inserter(report.table), "{:<{}} {:<6} {:<16} {:>11} {:>10} {:>9} {:>9} {:>9} {:>9} {:>7}\n", "config", lw, "format", "operands",
             "per block", "per MAC", "logic", "flops", "clock", "leakage", "toggle");
  for (const Result& r : results) {
    const double nb = static_cast<double>(r.blocks);
    fmt::format_to(std::back_inserter(report.table), "{:<{}} {:<6} {:<16} {:>11.4g} {:>10.4g} {:>9.4g} {:>9.4g} {:>9.4g} {:>9.3g} {:>7.4f}\n", label(r), lw,
               name(r.format), r.dist, per_block(r), per_block(r) / 16.0, r.e.logic / nb, r.e.flops / nb,
               r.e.clock / nb, r.e.leakage / nb, r.e.toggle_rate);
  }
  fmt::format_to(std::back_inserter(report.table), "logic/flops/clock/leakage: per block; toggle: cell-output toggles per cell per cycle (zero-delay, no glitches)\n");

  // Headline: the same workload (E2M1 operands, each distribution) on every configuration
  // that runs it, vs the same lane design's E2M1-only DPU (and, with several designs, vs the
  // E2M1-only DPU of least energy).
  // Keys: lane design, scale formats, operands (each comparison within one scale-format set).
  std::map<std::tuple<const LaneDesignInfo*, const ScaleConfig*, std::string>, double> base;
  std::map<std::pair<const ScaleConfig*, std::string>, double> min_base;
  for (const Result& r : results) {
    if (r.config->bits != kBaselineFormatSet) continue;
    base[{r.design, r.scales, r.dist}] = per_block(r);
    const auto mk = std::make_pair(r.scales, r.dist);
    if (min_base.count(mk) == 0 || per_block(r) < min_base[mk]) min_base[mk] = per_block(r);
  }
  if (!base.empty()) {
    fmt::format_to(std::back_inserter(report.table), "\nheadline: energy per block of E2M1 operands (INT4-only: INT4 operands), vs E2M1-only{}\n",
               several ? " of the same lane design, and vs the least E2M1-only" : "");
    fmt::format_to(std::back_inserter(report.table), "{:<{}} {:<16} {:>11} {:>10} {:>9}{}\n", "config", lw, "operands", "per block", "per MAC", "vs E2M1",
               several ? fmt::format(" {:>12}", "vs min E2M1") : "");
    for (const Result& r : results) {
      const bool show = r.format == Format::kE2M1 || std::string(r.config->name) == "int4";
      if (!show || base.count({r.design, r.scales, r.dist}) == 0) continue;
      const double b = base[{r.design, r.scales, r.dist}];
      const double mb = min_base[{r.scales, r.dist}];
      fmt::format_to(std::back_inserter(report.table), "{:<{}} {:<16} {:>11.4g} {:>10.4g} {:>+8.1f}%{}\n", label(r), lw, r.dist, per_block(r),
                 per_block(r) / 16.0, 100.0 * (per_block(r) - b) / b,
                 several ? fmt::format(" {:>+11.1f}%", 100.0 * (per_block(r) - mb) / mb) : "");
    }
    fmt::format_to(std::back_inserter(report.table), "published: MixFP4 (arXiv 2605.31035) adding E1M2 next to E2M1 in a tensor core: +{:.1f}% power\n",
               kMixFp4PowerPercent);

    // The same rows with the operand movement of the tensor-core level's array: the staging is
    // the same for every format mask (a code is 4 bits in each), so it dilutes the overhead.
    std::map<std::tuple<const LaneDesignInfo*, const ScaleConfig*, std::string>, double> tc_base;
    std::map<std::pair<const ScaleConfig*, std::string>, double> tc_min_base;
    for (const Result& r : results) {
      if (r.config->bits != kBaselineFormatSet) continue;
      const double v = tensor_core_per_mac(r);
      tc_base[{r.design, r.scales, r.dist}] = v;
      const auto mk = std::make_pair(r.scales, r.dist);
      if (tc_min_base.count(mk) == 0 || v < tc_min_base[mk]) tc_min_base[mk] = v;
    }
    fmt::format_to(std::back_inserter(report.table),
                   "\ntensor core per MAC: {}x{} of these DPUs and one operand register file per row and per column "
                   "(nibble_operand_rf, {} lanes x {} entries of {} bits, flops), each DPU one block and each file one "
                   "write and one read per cycle, on the row's operand stream\n",
                   array.rows, array.cols, rf.lanes(), rf.depth(), rf.entry_bits());
    fmt::format_to(std::back_inserter(report.table), "{:<{}} {:<16} {:>10} {:>11} {:>10} {:>9}{}\n", "config", lw, "operands", "DPU/MAC",
                   "staging/MAC", "per MAC", "vs E2M1", several ? fmt::format(" {:>12}", "vs min E2M1") : "");
    for (const Result& r : results) {
      const bool show = r.format == Format::kE2M1 || std::string(r.config->name) == "int4";
      if (!show || tc_base.count({r.design, r.scales, r.dist}) == 0) continue;
      const double v = tensor_core_per_mac(r), b = tc_base[{r.design, r.scales, r.dist}];
      const double mb = tc_min_base[{r.scales, r.dist}];
      fmt::format_to(std::back_inserter(report.table), "{:<{}} {:<16} {:>10.4g} {:>11.4g} {:>10.4g} {:>+8.1f}%{}\n", label(r), lw, r.dist,
                     per_block(r) / 16.0, staging_per_mac(r), v, 100.0 * (v - b) / b,
                     several ? fmt::format(" {:>+11.1f}%", 100.0 * (v - mb) / mb) : "");
    }
    {
      const Staging& s0 = staging.begin()->second;
      fmt::format_to(std::back_inserter(report.table),
                     "staging: every flop of the files clocked every cycle (no clock gating), {:.0f}% of the staging "
                     "energy on the first stream\n",
                     100.0 * (s0.clock_a + s0.clock_b) / (s0.a + s0.b));
    }
    fmt::format_to(std::back_inserter(report.table),
                   "not included: the array's sharing of decoders per row and column (each DPU here has its own), the "
                   "tile's output buffer and control, the quantizer and RHT units, SRAM and DRAM, clock tree and wires\n");
  }

  if (a.breakdown) {
    // One column per configuration: its E2M1 operands (INT4-only: INT4) of the first operand set.
    std::vector<const Result*> cols;
    for (const Result& r : results) {
      const bool show = r.format == Format::kE2M1 || (std::string(r.config->name) == "int4") ||
                        (std::string(r.config->name) == "e1m2");
      if (show && r.dist == results.front().dist) cols.push_back(&r);
    }
    fmt::format_to(std::back_inserter(report.table), "\nenergy per MAC per sub-block ({}), {} operands in E2M1 (INT4-only: INT4, E1M2-only: E1M2), from "
               "the hierarchical synthesis of each row simulated on the same stream\n",
               unit, results.front().dist);
    auto width = [&](const Result* r) { return std::max<size_t>(10, label(*r).size()); };
    fmt::format_to(std::back_inserter(report.table), "{:<{}}", "sub-block", 26);
    for (const Result* r : cols) fmt::format_to(std::back_inserter(report.table), " {:>{}}", label(*r), width(r));
    fmt::format_to(std::back_inserter(report.table), "\n");
    for (size_t b = 0; b < dpu_sub_block_names().size(); ++b) {
      fmt::format_to(std::back_inserter(report.table), "{:<{}}", dpu_sub_block_names()[b], 26);
      for (const Result* r : cols) {
        fmt::format_to(std::back_inserter(report.table), " {:>{}.4g}", r->sub_blocks[b].second / static_cast<double>(r->blocks) / 16.0, width(r));
      }
      fmt::format_to(std::back_inserter(report.table), "\n");
    }
    fmt::format_to(std::back_inserter(report.table), "{:<{}}", "total (hierarchical)", 26);
    for (const Result* r : cols) fmt::format_to(std::back_inserter(report.table), " {:>{}.4g}", r->hier_total / static_cast<double>(r->blocks) / 16.0, width(r));
    fmt::format_to(std::back_inserter(report.table), "\n{:<{}}", "total (flattened, above)", 26);
    for (const Result* r : cols) fmt::format_to(std::back_inserter(report.table), " {:>{}.4g}", per_block(*r) / 16.0, width(r));
    fmt::format_to(std::back_inserter(report.table), "\nregisters: the pipeline flops' data and clock energy; inputs: the operand and scale input pins' "
               "load (0 in the generic library)\n");
  }

  {
    nlohmann::json j;
    j["top"] = "nibble_dpu";
    j["lanes"] = 16;
    j["liberty"] = a.liberty.empty() ? "rtl/synth/nibble_generic.lib" : a.liberty;
    j["energy_unit"] = unit;
    j["clock_ns"] = a.clock_ns;
    j["blocks"] = a.blocks;
    j["k"] = a.k;
    j["seed"] = a.seed;
    for (const Result& r : results) {
      const double nb = static_cast<double>(r.blocks);
      nlohmann::json e;
      e["config"] = r.config->name;
      e["label"] = r.config->label;
      e["format_mask"] = r.config->mask;
      e["lane_design"] = r.design->name;
      e["scale_formats"] = r.scales->name;
      e["scale_format_mask"] = r.scales->mask;
      e["scale_mode"] = r.scales->scale_mode;
      e["format"] = std::string(name(r.format));
      e["operands"] = r.dist;
      e["blocks"] = r.blocks;
      e["energy_per_block"] = per_block(r);
      e["energy_per_mac"] = per_block(r) / 16.0;
      e["logic_per_block"] = r.e.logic / nb;
      e["flops_per_block"] = r.e.flops / nb;
      e["clock_per_block"] = r.e.clock / nb;
      e["leakage_per_block"] = r.e.leakage / nb;
      e["toggle_rate"] = r.e.toggle_rate;
      e["area"] = r.area;
      e["area_unit"] = r.area_unit;
      e["flops"] = r.flops;
      e["staging_energy_per_mac"] = staging_per_mac(r);
      e["tensor_core_energy_per_mac"] = tensor_core_per_mac(r);
      if (!r.sub_blocks.empty()) {
        e["hier_energy_per_mac"] = r.hier_total / nb / 16.0;
        for (const auto& [name, v] : r.sub_blocks) e["sub_blocks_per_mac"][name] = v / nb / 16.0;
      }
      j["results"].push_back(e);
    }
    j["staging"] = {{"top", "nibble_operand_rf"},
                    {"lanes", rf.lanes()},
                    {"depth", rf.depth()},
                    {"entry_bits", rf.entry_bits()},
                    {"area", rf_rec.at("area")},
                    {"area_unit", rf_rec.at("area_unit")},
                    {"array_rows", array.rows},
                    {"array_cols", array.cols}};
    for (const auto& [key, s] : staging) {
      j["staging"]["streams"].push_back({{"scale_formats", std::get<0>(key)->name},
                                         {"format", std::string(name(std::get<1>(key)))},
                                         {"operands", std::get<2>(key)},
                                         {"cycles", s.cycles},
                                         {"energy_per_cycle_a", s.a},
                                         {"energy_per_cycle_b", s.b},
                                         {"clock_per_cycle_a", s.clock_a},
                                         {"clock_per_cycle_b", s.clock_b}});
    }
    report.json = std::move(j);
  }
  {
    // Energy per action for a cycle-level simulator (Accelergy-style): the DPU's block
    // operation per lane design x scale formats x format mask x operand format x operands, and
    // its idle cycle.
    nlohmann::json j;
    j["schema"] = "nibble-energy-actions/1";
    j["command"] = a.command_line;
    j["energy_unit"] = unit;
    j["liberty"] = a.liberty.empty() ? "rtl/synth/nibble_generic.lib" : a.liberty;
    j["clock_ns"] = a.clock_ns;
    j["method"] =
        "nibble energy: the DPU netlist of the area flow (Yosys 0.23, rtl/synth/nibble_synth.py) simulated gate by "
        "gate, zero delay (no glitches), on golden-quantized operand streams; every cell-output toggle weighted by "
        "the cell's Liberty switching energy, plus flop clock pins and leakage at clock_ns (docs/area-energy.md)";
    j["blocks_per_row"] = a.blocks;
    j["k"] = a.k;
    j["seed"] = a.seed;
    j["not_included"] =
        "SRAM and DRAM traffic (no cited per-access figure is in this repository, so none is given), the quantizer "
        "and RHT units, the tile's output buffer, clock tree and wires";
    j["components"]["nibble_dpu"] = {
        {"lanes", 16}, {"macs_per_block", 16}, {"latency_cycles", 3}, {"blocks_per_cycle", 1},
        {"block", "one 16-element block-scaled dot product step: 16 products, the exact sum, fl(sa*sb), one rounding, "
                  "one FP32 accumulate"},
        {"idle_cycle", "a cycle with valid_i low and the inputs held (flop clocks and leakage; no clock gating)"}};
    const double entry_bytes = static_cast<double>(rf.entry_bits()) / 8.0;
    j["components"]["nibble_operand_rf"] = {
        {"lanes", rf.lanes()}, {"depth", rf.depth()}, {"entry_bits", rf.entry_bits()},
        {"write_read_cycle", fmt::format("one entry ({} codes and a 32-bit scale slot, {} bytes) written and another "
                                         "read in one cycle, on an operand stream's blocks (A's or B's)",
                                         rf.lanes(), entry_bytes)}};
    for (const Result& r : results) {
      j["actions"].push_back({{"component", "nibble_dpu"},
                              {"action", "block"},
                              {"lane_design", r.design->name},
                              {"scale_formats", r.scales->name},
                              {"config", r.config->name},
                              {"format_mask", r.config->mask},
                              {"operand_format", std::string(name(r.format))},
                              {"operands", r.dist},
                              {"scale_mode", r.scales->scale_mode},
                              {"energy", per_block(r)},
                              {"energy_per_mac", per_block(r) / 16.0},
                              {"area", r.area},
                              {"area_unit", r.area_unit}});
    }
    for (const auto& [key, s] : staging) {
      for (const auto& [side, e] : {std::make_pair("a", s.a), std::make_pair("b", s.b)}) {
        j["actions"].push_back({{"component", "nibble_operand_rf"},
                                {"action", "write_read_cycle"},
                                {"operand", side},
                                {"scale_formats", std::get<0>(key)->name},
                                {"operand_format", std::string(name(std::get<1>(key)))},
                                {"operands", std::get<2>(key)},
                                {"energy", e},
                                {"energy_per_byte", e / entry_bytes},
                                {"area", rf_rec.at("area")},
                                {"area_unit", rf_rec.at("area_unit")}});
      }
    }
    for (const Idle& i : idles) {
      j["actions"].push_back({{"component", "nibble_dpu"},
                              {"action", "idle_cycle"},
                              {"lane_design", i.design->name},
                              {"scale_formats", i.scales->name},
                              {"config", i.config->name},
                              {"format_mask", i.config->mask},
                              {"energy", i.per_cycle}});
    }
    report.actions = std::move(j);
  }
  {
    std::ostringstream out;
    out << "config,label,format_mask,lane_design,format,operands,blocks,energy_unit,energy_per_block,energy_per_mac,"
           "logic,flops,clock,leakage,toggle_rate\n";
    for (const Result& r : results) {
      const double nb = static_cast<double>(r.blocks);
      out << fmt::format("{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}\n", r.config->name, r.config->label,
                         r.config->mask, r.design->name, name(r.format), r.dist, r.blocks, unit, per_block(r), per_block(r) / 16.0, r.e.logic / nb,
                         r.e.flops / nb, r.e.clock / nb, r.e.leakage / nb, r.e.toggle_rate);
    }
    report.csv = out.str();
  }
  return report;
}


}  // namespace nibble::power
