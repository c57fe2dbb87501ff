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
#include "nibble/io/json.h"
#include "nibble/limits.h"
#include "nibble/model/config.h"
#include "nibble/quantize.h"
#include "nibble/sim/arch.h"
#include "nibble/sim/energy.h"
#include "nibble/sim/event_device.h"
#include "nibble/sim/memory.h"
#include "nibble/train/data.h"
#include "nibble/train/recipe.h"
#include "nibble/train/study.h"
#include "nibble/train/sweep.h"
#include "nibble/train/train_config.h"
#include "sim_report.h"

namespace nibble::cli {
namespace {

struct WorkloadArgs {
  std::string arch, gemms, study, size, energy, json_out, csv_out;
  int layers = 0, d_model = 0, ctx = 0, batch = 0, mlp_mult = 0;
  std::vector<std::string> recipes, masks;
  bool per_gemm = false;
};

// One GEMM of the workload: where it comes from, its shape, how often it runs,
// and the quantizer work of its operands. `bf16`: it runs in BF16, not on the array.
struct Item {
  std::string name;   // "qkv.fprop", or the file's name
  std::string layers; // "0-11", "head", or "" for a file's GEMM
  sim::GemmShape shape;
  uint64_t count = 1;
  bool bf16 = false;
  uint64_t quantize_elements = 0;  // per run
  uint64_t rht_elements = 0;       // per run
};

// The result of one item on one configuration.
struct Row {
  const Item* item;
  sim::GemmStats stats;           // per run
  sim::ActionCounts actions;      // per run, quantizer work included
  uint64_t quantizer_cycles = 0;  // per run (0 where the arch gives no quantizer throughput)
};

std::string block_of(BlockShape b) { return std::string(name(b)); }

// --- the training step --------------------------------------------------------

// Every quantized-linear GEMM of one training step of `model` at `tokens` tokens per step,
// quantized as `recipe` says, layers with identical GEMMs merged (count). The LM head
// (BF16 in the trainer) is listed as BF16.
std::vector<Item> training_step(const train::ModelConfig& model, int64_t tokens, const train::Recipe& recipe) {
  std::vector<Item> items;
  std::map<std::string, size_t> merged;  // a GEMM's description -> its item
  const auto add = [&](Item it, int layer) {
    const sim::GemmShape& s = it.shape;
    const std::string key = fmt::format("{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}", it.name, it.bf16, s.m, s.n, s.k,
                                        name(s.format_a), name(s.format_b), name(s.scale_a), block_of(s.block_a),
                                        block_of(s.block_b), it.quantize_elements, it.rht_elements);
    const auto found = merged.find(key);
    if (found == merged.end()) {
      it.layers = std::to_string(layer);
      merged[key] = items.size();
      items.push_back(it);
    } else {
      Item& prev = items[found->second];
      ++prev.count;
      prev.layers = prev.layers.substr(0, prev.layers.find('-')) + "-" + std::to_string(layer);
    }
  };
  for (int layer = 0; layer < model.layers; ++layer) {
    for (const train::LinearShape& lin : train::block_linears(model)) {
      for (const train::Gemm g : train::kAllGemms) {
        // C = A B^T (recipe.h): fprop [T,in]x[out,in], dgrad [T,out]x[in,out], wgrad [out,T]x[in,T].
        Item it;
        it.name = fmt::format("{}.{}", lin.name, train::name(g));
        sim::GemmShape& s = it.shape;
        s.m = g == train::Gemm::kWgrad ? lin.out : tokens;
        s.n = g == train::Gemm::kFprop ? lin.out : lin.in;
        s.k = g == train::Gemm::kFprop ? lin.in : (g == train::Gemm::kDgrad ? lin.out : tokens);
        const auto qa = train::operand_config(recipe, g, train::Operand::kA, layer, model.layers, 0);
        const auto qb = train::operand_config(recipe, g, train::Operand::kB, layer, model.layers, 0);
        if (!qa || !qb) {
          it.bf16 = true;
        } else {
          s.format_a = qa->format;
          s.format_b = qb->format;
          s.scale_a = qa->scale;
          s.scale_b = qb->scale;
          s.block_a = qa->block;
          s.block_b = qb->block;
          const uint64_t elements = static_cast<uint64_t>(s.m * s.k + s.n * s.k);
          it.quantize_elements = elements;
          it.rht_elements = qa->rht.enabled() ? elements : 0;
        }
        add(it, layer);
      }
    }
  }
  // The untied LM head, [T, d] x [vocab, d]^T, and its two gradients: BF16 in the trainer.
  const int64_t d = model.d_model, vocab = train::kVocabSize;
  const int64_t shapes[3][3] = {{tokens, vocab, d}, {tokens, d, vocab}, {vocab, d, tokens}};
  for (const train::Gemm g : train::kAllGemms) {
    Item it;
    it.name = fmt::format("head.{}", train::name(g));
    it.layers = "head";
    it.bf16 = true;
    const auto& sh = shapes[static_cast<int>(g)];
    it.shape.m = sh[0];
    it.shape.n = sh[1];
    it.shape.k = sh[2];
    items.push_back(it);
  }
  return items;
}

// --- a GEMM list file ---------------------------------------------------------

[[noreturn]] void file_fail(const std::string& path, const std::string& key, const std::string& what) {
  throw UsageError(fmt::format("--gemms: {}: '{}' {}", path, key, what));
}

int64_t file_int(const std::string& path, const nlohmann::json& v, const std::string& key, int64_t lo, int64_t hi) {
  if (!v.is_number_integer()) file_fail(path, key, "must be an integer, got " + v.dump());
  if (v.is_number_unsigned() ? v.get<uint64_t>() > static_cast<uint64_t>(hi) : v.get<int64_t>() > hi) {
    file_fail(path, key, fmt::format("must be at most {}, got {}", hi, v.dump()));
  }
  if (v.get<int64_t>() < lo) file_fail(path, key, fmt::format("must be at least {}, got {}", lo, v.dump()));
  return v.get<int64_t>();
}

template <class T, size_t N, class Parse>
T file_name(const std::string& path, const nlohmann::json& v, const std::string& key, const std::array<T, N>& all,
            Parse parse) {
  std::string known;
  for (const T& x : all) known += (known.empty() ? "" : ", ") + std::string(name(x));
  if (!v.is_string()) file_fail(path, key, "must be a string (one of " + known + "), got " + v.dump());
  const std::optional<T> x = parse(v.get<std::string>());
  if (!x) file_fail(path, key, "unknown name " + v.dump() + " (expected one of " + known + ")");
  return *x;
}

// {"gemms": [{"name", "m", "n", "k", "format_a", "format_b", "scale", "block_a", "block_b", "count", "rht"}]}
std::vector<Item> gemm_list(const std::string& path) {
  note_input(path, "--gemms");
  nlohmann::json j;
  try {
    j = io::parse_json(io::read_text_file(path, limits::kMaxJsonBytes),
                       io::refuse_repeated_keys([&path](const std::string& key) { file_fail(path, key, "is given twice"); }));
  } catch (const io::JsonError& e) {
    throw UsageError(fmt::format("--gemms: {}: {}", path, e.what()));
  }
  if (!j.is_object() || !j.contains("gemms") || j.size() != 1) {
    throw UsageError(fmt::format("--gemms: {}: must be an object with the one key \"gemms\"", path));
  }
  const nlohmann::json& list = j["gemms"];
  if (!list.is_array() || list.empty()) file_fail(path, "gemms", "must be a non-empty array");
  std::vector<Item> items;
  for (size_t i = 0; i < list.size(); ++i) {
    const nlohmann::json& g = list[i];
    const std::string at = fmt::format("gemms[{}]", i);
    if (!g.is_object()) file_fail(path, at, "must be an object, got " + g.dump());
    for (const char* required : {"m", "n", "k"}) {
      if (!g.contains(required)) file_fail(path, at + "." + required, "is missing (required: m, n, k)");
    }
    Item it;
    it.name = at;
    sim::GemmShape& s = it.shape;
    ScaleMode scale = ScaleMode::kNVFP4;
    bool rht = false;
    for (auto kv = g.begin(); kv != g.end(); ++kv) {
      const std::string key = at + "." + kv.key();
      const nlohmann::json& v = kv.value();
      if (kv.key() == "name") {
        if (!v.is_string() || v.get<std::string>().empty()) file_fail(path, key, "must be a non-empty string");
        it.name = v.get<std::string>();
      } else if (kv.key() == "m") {
        s.m = file_int(path, v, key, 1, int64_t{1} << 32);
      } else if (kv.key() == "n") {
        s.n = file_int(path, v, key, 1, int64_t{1} << 32);
      } else if (kv.key() == "k") {
        s.k = file_int(path, v, key, 1, int64_t{1} << 32);
      } else if (kv.key() == "count") {
        it.count = static_cast<uint64_t>(file_int(path, v, key, 1, int64_t{1} << 32));
      } else if (kv.key() == "format_a") {
        s.format_a = file_name(path, v, key, kAllFormats, parse_format);
      } else if (kv.key() == "format_b") {
        s.format_b = file_name(path, v, key, kAllFormats, parse_format);
      } else if (kv.key() == "scale") {
        scale = file_name(path, v, key, kAllScaleModes, parse_scale_mode);
      } else if (kv.key() == "block_a") {
        s.block_a = file_name(path, v, key, kAllBlockShapes, parse_block_shape);
      } else if (kv.key() == "block_b") {
        s.block_b = file_name(path, v, key, kAllBlockShapes, parse_block_shape);
      } else if (kv.key() == "rht") {
        if (!v.is_boolean()) file_fail(path, key, "must be true or false, got " + v.dump());
        rht = v.get<bool>();
      } else {
        file_fail(path, key, "is an unknown key (known: name, m, n, k, format_a, format_b, scale, block_a, block_b, "
                             "count, rht)");
      }
    }
    s.scale_a = s.scale_b = scale;
    const uint64_t elements = static_cast<uint64_t>(s.m * s.k + s.n * s.k);
    it.quantize_elements = elements;
    it.rht_elements = rht ? elements : 0;
    items.push_back(it);
  }
  return items;
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

double utilization(uint64_t macs, uint64_t cycles, uint64_t peak) {
  return cycles && peak ? static_cast<double>(macs) / (static_cast<double>(cycles) * static_cast<double>(peak)) : 0.0;
}

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
  std::optional<sim::EnergyTable> table;
  if (!a.energy.empty()) {
    note_input(a.energy, "--energy");
    try {
      table = sim::energy_table_from_json_file(a.energy);
    } catch (const model::ConfigError& e) {
      throw UsageError(std::string("--energy: ") + e.what());
    }
  }

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
      items = training_step(model, tokens, r);
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

  // Every GEMM must fit its array before any runs: a format the mask lacks is bad input.
  for (const Config& c : configs) {
    for (const Item& it : c.items) {
      if (it.bf16) continue;
      try {
        sim::check_tile_shape(it.name, c.arch.tile, it.shape);
      } catch (const std::invalid_argument& e) {
        throw UsageError(fmt::format("{}{}: {}", c.recipe.empty() ? std::string() : "recipe '" + c.recipe + "', ",
                                     "mask " + sim::mask_name(c.arch.tile.formats), e.what()));
      }
    }
  }

  const bool csv = !a.csv_out.empty();
  std::ofstream csv_file = open_output(a.csv_out, "--csv");
  if (csv) {
    csv_file << "recipe,mask,gemm,layers,count,m,n,k,format_a,format_b,scale,block_a,block_b,bf16,cycles,utilization,"
                "stall_operand,stall_output,stall_pipeline,stall_sram,stall_dram,dram_read_bytes,buffer_fill_bytes,"
                "operand_bytes,c_bytes,accumulator_bytes,dram_write_bytes,quantize_elements,rht_elements,"
                "quantizer_cycles,energy_pj\n";
  }
  nlohmann::json out_configs = nlohmann::json::array();
  const bool progress = configs.size() * configs.front().items.size() > 24;
  size_t done = 0, total = 0;
  for (const Config& c : configs) total += c.items.size();

  for (const Config& c : configs) {
    const sim::EventDevice dev(c.arch, {}, sim::EventDevice::Values::kNone);
    const std::string mask = sim::mask_name(c.arch.tile.formats);
    std::vector<Row> rows;
    sim::GemmStats sum;
    sim::ActionCounts sum_actions;
    uint64_t sum_quantizer = 0, bf16_macs = 0, array_macs = 0;
    for (const Item& it : c.items) {
      ++done;
      if (progress) fmt::print(stderr, "\r[{}/{}] GEMMs", done, total);
      if (it.bf16) {
        bf16_macs += static_cast<uint64_t>(it.shape.m * it.shape.n * it.shape.k) * it.count;
        rows.push_back({&it, {}, {}, 0});
        continue;
      }
      Row r{&it, {}, {}, 0};
      try {
        r.stats = dev.time(it.shape);
      } catch (const std::invalid_argument& e) {
        throw UsageError(e.what());
      }
      r.actions = sim::count_actions(c.arch, r.stats);
      r.actions[sim::Action::kQuantize] = it.quantize_elements;
      r.actions[sim::Action::kRht] = it.rht_elements;
      if (c.arch.quantizer) {
        r.quantizer_cycles =
            static_cast<uint64_t>(std::ceil(static_cast<double>(it.quantize_elements) / c.arch.quantizer->elements_per_cycle)) +
            static_cast<uint64_t>(std::ceil(static_cast<double>(it.rht_elements) / c.arch.quantizer->rht_elements_per_cycle));
      }
      const uint64_t n = it.count;
      sum.cycles += r.stats.cycles * n;
      sum.macs += r.stats.macs * n;
      sum.beats += r.stats.beats * n;
      sum.stall_operand += r.stats.stall_operand * n;
      sum.stall_output += r.stats.stall_output * n;
      sum.stall_pipeline += r.stats.stall_pipeline * n;
      sum.stall_sram += r.stats.stall_sram * n;
      sum.stall_dram += r.stats.stall_dram * n;
      sum.operand_bytes += r.stats.operand_bytes * n;
      sum.traffic.dram_read_bytes += r.stats.traffic.dram_read_bytes * n;
      sum.traffic.buffer_fill_bytes += r.stats.traffic.buffer_fill_bytes * n;
      sum.traffic.c_bytes += r.stats.traffic.c_bytes * n;
      sum.traffic.accumulator_bytes += r.stats.traffic.accumulator_bytes * n;
      sum.traffic.dram_write_bytes += r.stats.traffic.dram_write_bytes * n;
      for (int i = 0; i < sim::kActionCount; ++i) sum_actions.n[i] += r.actions.n[i] * n;
      sum_quantizer += r.quantizer_cycles * n;
      array_macs += r.stats.macs * n;
      rows.push_back(r);
    }
    if (progress) fmt::print(stderr, "\n");
    const uint64_t peak = static_cast<uint64_t>(c.arch.tiles) * static_cast<uint64_t>(c.arch.tile.rows) *
                          static_cast<uint64_t>(c.arch.tile.cols) * static_cast<uint64_t>(c.arch.tile.lanes);

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
      for (const Row& r : rows) {
        const Item& it = *r.item;
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
               100.0 * utilization(array_macs, sum.cycles, peak),
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
    if (bf16_macs) fmt::print("BF16 GEMMs     {} MACs, not on the array (the recipe's BF16 layers, the LM head)\n", bf16_macs);
    std::string counts;
    for (int i = 0; i < sim::kActionCount; ++i) {
      counts += fmt::format("{}{} {}", i ? "  " : "", sim::name(static_cast<sim::Action>(i)), sum_actions.n[i]);
    }
    fmt::print("actions        {}\n", counts);
    std::optional<sim::Energy> energy;
    if (table) {
      energy = sim::price(*table, mask, sum_actions);
      std::string unpriced;
      for (const std::string& u : energy->unpriced) unpriced += (unpriced.empty() ? "" : ", ") + u;
      fmt::print("energy         {:.6g} uJ per {} from {}{}\n", energy->total_pj * 1e-6,
                 from_model ? "training step" : "workload", a.energy,
                 unpriced.empty() ? std::string() : " (not priced, the table has no entry: " + unpriced + ")");
    } else {
      fmt::print("energy         not computed: no energy-per-action table (--energy)\n");
    }
    fmt::print("\n");

    // JSON and CSV.
    nlohmann::json gemms = nlohmann::json::array();
    for (const Row& r : rows) {
      const Item& it = *r.item;
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
          e = sim::price(*table, mask, r.actions);
          g["energy_per_run"] = energy_json(*e);
        }
      }
      gemms.push_back(g);
      if (csv) {
        const sim::GemmStats& s = r.stats;
        csv_file << fmt::format("{},{},{},{},{},{},{},{},", c.recipe, mask, it.name, it.layers, it.count, it.shape.m,
                                it.shape.n, it.shape.k);
        if (it.bf16) {
          csv_file << ",,,,,1" << std::string(17, ',') << "\n";  // no format, timing or traffic: 17 empty columns
        } else {
          csv_file << fmt::format("{},{},{},{},{},0,{},{:.6f},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}\n",
                                  name(it.shape.format_a), name(it.shape.format_b), name(it.shape.scale_a),
                                  block_of(it.shape.block_a), block_of(it.shape.block_b), s.cycles, s.utilization(),
                                  s.stall_operand, s.stall_output, s.stall_pipeline, s.stall_sram, s.stall_dram,
                                  s.traffic.dram_read_bytes, s.traffic.buffer_fill_bytes, s.operand_bytes,
                                  s.traffic.c_bytes, s.traffic.accumulator_bytes, s.traffic.dram_write_bytes,
                                  it.quantize_elements, it.rht_elements, r.quantizer_cycles,
                                  e ? fmt::format("{:.6g}", e->total_pj) : std::string());
        }
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
                           {"utilization", utilization(array_macs, sum.cycles, peak)},
                           {"bf16_macs", bf16_macs},
                           {"quantizer_cycles", c.arch.quantizer ? nlohmann::json(sum_quantizer) : nlohmann::json(nullptr)},
                           {"stats", stats_json(sum)},
                           {"actions", actions_json(sum_actions)}}}};
    if (c.arch.clock_ghz) jc["total"]["gemm_seconds"] = static_cast<double>(sum.cycles) / (*c.arch.clock_ghz * 1e9);
    if (energy) jc["total"]["energy"] = energy_json(*energy);
    out_configs.push_back(jc);
  }
  if (csv) finish_output(csv_file, a.csv_out);
  if (!a.json_out.empty()) {
    nlohmann::json j = {{"configurations", out_configs}};
    if (from_model) {
      j["model"] = {{"layers", model.layers}, {"d_model", model.d_model}, {"ctx", model.ctx},
                    {"mlp_mult", model.mlp_mult}, {"batch", batch}, {"tokens", tokens}};
    }
    if (table) j["energy_table"] = {{"path", a.energy}, {"source", table->source}};
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
  cmd->add_option("--energy", a.energy, "Energy-per-action table (JSON; see sim/include/nibble/sim/energy.h)")
      ->type_name("FILE");
  cmd->add_flag("--per-gemm", a.per_gemm, "Print a line per GEMM (the JSON and CSV always have them)");
  cmd->add_option("--json", a.json_out, "Write the report as JSON")->type_name("FILE");
  cmd->add_option("--csv", a.csv_out, "Write a row per GEMM and configuration as CSV")->type_name("FILE");
  cmd->callback([args] { run_workload(*args); });
}

}  // namespace nibble::cli
