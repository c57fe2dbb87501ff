// `nibble workload`: the GEMMs of a whole workload on an array (an
// architecture file), timed by the event model (timing only): a training step
// of the trainer's transformer -- Fprop, Dgrad and Wgrad of every quantized
// linear of every block, quantized as each recipe of the trainer's recipe
// table says, with the quantizer and RHT work that implies -- or a list of
// GEMMs from a file. Reports cycles, utilization, stalls by cause and the bytes
// moved at each level per GEMM and in total, per recipe and format mask, and
// energy by action where an energy-per-action table is given.
#include <CLI/CLI.hpp>
#include <fmt/core.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include "commands.h"
#include "nibble/io/csv.h"
#include "nibble/io/json.h"
#include "nibble/limits.h"
#include "nibble/model/config.h"
#include "nibble/quantize.h"
#include "nibble/sim/arch.h"
#include "nibble/sim/energy.h"
#include "nibble/sim/memory.h"
#include "nibble/sim/workload.h"
#include "nibble/train/recipe.h"
#include "nibble/train/study.h"
#include "nibble/train/sweep.h"
#include "nibble/train/train_config.h"
#include "sim_report.h"

namespace nibble::cli {
namespace {

struct WorkloadArgs {
  std::string arch, gemms, study, size, json_out, csv_out;
  std::vector<std::string> energy;
  std::string energy_lane_design, energy_operands, energy_scale_formats;
  int layers = 0, d_model = 0, ctx = 0, batch = 0, mlp_mult = 0;
  std::vector<std::string> recipes, masks;
  bool per_gemm = false;
  bool no_energy = false;
};

using Item = sim::WorkloadGemm;

std::string block_of(BlockShape b) { return std::string(name(b)); }

std::vector<Item> gemm_list(const std::string& path) {
  note_input(path, "--gemms");
  std::string text;
  try {
    text = io::read_text_file(path, limits::kMaxJsonBytes);
  } catch (const io::JsonError& e) {
    throw UsageError(fmt::format("--gemms: {}: {}", path, e.what()));
  }
  try {
    return sim::gemm_list_from_json_text(text);
  } catch (const model::ConfigError& e) {
    throw UsageError(fmt::format("--gemms: {}: {}", path, e.what()));
  }
}

// The energy files and the DPU choice in force: the architecture file's
// "energy", unless --energy is given (then its files, with no choice from the
// file); each --energy-* flag overrides its key.
struct EnergySetting {
  std::vector<std::string> files;
  sim::DpuEnergyChoice choice;  // as given, before the defaults
  std::string from;             // "--energy" or "the architecture file's energy"
};

EnergySetting energy_setting(const WorkloadArgs& a, const sim::ArchConfig& arch) {
  EnergySetting s;
  if (a.no_energy) return s;
  if (!a.energy.empty()) {
    s.files = a.energy;
    s.from = "--energy";
  } else if (arch.energy) {
    s.files = arch.energy->files;
    s.choice = {arch.energy->lane_design, arch.energy->operands, arch.energy->scale_formats};
    s.from = "the architecture file's energy.files";
  }
  if (!a.energy_lane_design.empty()) s.choice.lane_design = a.energy_lane_design;
  if (!a.energy_operands.empty()) s.choice.operands = a.energy_operands;
  if (!a.energy_scale_formats.empty()) s.choice.scale_formats = a.energy_scale_formats;
  return s;
}

// The energy tables of the setting: the flow's file (DPU prices, the lane design,
// scale formats and operand statistics chosen) and a user table, at most one of each.
std::optional<sim::EnergyTable> energy_tables(const WorkloadArgs& a, const sim::ArchConfig& arch) {
  if (a.no_energy && (!a.energy.empty() || !a.energy_lane_design.empty() || !a.energy_operands.empty() ||
                      !a.energy_scale_formats.empty())) {
    throw UsageError("--no-energy: prices nothing, so --energy and --energy-* cannot go with it");
  }
  const EnergySetting s = energy_setting(a, arch);
  const bool chose = !s.choice.lane_design.empty() || !s.choice.operands.empty() || !s.choice.scale_formats.empty();
  if (s.files.empty()) {
    if (chose) {
      throw UsageError("--energy-lane-design, --energy-operands and --energy-scale-formats choose among the entries "
                       "of the flow's energy file: give it with --energy or the architecture file's energy.files");
    }
    return std::nullopt;
  }
  const sim::DpuEnergyChoice choice = sim::resolve(s.choice, arch.tile.scale_modes);
  std::optional<sim::EnergyTable> flow, user;
  for (const std::string& path : s.files) {
    note_input(path, s.from == "--energy" ? "--energy" : "--arch energy.files");
    sim::EnergyTable t;
    try {
      t = sim::energy_table_from_any_json_file(path, choice);
    } catch (const model::ConfigError& e) {
      throw UsageError(fmt::format("{}: {}", s.from, e.what()));
    }
    const bool from_flow = !t.dpu_block_op_by_format.empty();
    std::optional<sim::EnergyTable>& slot = from_flow ? flow : user;
    if (slot) {
      throw UsageError(fmt::format("{}: two {} files; give at most one of each", s.from,
                                   from_flow ? "hardware-cost flow (" + std::string(sim::kFlowEnergySchema) + ")"
                                             : std::string(sim::kEnergyTableSchema)));
    }
    slot = t;
  }
  if (chose && !flow) {
    throw UsageError(fmt::format("a lane design, operand statistics or scale-format set (--energy-*, or the "
                                 "architecture file's energy keys) chooses among the entries of the flow's energy "
                                 "file ({}); none of {} is one",
                                 sim::kFlowEnergySchema, s.from));
  }
  if (!flow) return user;
  if (!user) return flow;
  try {
    return sim::merge_energy_tables(*flow, *user);
  } catch (const model::ConfigError& e) {
    throw UsageError(fmt::format("{}: {}", s.from, e.what()));
  }
}

// --- running and reporting ------------------------------------------------------

std::vector<Format> parse_mask(const std::string& text) {
  std::vector<Format> formats;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    const auto f = parse_format(item);
    if (!f) throw UsageError("--mask: unknown format '" + item + "' in '" + text + "' (expected e2m1, e1m2, int4)");
    if (std::find(formats.begin(), formats.end(), *f) != formats.end()) {
      throw UsageError("--mask: '" + item + "' is given twice in '" + text + "'");
    }
    formats.push_back(*f);
  }
  if (formats.empty()) throw UsageError("--mask: empty format list");
  return formats;
}

struct Config {
  std::string recipe;        // "" for a GEMM list
  std::string description;
  sim::ArchConfig arch;
  std::vector<Item> items;
};

nlohmann::json stats_json(const sim::GemmStats& s) {
  return {{"cycles", s.cycles},
          {"macs", s.macs},
          {"utilization", s.utilization()},
          {"beats", s.beats},
          {"stalls",
           {{"operand", s.stall_operand},
            {"output", s.stall_output},
            {"pipeline", s.stall_pipeline},
            {"sram", s.stall_sram},
            {"dram", s.stall_dram}}},
          {"operand_bytes", s.operand_bytes},
          {"traffic", traffic_json(s.traffic)}};
}

nlohmann::json actions_json(const sim::ActionCounts& c) {
  nlohmann::json j;
  for (int i = 0; i < sim::kActionCount; ++i) j[sim::name(static_cast<sim::Action>(i))] = c.n[i];
  return j;
}

nlohmann::json energy_json(const sim::Energy& e) {
  nlohmann::json by;
  for (int i = 0; i < sim::kActionCount; ++i) by[sim::name(static_cast<sim::Action>(i))] = e.pj[i];
  return {{"total_pj", e.total_pj}, {"by_action_pj", by}, {"unpriced", e.unpriced}};
}

void run_workload(const WorkloadArgs& a) {
  note_input(a.arch, "--arch");
  sim::ArchConfig base;
  try {
    base = sim::arch_from_json_file(a.arch);
  } catch (const model::ConfigError& e) {
    throw UsageError(std::string("--arch: ") + e.what());
  }
  const std::optional<sim::EnergyTable> table = energy_tables(a, base);

  // The workload: a GEMM list, or a training step of the model (flags or a study size).
  const bool from_model = a.gemms.empty();
  if (!from_model && (!a.recipes.empty() || !a.study.empty() || a.layers || a.d_model || a.ctx || a.batch || a.mlp_mult)) {
    throw UsageError("--gemms: a GEMM list carries its own formats; --recipe, --study and the model flags go without it");
  }
  train::ModelConfig model;
  int batch = 16;
  if (from_model) {
    if (!a.study.empty()) {
      if (a.size.empty()) throw UsageError("--study: needs --size (a size of the study file)");
      note_input(a.study, "--study");
      try {
        const train::Study st = train::load_study(a.study);
        const train::StudySize& sz = train::find_size(st, a.size);
        model = sz.model;
        batch = sz.batch;
      } catch (const train::StudyError& e) {
        throw UsageError(std::string("--study: ") + e.what());
      }
    } else if (!a.size.empty()) {
      throw UsageError("--size: names a size of a study file; give --study too");
    }
    if (a.layers) model.layers = a.layers;
    if (a.d_model) model.d_model = a.d_model;
    if (a.ctx) model.ctx = a.ctx;
    if (a.mlp_mult) model.mlp_mult = a.mlp_mult;
    if (a.batch) batch = a.batch;
    train::TrainConfig tc;
    tc.model = model;
    tc.batch = batch;
    try {
      train::validate(tc);
    } catch (const std::invalid_argument& e) {
      throw UsageError(std::string("model: ") + e.what());
    }
  }
  const int64_t tokens = static_cast<int64_t>(batch) * model.ctx;

  std::vector<std::vector<Format>> masks;
  for (const std::string& m : a.masks) masks.push_back(parse_mask(m));
  if (masks.empty()) masks.push_back(base.tile.formats);

  std::vector<Config> configs;
  const std::vector<std::string> recipes =
      from_model ? (a.recipes.empty() ? std::vector<std::string>{"e2m1"} : a.recipes) : std::vector<std::string>{""};
  for (const std::string& spec : recipes) {
    std::vector<Item> items;
    std::string description;
    if (from_model) {
      train::Recipe r;
      try {
        r = train::parse_recipe_spec(spec);
      } catch (const train::RecipeError& e) {
        throw UsageError(std::string("--recipe: ") + e.what());
      }
      description = train::describe(r);
      items = sim::training_step_gemms(model, tokens, r);
    } else {
      items = gemm_list(a.gemms);
    }
    for (const std::vector<Format>& mask : masks) {
      Config c;
      c.recipe = spec;
      c.description = description;
      c.arch = base;
      c.arch.tile.formats = mask;
      try {
        sim::validate(c.arch);
      } catch (const model::ConfigError& e) {
        throw UsageError(std::string("--mask: ") + e.what());
      }
      c.items = items;
      configs.push_back(std::move(c));
    }
  }

  // Every GEMM must fit its array before any runs: a format the mask lacks is bad input;
  // so is a mask the flow's energy file has no DPU entry for.
  for (const Config& c : configs) {
    const std::string mask = sim::mask_name(c.arch.tile.formats);
    try {
      sim::check_workload(c.arch, c.items);
    } catch (const std::invalid_argument& e) {
      throw UsageError(fmt::format("{}{}: {}", c.recipe.empty() ? std::string() : "recipe '" + c.recipe + "', ",
                                   "mask " + mask, e.what()));
    }
    if (table && !table->dpu_block_op_by_format.empty() && !sim::prices_dpu(*table, mask)) {
      std::string have;
      for (const auto& [m, by_format] : table->dpu_block_op_by_format) have += (have.empty() ? "" : ", ") + m;
      throw UsageError(fmt::format("energy: the flow's file has no DPU block energy for mask {} with the choice "
                                   "made (it has masks: {})",
                                   mask, have));
    }
    // Each GEMM is priced at its own operand formats: a pair the file lacks is bad input, not a number
    // borrowed from another pair.
    if (table) {
      for (const Item& it : c.items) {
        if (it.bf16) continue;
        const sim::FormatPair pair{it.shape.format_a, it.shape.format_b};
        if (sim::missing_dpu_prices(*table, mask, {pair}).empty()) continue;
        throw UsageError(fmt::format("energy: {}GEMM '{}' has operands {} (A x B), and the flow's file has no DPU "
                                     "block energy for them on mask {} with the choice made (it has: {})",
                                     c.recipe.empty() ? std::string() : "recipe '" + c.recipe + "', ", it.name,
                                     sim::name(pair), mask, sim::priced_pairs(*table, mask)));
      }
    }
  }

  const bool csv = !a.csv_out.empty();
  std::ofstream csv_file = open_output(a.csv_out, "--csv");
  io::CsvTable csv_table({"recipe", "mask", "gemm", "layers", "count", "m", "n", "k", "format_a", "format_b", "scale",
                          "block_a", "block_b", "bf16", "cycles", "utilization", "stall_operand", "stall_output",
                          "stall_pipeline", "stall_sram", "stall_dram", "dram_read_bytes", "buffer_fill_bytes",
                          "operand_bytes", "c_bytes", "accumulator_bytes", "dram_write_bytes", "quantize_elements",
                          "rht_elements", "quantizer_cycles", "energy_pj"});
  nlohmann::json out_configs = nlohmann::json::array();
  const bool progress = configs.size() * configs.front().items.size() > 24;
  size_t done = 0, total = 0;
  for (const Config& c : configs) total += c.items.size();

  for (const Config& c : configs) {
    const std::string mask = sim::mask_name(c.arch.tile.formats);
    sim::WorkloadRun run;
    try {
      run = sim::time_workload(c.arch, c.items, [&] {
        ++done;
        if (progress) fmt::print(stderr, "\r[{}/{}] GEMMs", done, total);
      });
    } catch (const std::invalid_argument& e) {
      throw UsageError(e.what());
    }
    if (progress) fmt::print(stderr, "\n");
    const std::vector<sim::GemmRun>& rows = run.gemms;
    const sim::GemmStats& sum = run.total;
    const sim::ActionCounts& sum_actions = run.actions;
    const uint64_t sum_quantizer = run.quantizer_cycles, bf16_macs = run.bf16_macs, array_macs = run.array_macs;

    // Text.
    if (from_model) {
      fmt::print("training step  {} blocks x d_model {} (mlp {}x), {} tokens (batch {} x ctx {})\n", model.layers,
                 model.d_model, model.mlp_mult, tokens, batch, model.ctx);
      fmt::print("recipe         {}: {}\n", c.recipe, c.description);
    } else {
      fmt::print("workload       {} ({} GEMMs)\n", a.gemms, c.items.size());
    }
    fmt::print("array          {} tiles, each {}x{}x{} lanes, latency {}, operand buffer {} B at {} B/cycle, mask {}\n",
               c.arch.tiles, c.arch.tile.rows, c.arch.tile.cols, c.arch.tile.lanes, c.arch.tile.latency,
               c.arch.operand_buffer_bytes, c.arch.tile.bandwidth, mask);
    fmt::print("{}\n", describe_memory(c.arch));
    if (a.per_gemm) {
      fmt::print("{:<14} {:>6} {:>4} {:>7} {:>6} {:>6} {:>12} {:>6} {:>10} {:>10} {:>13} {:>13} {:>13}\n", "gemm", "layers",
                 "runs", "m", "n", "k", "cycles/run", "util", "sram stall", "dram stall", "DRAM rd B", "SRAM->buf B",
                 "buf->tile B");
      for (const sim::GemmRun& r : rows) {
        const Item& it = *r.gemm;
        if (it.bf16) {
          fmt::print("{:<14} {:>6} {:>4} {:>7} {:>6} {:>6} {:>12}\n", it.name, it.layers, it.count, it.shape.m, it.shape.n,
                     it.shape.k, "BF16: not on the array");
          continue;
        }
        const sim::GemmStats& s = r.stats;
        fmt::print("{:<14} {:>6} {:>4} {:>7} {:>6} {:>6} {:>12} {:>5.1f}% {:>10} {:>10} {:>13} {:>13} {:>13}\n", it.name,
                   it.layers, it.count, it.shape.m, it.shape.n, it.shape.k, s.cycles, 100.0 * s.utilization(),
                   s.stall_sram, s.stall_dram, s.traffic.dram_read_bytes, s.traffic.buffer_fill_bytes, s.operand_bytes);
      }
    }
    fmt::print("GEMM cycles    {} ({} on the array, {:.1f}% utilization){}\n", sum.cycles, array_macs,
               100.0 * run.utilization,
               c.arch.clock_ghz ? fmt::format(", {:.4g} ms at {} GHz", static_cast<double>(sum.cycles) / (*c.arch.clock_ghz * 1e6),
                                              *c.arch.clock_ghz)
                                : std::string());
    fmt::print("stall tile-cycles  operand {}  output {}  pipeline {}  sram {}  dram {}\n", sum.stall_operand,
               sum.stall_output, sum.stall_pipeline, sum.stall_sram, sum.stall_dram);
    fmt::print("bytes moved    DRAM->SRAM {}  SRAM->buffers {}  buffers->tiles {}  C out {}  accumulator {}  C->DRAM {}\n",
               sum.traffic.dram_read_bytes, sum.traffic.buffer_fill_bytes, sum.operand_bytes, sum.traffic.c_bytes,
               sum.traffic.accumulator_bytes, sum.traffic.dram_write_bytes);
    fmt::print("quantizer      {} elements quantized, {} through the RHT; {}\n", sum_actions[sim::Action::kQuantize],
               sum_actions[sim::Action::kRht],
               c.arch.quantizer ? fmt::format("{} cycles (not overlapped with the GEMMs: step total {} cycles)",
                                              sum_quantizer, sum.cycles + sum_quantizer)
                                : std::string("not timed (the architecture file gives no quantizer throughput)"));
    if (bf16_macs) fmt::print("BF16 GEMMs     {} MACs, not on the array (the recipe's BF16 layers, attention, the LM head)\n", bf16_macs);
    std::string counts;
    for (int i = 0; i < sim::kActionCount; ++i) {
      counts += fmt::format("{}{} {}", i ? "  " : "", sim::name(static_cast<sim::Action>(i)), sum_actions.n[i]);
    }
    fmt::print("actions        {}\n", counts);
    std::optional<sim::Energy> energy;
    if (table) {
      energy = sim::price(*table, c.arch, run);
      std::string unpriced;
      for (const std::string& u : energy->unpriced) unpriced += (unpriced.empty() ? "" : ", ") + u;
      fmt::print("energy         {:.6g} uJ per {} ({}){}\n", energy->total_pj * 1e-6,
                 from_model ? "training step" : "workload", table->source,
                 unpriced.empty() ? std::string() : " (not priced, the table has no entry: " + unpriced + ")");
    } else {
      fmt::print("energy         not computed: {}\n", a.no_energy ? "--no-energy"
                                                                   : "no energy-per-action table (--energy, or the "
                                                                     "architecture file's energy)");
    }
    fmt::print("\n");

    // JSON and CSV.
    nlohmann::json gemms = nlohmann::json::array();
    for (const sim::GemmRun& r : rows) {
      const Item& it = *r.gemm;
      nlohmann::json g = {{"name", it.name},   {"layers", it.layers}, {"count", it.count}, {"m", it.shape.m},
                          {"n", it.shape.n},   {"k", it.shape.k},     {"bf16", it.bf16}};
      std::optional<sim::Energy> e;
      if (!it.bf16) {
        g["format_a"] = name(it.shape.format_a);
        g["format_b"] = name(it.shape.format_b);
        g["scale"] = name(it.shape.scale_a);
        g["block_a"] = block_of(it.shape.block_a);
        g["block_b"] = block_of(it.shape.block_b);
        g["per_run"] = stats_json(r.stats);
        g["actions_per_run"] = actions_json(r.actions);
        g["quantizer_cycles_per_run"] = r.quantizer_cycles;
        if (table) {
          e = sim::price(*table, c.arch, r);
          g["energy_per_run"] = energy_json(*e);
        }
      }
      gemms.push_back(g);
      if (csv) {
        const sim::GemmStats& s = r.stats;
        std::vector<io::CsvCell> row = {c.recipe, mask, it.name, it.layers, it.count, it.shape.m, it.shape.n, it.shape.k};
        if (it.bf16) {  // no format, timing or traffic
          row.insert(row.end(), 5, io::CsvCell(""));
          row.emplace_back(1);
          row.insert(row.end(), csv_table.columns() - row.size(), io::CsvCell(""));
        } else {
          const std::vector<io::CsvCell> rest = {
              name(it.shape.format_a), name(it.shape.format_b), name(it.shape.scale_a), block_of(it.shape.block_a),
              block_of(it.shape.block_b), 0, s.cycles, s.utilization(), s.stall_operand, s.stall_output,
              s.stall_pipeline, s.stall_sram, s.stall_dram, s.traffic.dram_read_bytes, s.traffic.buffer_fill_bytes,
              s.operand_bytes, s.traffic.c_bytes, s.traffic.accumulator_bytes, s.traffic.dram_write_bytes,
              it.quantize_elements, it.rht_elements, r.quantizer_cycles,
              e ? io::CsvCell(e->total_pj) : io::CsvCell("")};
          row.insert(row.end(), rest.begin(), rest.end());
        }
        csv_table.add(row);
      }
    }
    nlohmann::json jc = {{"recipe", c.recipe},
                         {"description", c.description},
                         {"mask", mask},
                         {"arch", io::parse_json(sim::to_json_text(c.arch))},
                         {"gemms", gemms},
                         {"total",
                          {{"gemm_cycles", sum.cycles},
                           {"array_macs", array_macs},
                           {"utilization", run.utilization},
                           {"bf16_macs", bf16_macs},
                           {"quantizer_cycles", c.arch.quantizer ? nlohmann::json(sum_quantizer) : nlohmann::json(nullptr)},
                           {"stats", stats_json(sum)},
                           {"actions", actions_json(sum_actions)}}}};
    if (run.seconds) jc["total"]["gemm_seconds"] = *run.seconds;
    if (energy) jc["total"]["energy"] = energy_json(*energy);
    out_configs.push_back(jc);
  }
  if (csv) {
    csv_file << csv_table.text();
    finish_output(csv_file, a.csv_out);
  }
  if (!a.json_out.empty()) {
    nlohmann::json j = {{"configurations", out_configs}};
    if (from_model) {
      j["model"] = {{"layers", model.layers}, {"d_model", model.d_model}, {"ctx", model.ctx},
                    {"mlp_mult", model.mlp_mult}, {"batch", batch}, {"tokens", tokens}};
    }
    if (table) j["energy_table"] = {{"paths", energy_setting(a, base).files}, {"source", table->source}};
    write_output(a.json_out, "--json", j.dump(2) + "\n");
  }
}

}  // namespace

void add_workload_command(CLI::App& app) {
  auto args = std::make_shared<WorkloadArgs>();
  WorkloadArgs& a = *args;
  CLI::App* cmd = app.add_subcommand(
      "workload", "Simulate a workload's GEMMs on an array (a training step of the trainer's model, or a GEMM list)");
  cmd->add_option("--arch", a.arch, "Architecture file (JSON; see sim/README.md)")->type_name("FILE")->required();
  cmd->add_option("--gemms", a.gemms, "A GEMM list (JSON: {\"gemms\": [{\"m\", \"n\", \"k\", ...}]}) instead of a training step")
      ->type_name("FILE");
  cmd->add_option("--study", a.study, "Take the model and batch from this study file's --size")->type_name("FILE");
  cmd->add_option("--size", a.size, "A size of the study file (e.g. s40m)")->type_name("NAME");
  cmd->add_option("--layers", a.layers, "Transformer blocks (overrides the study's)")->check(integer_in(1, 256));
  cmd->add_option("--d-model", a.d_model, "Model width")->check(integer_in(32, 16384));
  cmd->add_option("--ctx", a.ctx, "Sequence length")->check(integer_in(2, 65536));
  cmd->add_option("--batch", a.batch, "Sequences per step")->check(integer_in(1, 1 << 20));
  cmd->add_option("--mlp-mult", a.mlp_mult, "MLP width over d_model")->check(integer_in(1, 16));
  cmd->add_option("--recipe", a.recipes, "Training recipe (preset or preset+key=value, as nibble train); repeatable "
                                         "(default e2m1)")
      ->type_name("SPEC");
  cmd->add_option("--mask", a.masks, "The tile's format mask, a comma list (e.g. e2m1 or e2m1,e1m2,int4); repeatable "
                                     "(default: the architecture file's)")
      ->type_name("LIST");
  cmd->add_option("--energy", a.energy,
                  "Energy per action: a table (nibble-energy-per-action/1) and/or the hardware-cost flow's file "
                  "(nibble-energy-actions/1, nibble energy --actions; DPU prices); replaces the architecture file's energy; "
                  "see sim/README.md")
      ->type_name("FILE");
  cmd->add_option("--energy-lane-design", a.energy_lane_design,
                  "The flow's file: the DPU lane design whose block energy is used (default: the architecture file's, "
                  "else the RTL's default)")
      ->type_name("NAME");
  cmd->add_option("--energy-operands", a.energy_operands,
                  "The flow's file: the operand statistics of the block energy (default: the architecture file's, else "
                  "gaussian)")
      ->type_name("NAME");
  cmd->add_option("--energy-scale-formats", a.energy_scale_formats,
                  "The flow's file: the DPU's scale-format set (default: the architecture file's, else the set the "
                  "tile's scale modes decode)")
      ->type_name("NAME");
  cmd->add_flag("--no-energy", a.no_energy, "Count the actions but price none (the architecture file's energy ignored)");
  cmd->add_flag("--per-gemm", a.per_gemm, "Print a line per GEMM (the JSON and CSV always have them)");
  cmd->add_option("--json", a.json_out, "Write the report as JSON")->type_name("FILE");
  cmd->add_option("--csv", a.csv_out, "Write a row per GEMM and configuration as CSV")->type_name("FILE");
  cmd->callback([args] { run_workload(*args); });
}

}  // namespace nibble::cli
