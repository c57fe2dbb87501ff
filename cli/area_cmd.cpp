// `nibble area`: the command line of the area flow (nibble/power/area_flow.h), its table on
// standard output and its results as JSON and CSV files.
#include <CLI/CLI.hpp>
#include <fmt/core.h>

#include <memory>
#include <string>

#include "commands.h"
#include "nibble/power/area_flow.h"

namespace nibble::cli {
namespace {

struct AreaArgs {
  power::AreaOptions flow;
  std::string json_out, csv_out;
};

}  // namespace

void add_flow_options(CLI::App* sub, power::FlowOptions& flow, std::string& json_out, std::string& csv_out,
                      const std::string& cache_help) {
  sub->add_option("--json", json_out, "write the results as JSON");
  sub->add_option("--csv", csv_out, "write the results as CSV");
  sub->add_option("--yosys", flow.yosys, "the yosys executable (default: NIBBLE_YOSYS, configure-time, PATH)");
  sub->add_option("--python", flow.python, "the python3 executable (default: python3 on PATH)");
  sub->add_option("--synth-dir", flow.synth_dir, "the flow's directory (default: <source>/rtl/synth)");
  sub->add_option("--cache", flow.cache, cache_help);
}

void add_area_command(CLI::App& app) {
  auto args = std::make_shared<AreaArgs>();
  CLI::App* sub = app.add_subcommand(
      "area",
      "Synthesize the DPU (or a tile, the quantizer, the RHT unit) per format mask with Yosys and "
      "report area, cells, flops and depth vs E2M1-only (docs/area-energy.md)");
  sub->add_option("--unit", args->flow.units,
                  "comma-separated units: dpu (nibble_dpu, or nibble_tile with --tile), quantizer "
                  "(nibble_quantizer, per format mask), quantizer-pipe (the same with its dividers pipelined "
                  "for the clock target, DivStages=" +
                      std::to_string(nibble::power::kQuantPipeDivStages) +
                      "), rht16 (nibble_rht16, no parameters)")
      ->capture_default_str();
  CLI::Option* configs = sub->add_option("--configs", args->flow.configs,
                                         "comma-separated: " + power::config_names() +
                                             ", or any other formats joined by +")
                             ->capture_default_str();
  CLI::Option* lanes =
      sub->add_option("--lanes", args->flow.lanes, "lanes per DPU / quantizer block: 16 or 32")->capture_default_str();
  CLI::Option* designs =
      sub->add_option("--lane-design", args->flow.lane_designs,
                      "comma-separated lane designs of the DPU (or tile): " + power::lane_design_names() + ", or all")
          ->capture_default_str();
  CLI::Option* scales =
      sub->add_option("--scales", args->flow.scales,
                      "comma-separated block-scale format sets the DPU (or tile) decodes: all (= e4m3+ue8m0+fp32), "
                      "e4m3+ue8m0 (NVFP4 / MX scales only), fp32 (the UFP4 paper's)")
          ->capture_default_str();
  sub->add_flag("--breakdown", args->flow.breakdown,
                "also synthesize each DPU hierarchically and print its area per sub-block");
  sub->add_option("--tile", args->flow.tile, "synthesize nibble_tile with M x N DPUs instead (e.g. 2x2)");
  sub->add_option("--liberty", args->flow.liberty,
                  "a Liberty library (.lib or .lib.gz) instead of the generic one: areas in um^2");
  add_flow_options(sub, args->flow, args->json_out, args->csv_out,
                   "reuse/store synthesis results in DIR (keyed by RTL, flow, library and parameters; "
                   "shared with nibble energy)");
  sub->add_option("--keep", args->flow.keep, "keep each run's Yosys script, log and netlist under DIR/<config>");
  sub->add_flag("--sta", args->flow.sta,
                "time each mapped netlist with OpenSTA (needs --liberty): the worst path and Fmax, the slack at "
                "--clock-ns");
  sub->add_option("--clock-ns", args->flow.clock_ns,
                  "the clock period --sta reports the slack against and --map timing maps for")
      ->capture_default_str();
  sub->add_option("--sta-bin", args->flow.sta_bin, "the OpenSTA executable (default: sta on PATH)");
  sub->add_flag("--strict", args->flow.strict, "with --sta or --map timing: exit 2 if a netlist misses --clock-ns");
  sub->add_option("--map", args->flow.map,
                  "ABC's mapping: area (the least area) or timing (for the --clock-ns period: delay-driven "
                  "mapping and gate sizing; needs --liberty, implies --sta)")
      ->capture_default_str();
  CLI::Option* tile = sub->get_option("--tile");
  sub->add_option("--level", args->flow.level,
                  "the format overhead at each level up to this one: lane, dpu, array (nibble_tile, --tile, "
                  "default 2x2) or tensor-core (+ operand register files and a share of the quantizer and RHT "
                  "unit), composed from separately synthesized parts");
  CLI::Option* rf_depth = sub->add_option("--rf-depth", args->flow.rf_depth,
                  "--level tensor-core: k-blocks per operand register file (two panels for double buffering)")
      ->capture_default_str();
  CLI::Option* gemm_k = sub->add_option("--gemm-k", args->flow.gemm_k,
                  "--level tensor-core: elements of K per output tile; the quantizer and RHT share is "
                  "rows x cols / K")
      ->capture_default_str();
  sub->callback([args, configs, lanes, designs, scales, tile, rf_depth, gemm_k] {
    power::AreaOptions& o = args->flow;
    o.configs_given = configs->count() > 0;
    o.lanes_given = lanes->count() > 0;
    o.designs_given = designs->count() > 0;
    o.scales_given = scales->count() > 0;
    o.tile_given = tile->count() > 0;
    o.rf_depth_given = rf_depth->count() > 0;
    o.gemm_k_given = gemm_k->count() > 0;
    o.progress = [](const std::string& line) { fmt::print(stderr, "{}\n", line); };
    o.prepare_directory = prepare_directory;
    const power::AreaFlowReport report = power::run_area(o);
    fmt::print("{}", report.table);
    if (!report.strict_error.empty()) throw UsageError(report.strict_error);
    if (!args->json_out.empty()) write_output(args->json_out, "--json", report.json.dump(2) + "\n");
    if (!args->csv_out.empty()) write_output(args->csv_out, "--csv", report.csv);
  });
}

}  // namespace nibble::cli
