// `nibble energy`: the command line of the energy flow (nibble/power/energy_flow.h), its table
// on standard output and its results as JSON, CSV and per-action files.
#include <CLI/CLI.hpp>
#include <fmt/core.h>

#include <cmath>
#include <exception>
#include <memory>
#include <string>

#include "commands.h"
#include "nibble/power/energy_flow.h"

namespace nibble::cli {
namespace {

struct EnergyArgs {
  power::EnergyOptions flow;
  std::string json_out, csv_out, actions_out;
};

}  // namespace

void add_energy_command(CLI::App& app) {
  auto args = std::make_shared<EnergyArgs>();
  CLI::App* sub = app.add_subcommand(
      "energy",
      "Activity-based energy of the synthesized DPU per format configuration, on golden-quantized operand "
      "streams (docs/area-energy.md)");
  sub->add_option("--configs", args->flow.configs, "comma-separated: " + power::config_names() +
                                                    ", or any other formats joined by +")
      ->capture_default_str();
  sub->add_option("--lane-design", args->flow.lane_designs,
                  "comma-separated lane designs of the DPU: " + power::lane_design_names() + ", or all (--calibration: the first)")
      ->capture_default_str();
  sub->add_option("--scales", args->flow.scales,
                  "comma-separated block-scale format sets the DPU decodes: all (= e4m3+ue8m0+fp32), e4m3+ue8m0, fp32; "
                  "the streams use E4M3 scales (nvfp4), FP32 scales on the fp32 DPU")
      ->capture_default_str();
  sub->add_option("--dists", args->flow.dists, "synthetic operands: gaussian, student-t, rht (Student-t after a 16-point RHT)")
      ->capture_default_str();
  sub->add_option("--tensor", args->flow.tensor_a, "also run a user tensor (.npy, .safetensors[:NAME]): rows of k elements, "
                                              "dot products of its rows (or with --tensor-b's rows)");
  sub->add_option("--tensor-b", args->flow.tensor_b, "the second operand's tensor (default: --tensor)");
  sub->add_option("--blocks", args->flow.blocks, "blocks simulated per configuration, format and operand set")
      ->capture_default_str();
  sub->add_option("--k", args->flow.k, "dot-product length of the synthetic streams (multiple of 16)")->capture_default_str();
  sub->add_option("--dof", args->flow.dof, "Student-t degrees of freedom (finite, > 2: the variance must exist)")
      ->capture_default_str()
      ->check(CLI::Validator(
          [](const std::string& v) {
            try {
              size_t used = 0;
              const double d = std::stod(v, &used);
              if (used == v.size() && std::isfinite(d) && d > 2) return std::string();
            } catch (const std::exception&) {
            }
            return "--dof must be a finite number above 2, got '" + v + "'";
          },
          "DOF > 2"));
  sub->add_option("--seed", args->flow.seed, "seed of the synthetic tensors")->capture_default_str();
  sub->add_option("--clock-ns", args->flow.clock_ns, "clock period for leakage energy (real libraries)")->capture_default_str();
  sub->add_option("--liberty", args->flow.liberty, "a Liberty library (.lib or .lib.gz): energies in pJ");
  add_flow_options(sub, args->flow, args->json_out, args->csv_out,
                   "reuse/store synthesis results in DIR (shared with nibble area --cache)");
  sub->add_option("--actions", args->actions_out,
                  "write the energy per action (DPU block and idle cycle per lane design, scale formats, format "
                  "mask and operands) as JSON for a cycle-level simulator");
  sub->add_option("--tile", args->flow.tile,
                  "the tensor-core level's array for the energy per MAC with operand staging, MxN DPUs (one "
                  "register file per row and per column; default 2x2)");
  sub->add_flag("--breakdown", args->flow.breakdown,
                "also synthesize each DPU hierarchically, run the same streams and print the energy per MAC per "
                "sub-block");
  sub->add_flag("--calibration", args->flow.calibration,
                "instead: integer adders / multipliers (8, 32 bits) with random operands, beside Horowitz's "
                "published energies (ISSCC 2014), and E4M3 / BF16 MACs into FP32 next to the 4-bit DPU per MAC");
  sub->callback([args] {
    power::EnergyOptions& o = args->flow;
    o.command_line = command_line();
    o.progress = [](const std::string& line) { fmt::print(stderr, "{}\n", line); };
    o.prepare_directory = prepare_directory;
    const power::EnergyFlowReport report = power::run_energy(o);
    fmt::print("{}", report.table);
    if (!args->json_out.empty()) write_output(args->json_out, "--json", report.json.dump(2) + "\n");
    if (!args->actions_out.empty() && !report.actions.is_null()) {
      write_output(args->actions_out, "--actions", report.actions.dump(1) + "\n");
    }
    if (!args->csv_out.empty() && !report.csv.empty()) write_output(args->csv_out, "--csv", report.csv);
  });
}

}  // namespace nibble::cli
