// The energy flow behind `nibble energy`: activity-based energy of the DPU per lane design and
// format configuration. Each configuration is synthesized by the area flow
// (rtl/synth/nibble_synth.py, the same netlist area_flow.h measures), its mapped netlist
// simulated gate by gate (GateSim) on block streams whose codes and scales come from golden's
// quantizer over Gaussian, Student-t, RHT-rotated or user tensors, and every cell-output toggle
// weighted by the cell's switching energy (docs/area-energy.md). Tabulates energy per
// 16-element block and per MAC per configuration, format and operand statistics. The
// calibration instead runs integer adders / multipliers and scalar E4M3 / BF16 MACs
// (rtl/synth/calib_blocks.v, calib_fpmac.v) through the same flow, beside Horowitz's published
// energies and the DPU per MAC.
#pragma once

#include <nlohmann/json.hpp>

#include <cstddef>
#include <cstdint>
#include <string>

#include "nibble/power/lane_design.h"
#include "nibble/power/synth_flow.h"

namespace nibble::power {

// What to run; each field is the `nibble energy` option of the same name, and every message
// names that option.
struct EnergyOptions : FlowOptions {
  std::string configs = [] {
    std::string measured;
    for (const Config& c : kConfigs) {
      if (c.energy_default) measured += (measured.empty() ? "" : ",") + c.name;
    }
    return measured;
  }();
  std::string lane_designs = std::string(info(kDefaultLaneDesign).name);
  std::string scales = "all";
  std::string dists = "gaussian,student-t,rht";
  std::string tensor_a, tensor_b;
  size_t blocks = 2048;
  int64_t k = 256;
  double clock_ns = 10.0;
  double dof = 3.0;
  uint64_t seed = 1;
  bool calibration = false;
  bool breakdown = false;
  std::string tile;          // MxN: the tensor-core level's array (default kLevelArrayRows x kLevelArrayCols)
  std::string command_line;  // recorded in the actions
};

// Beside the table, JSON and CSV: the energy per action for a cycle-level simulator. The
// calibration has no CSV (empty) and no actions (null).
struct EnergyFlowReport : FlowReport {
  nlohmann::json actions;
};

// Runs the flow. FlowError on bad options, a missing tool or a failed run.
EnergyFlowReport run_energy(const EnergyOptions& options);

}  // namespace nibble::power
