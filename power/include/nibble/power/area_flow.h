// The area flow behind `nibble area`: what first-class E1M2 / INT4 support costs in silicon
// next to E2M1. Synthesizes nibble_dpu (or nibble_tile with a tile MxN; with more units also
// the quantizer, nibble_quantizer, per format mask, and the RHT unit, nibble_rht16) once per
// format mask (and, for the DPU and tile, per lane design) with Yosys, mapped to a Liberty
// library (the project's technology-neutral rtl/synth/nibble_generic.lib, areas in NAND2 gate
// equivalents, by default; a real library gives areas in um^2), and tabulates area, cells,
// flops and depth with each configuration's increment over E2M1-only, beside MixFP4's
// published +3.1%. The breakdown adds the DPU's area per sub-block from a hierarchical
// synthesis; OpenSTA times the mapped netlists (sta, map = timing). A level composes the format
// overhead at every level from one lane up to a tensor core out of separately synthesized
// parts. The flow itself is rtl/synth/nibble_synth.py (docs/area-energy.md); this runs it per
// configuration and tabulates.
#pragma once

#include <string>

#include "nibble/power/lane_design.h"
#include "nibble/power/synth_flow.h"

namespace nibble::power {

// What to synthesize and how; each field is the `nibble area` option of the same name, and
// every message names that option.
// The tensor-core level's array where --tile does not give one: 2 x 2 DPUs of 16 lanes, 64
// MACs per cycle, as many as one Volta tensor core's 4x4x4 FMAs per cycle (larger arrays take
// tens of minutes per mask to synthesize flattened). nibble energy's tensor-core energy per
// MAC assumes the same array unless its --tile gives another, fed by one operand register file
// per row and per column.
// The pipelined quantizer of the clock target (`nibble area --unit quantizer-pipe`): the
// registers inside each of its two dividers, nibble_quant_pkg's QuantPipeDivStages
// (rtl_quant_test checks the two are equal).
inline constexpr unsigned kQuantPipeDivStages = 5;

inline constexpr int kLevelArrayRows = 2;
inline constexpr int kLevelArrayCols = 2;

struct AreaOptions : FlowOptions {
  std::string units = "dpu";
  std::string lane_designs = std::string(info(kDefaultLaneDesign).name);
  std::string scales = "all";
  bool breakdown = false;
  std::string configs = [] {
    std::string all;
    for (const Config& c : kConfigs) all += (all.empty() ? "" : ",") + c.name;
    return all;
  }();
  std::string lanes = "16";
  std::string tile;  // MxN
  std::string keep;  // each run's Yosys script, log and netlist under keep/<config>
  bool sta = false;      // time each mapped netlist with OpenSTA (needs --liberty)
  bool strict = false;   // --sta: a netlist that misses --clock-ns is an error
  std::string sta_bin;   // the OpenSTA executable
  double clock_ns = 10;  // the clock the slack is reported against (and --map timing maps for)
  std::string map = "area";  // ABC's mapping: area (least area) or timing (for --clock-ns)
  std::string level;     // --level: the levels table up to this level instead of the unit table
  int rf_depth = 8;      // --level tensor-core: entries per operand register file
  int gemm_k = 256;      // --level tensor-core: the reduction length per output tile
  // The options given explicitly rather than left at their defaults: some apply only to some
  // units or levels, and giving them elsewhere is an error.
  bool configs_given = false, lanes_given = false, designs_given = false, scales_given = false,
       tile_given = false, rf_depth_given = false, gemm_k_given = false;
};

// Beside the table, JSON and CSV:
struct AreaFlowReport : FlowReport {
  // --strict: why the run fails after its table is shown, before any result is written;
  // empty where it does not.
  std::string strict_error;
};

// Runs the flow: the unit table, or with `level` the levels table. FlowError on bad options, a
// missing tool or a failed run.
AreaFlowReport run_area(const AreaOptions& options);

}  // namespace nibble::power
