// Section 9: a training step on this array. For every size of the recorded
// scaling study and every recipe it trained, one training step of that model
// (its Fprop, Dgrad and Wgrad GEMMs and the quantizer work) timed on the
// example array by the event model (sim::time_workload, timing only), per
// format mask, with the DPU's energy per step priced from the hardware-cost
// flow's energy-per-action file, beside the recipe's recorded loss gap to BF16.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "sections.h"

#ifdef NIBBLE_REPORT_WORKLOAD
#include "nibble/model/config.h"
#include "nibble/sim/arch.h"
#include "nibble/sim/energy.h"
#include "nibble/sim/workload.h"
#include "nibble/train/recipe.h"
#include "nibble/train/sweep.h"
#include "nibble/train/train_config.h"
#endif

namespace nibble::report::detail {

#ifndef NIBBLE_REPORT_WORKLOAD

Section workload_section(ReportContext&) {
  Section s;
  s.id = "workload";
  s.title = prose("workload", "title");
  s.source = prose("workload", "source_absent");
  s.notes_html = prose("workload", "absent") + "\n";
  return s;
}

#else

namespace {

// The gap of an arm as the study records it, in percentage points: "+1.23 ± 0.45 (5 seeds)".
std::string gap_text(const nlohmann::json& gap) {
  const auto number = [&](const char* k) {
    return gap.is_object() && gap.contains(k) && gap[k].is_number() ? gap[k].get<double>() : std::nan("");
  };
  const double mean = number("mean"), hw = number("ci_half_width"), n = number("n");
  if (!std::isfinite(mean)) return "not recorded yet";
  if (!std::isfinite(hw)) return fmt::format("{:+.3f} (one seed)", 100 * mean);
  return fmt::format("{:+.3f} ± {:.3f} ({:.0f} seeds)", 100 * mean, 100 * hw, n);
}

struct Size {
  std::string name;
  train::ModelConfig model;
  int batch = 0;
  std::vector<std::pair<std::string, nlohmann::json>> arms;  // recipe, its gap (null for the baseline)
};

// The study's sizes and arms from its summary; a size it cannot read is skipped, named in `skipped`.
std::vector<Size> study_sizes(const nlohmann::json& summary, std::string& skipped) {
  std::vector<Size> sizes;
  for (const auto& z : summary.value("sizes", nlohmann::json::array())) {
    Size sz;
    sz.name = z.value("name", std::string("?"));
    const nlohmann::json m = z.value("model", nlohmann::json());
    const auto integer = [](const nlohmann::json& j, const char* k) {
      return j.is_object() && j.contains(k) && j[k].is_number_integer() ? j[k].get<int>() : 0;
    };
    sz.model.layers = integer(m, "layers");
    sz.model.d_model = integer(m, "d_model");
    sz.model.heads = integer(m, "heads");
    sz.model.ctx = integer(m, "ctx");
    sz.model.mlp_mult = integer(m, "mlp_mult");
    sz.batch = integer(z, "batch");
    train::TrainConfig tc;
    tc.model = sz.model;
    tc.batch = sz.batch;
    try {
      train::validate(tc);
    } catch (const std::invalid_argument& e) {
      skipped += fmt::format("{}{} ({})", skipped.empty() ? "" : "; ", sz.name, e.what());
      continue;
    }
    for (const auto& a : z.value("arms", nlohmann::json::array())) {
      if (a.is_object() && a.contains("recipe") && a["recipe"].is_string()) {
        sz.arms.emplace_back(a["recipe"].get<std::string>(), a.value("gap", nlohmann::json()));
      }
    }
    sizes.push_back(sz);
  }
  return sizes;
}

}  // namespace

Section workload_section(ReportContext& ctx) {
  const Writer& w = ctx.writer;
  Section s;
  s.id = "workload";
  s.title = prose("workload", "title");
  const std::string arch_path = NIBBLE_REPORT_ARCH;
  if (!ctx.study.present) {
    mark_absent(s, "workload", prose("workload", "no_study_what"), ctx.study.problem, prose("workload", "no_study_how"));
    return s;
  }
  sim::ArchConfig arch;
  try {
    arch = sim::arch_from_json_file(arch_path);
  } catch (const model::ConfigError& e) {
    mark_absent(s, "workload", prose("workload", "no_arch_what"), e.what(), prose("workload", "no_arch_how"));
    return s;
  }
  if (ctx.options.progress) ctx.options.progress("timing a training step per study size and recipe on " + arch_path);

  // The DPU's energy from the recorded flow's file (the report's results directory, not the file
  // the architecture names), with the lane design, operands and scale formats the architecture
  // file chooses (its "energy" key; the defaults where it has none).
  sim::DpuEnergyChoice choice;
  if (arch.energy) choice = {arch.energy->lane_design, arch.energy->operands, arch.energy->scale_formats};
  const std::string energy_path = (fs::path(ctx.options.results_dir) / "energy-actions.json").string();
  std::optional<sim::EnergyTable> energy;
  std::string energy_note;
  if (!fs::exists(energy_path)) {
    energy_note = prose("workload", "no_energy_note", {{"path", energy_path}});
  } else {
    try {
      energy = sim::energy_table_from_any_json_file(energy_path, sim::resolve(choice, arch.tile.scale_modes));
      energy_note = energy->source;
    } catch (const model::ConfigError& e) {
      energy_note = prose("workload", "bad_energy_note", {{"problem", e.what()}});
    }
  }

  // The SRAM and DRAM bytes at the recorded cited figure, where there is one: beside the DPU's
  // prices, never instead of them.
  const std::string memory_path = (fs::path(ctx.options.results_dir) / "energy-memory-cited.json").string();
  std::optional<sim::EnergyTable> with_memory;
  std::string memory_note;
  if (energy && fs::exists(memory_path)) {
    try {
      const sim::EnergyTable memory = sim::energy_table_from_any_json_file(memory_path, {});
      with_memory = sim::merge_energy_tables(*energy, memory);
      memory_note = prose("workload", "memory_note", {{"source", memory.source}});
    } catch (const model::ConfigError& e) {
      memory_note = prose("workload", "bad_memory_note", {{"problem", e.what()}});
    }
  }

  std::string skipped;
  const std::vector<Size> sizes = study_sizes(ctx.study.summary, skipped);
  // Masks: E2M1 alone and the array's own (every format).
  std::vector<std::vector<Format>> masks = {{Format::kE2M1}};
  if (sim::mask_name(arch.tile.formats) != "e2m1") masks.push_back(arch.tile.formats);

  Table t{"workload",
          "",
          {"size", "recipe", "mask", "GEMM time per step", "utilization", "quantizer per step", "BF16 MACs off the array",
           "DPU energy per step", "with SRAM and DRAM", "loss gap to BF16 (pp)"},
          {}};
  io::CsvTable csv({"size", "recipe", "mask", "layers", "d_model", "mlp_mult", "ctx", "batch", "tokens", "on_array",
                    "gemm_cycles", "gemm_seconds", "utilization", "quantizer_cycles", "array_macs", "bf16_macs",
                    "dpu_block_ops", "dpu_energy_pj", "memory_energy_pj", "gap_mean", "gap_ci_half_width", "gap_n"});
  nlohmann::json rows = nlohmann::json::array();
  std::string not_run;
  for (const Size& sz : sizes) {
    const int64_t tokens = static_cast<int64_t>(sz.batch) * sz.model.ctx;
    for (const auto& [spec, gap] : sz.arms) {
      train::Recipe recipe;
      try {
        recipe = train::parse_recipe_spec(spec);
      } catch (const train::RecipeError& e) {
        not_run += fmt::format("{}{} {}: {}", not_run.empty() ? "" : "; ", sz.name, spec, e.what());
        continue;
      }
      const std::vector<sim::WorkloadGemm> gemms = sim::training_step_gemms(sz.model, tokens, recipe);
      bool any_on_array = false;
      for (const sim::WorkloadGemm& g : gemms) any_on_array |= !g.bf16;
      const double gap_mean = gap.is_object() && gap.value("mean", nlohmann::json()).is_number() ? gap["mean"].get<double>() : std::nan("");
      const double gap_hw = gap.is_object() && gap.value("ci_half_width", nlohmann::json()).is_number() ? gap["ci_half_width"].get<double>() : std::nan("");
      const int gap_n = gap.is_object() && gap.value("n", nlohmann::json()).is_number_integer() ? gap["n"].get<int>() : 0;
      const std::string gap_cell = gap.is_object() ? gap_text(gap) : "0 (baseline)";
      nlohmann::json model_json = {{"layers", sz.model.layers}, {"d_model", sz.model.d_model},
                                   {"mlp_mult", sz.model.mlp_mult}, {"ctx", sz.model.ctx}, {"batch", sz.batch},
                                   {"tokens", tokens}};
      if (!any_on_array) {
        t.rows.push_back({sz.name, spec, "-", "BF16: not on this array", "-", "-", "all", "-", "-", gap_cell});
        csv.add({sz.name, spec, "", sz.model.layers, sz.model.d_model, sz.model.mlp_mult, sz.model.ctx, sz.batch,
                 tokens, 0, "", "", "", "", "", "", "", "", "", gap_mean, gap_hw, gap_n});
        rows.push_back({{"size", sz.name}, {"recipe", spec}, {"model", model_json}, {"on_array", false}});
        continue;
      }
      // Timed once on the array's own mask: the mask changes no cycle and no byte, only the DPU's energy.
      std::optional<sim::WorkloadRun> run_on_array;
      for (const std::vector<Format>& mask : masks) {
        sim::ArchConfig a = arch;
        a.tile.formats = mask;
        const std::string mask_name = sim::mask_name(mask);
        try {
          sim::check_workload(a, gemms);
          if (!run_on_array) {
            sim::check_workload(arch, gemms);
            run_on_array = sim::time_workload(arch, gemms);
          }
        } catch (const std::invalid_argument& e) {
          const std::string why = fmt::format("{} on mask {} ({})", spec, mask_name, e.what());
          if (not_run.find(why) == std::string::npos) not_run += (not_run.empty() ? "" : "; ") + why;
          continue;
        }
        const sim::WorkloadRun& run = *run_on_array;
        std::optional<sim::Energy> e;
        if (energy && sim::prices_dpu(*energy, mask_name)) e = sim::price(*energy, a, run);
        const double dpu_pj = e ? e->pj[static_cast<int>(sim::Action::kDpuBlockOp)] : std::nan("");
        const bool dpu_priced = e && std::none_of(e->unpriced.begin(), e->unpriced.end(), [](const std::string& u) {
          return u.rfind(sim::name(sim::Action::kDpuBlockOp), 0) == 0;
        });
        // SRAM and DRAM bytes (reads and writes) at the cited figure, where the DPU is priced too.
        double memory_pj = std::nan("");
        if (dpu_priced && with_memory) {
          const sim::Energy m = sim::price(*with_memory, a, run);
          memory_pj = 0;
          for (sim::Action act : {sim::Action::kSramRead, sim::Action::kSramWrite, sim::Action::kDramRead,
                                  sim::Action::kDramWrite}) {
            memory_pj += m.pj[static_cast<int>(act)];
          }
        }
        const bool memory_priced = std::isfinite(memory_pj);
        const double seconds = run.seconds ? *run.seconds : std::nan("");
        const double q_seconds = arch.clock_ghz ? static_cast<double>(run.quantizer_cycles) / (*arch.clock_ghz * 1e9) : std::nan("");
        const uint64_t all_macs = run.array_macs + run.bf16_macs;
        t.rows.push_back({sz.name, spec, mask_name,
                          run.seconds ? fmt::format("{:.4g} ms ({} cycles)", 1e3 * seconds, run.total.cycles)
                                      : fmt::format("{} cycles", run.total.cycles),
                          fixed(100.0 * run.utilization, 1) + "%",
                          arch.clock_ghz ? fmt::format("{:.4g} ms", 1e3 * q_seconds) : fmt::format("{} cycles", run.quantizer_cycles),
                          fixed(100.0 * static_cast<double>(run.bf16_macs) / static_cast<double>(all_macs), 1) + "%",
                          dpu_priced ? fmt::format("{:.4g} mJ", dpu_pj * 1e-9) : "not priced",
                          memory_priced ? fmt::format("{:.4g} mJ", (dpu_pj + memory_pj) * 1e-9) : "not priced", gap_cell});
        csv.add({sz.name, spec, mask_name, sz.model.layers, sz.model.d_model, sz.model.mlp_mult, sz.model.ctx,
                 sz.batch, tokens, 1, run.total.cycles, seconds, run.utilization, run.quantizer_cycles, run.array_macs,
                 run.bf16_macs, run.actions[sim::Action::kDpuBlockOp], dpu_priced ? dpu_pj : NAN,
                 memory_priced ? memory_pj : NAN, gap_mean, gap_hw, gap_n});
        nlohmann::json r = {{"size", sz.name},
                            {"recipe", spec},
                            {"mask", mask_name},
                            {"model", model_json},
                            {"on_array", true},
                            {"gemm_cycles", run.total.cycles},
                            {"utilization", run.utilization},
                            {"quantizer_cycles", run.quantizer_cycles},
                            {"array_macs", run.array_macs},
                            {"bf16_macs", run.bf16_macs},
                            {"dpu_block_ops", run.actions[sim::Action::kDpuBlockOp]},
                            {"dpu_energy_pj", dpu_priced ? nlohmann::json(dpu_pj) : nlohmann::json(nullptr)},
                            {"memory_energy_pj", memory_priced ? nlohmann::json(memory_pj) : nlohmann::json(nullptr)},
                            {"gap", gap}};
        if (run.seconds) r["gemm_seconds"] = seconds;
        rows.push_back(r);
      }
    }
  }
  if (t.rows.empty()) {
    mark_absent(s, "workload", prose("workload", "no_sizes_what"),
                skipped.empty() ? prose("workload", "no_sizes_problem") : skipped, prose("workload", "no_sizes_how"));
    return s;
  }
  s.source = prose("workload", "source", {{"path", ctx.study.path}});
  t.caption = prose(
      "workload", "table_caption",
      {{"arch", arch_path.substr(arch_path.rfind("examples/") == std::string::npos ? 0 : arch_path.rfind("examples/"))},
       {"tiles", fmt::format("{}", arch.tiles)},
       {"rows", fmt::format("{}", arch.tile.rows)},
       {"cols", fmt::format("{}", arch.tile.cols)},
       {"lanes", fmt::format("{}", arch.tile.lanes)},
       {"dataflow", std::string(name(arch.dataflow))},
       {"clock", arch.clock_ghz ? fmt::format("{}", *arch.clock_ghz) : std::string("-")}});
  s.tables.push_back(t);
  w.text("data/workload.csv", csv.text());
  w.json("data/workload.json", {{"arch", arch_path},
                                 {"arch_config", nlohmann::json::parse(sim::to_json_text(arch))},
                                 {"energy", energy ? nlohmann::json(energy_path) : nlohmann::json(nullptr)},
                                 {"energy_source", energy_note},
                                 {"memory_energy", with_memory ? nlohmann::json(memory_path) : nlohmann::json(nullptr)},
                                 {"memory_energy_source", memory_note},
                                 {"study", ctx.study.path},
                                 {"rows", rows}});
  s.intro_html = prose("workload", "intro", {{"energy", energy_note + (memory_note.empty() ? "" : " " + memory_note)}}) + "\n";
  if (!not_run.empty() || !skipped.empty()) {
    s.notes_html =
        prose("workload", "not_run", {{"what", not_run + (not_run.empty() || skipped.empty() ? "" : "; ") + skipped}}) +
        "\n";
  }
  return s;
}

#endif

}  // namespace nibble::report::detail
