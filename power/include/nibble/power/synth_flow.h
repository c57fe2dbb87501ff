// What the area flow (area_flow.h) and the energy flow (energy_flow.h) share: the format
// configurations a unit is synthesized for, how rtl/synth/nibble_synth.py is found and run,
// and the DPU's sub-blocks. The flows report bad input and failed tool runs as FlowError.
#pragma once

#include <nlohmann/json.hpp>

#include <array>
#include <filesystem>
#include <functional>
#include <iterator>
#include <stdexcept>
#include <string>
#include <vector>

#include "nibble/format_sets.h"
#include "nibble/power/lane_design.h"
#include "nibble/published.h"

namespace nibble::power {

// Bad input to a flow (unknown names, impossible sizes, unusable files) or a synthesis, timing
// or simulation run that failed: the message names the option or the run.
class FlowError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Called with each line of progress (a run started, a result found), without its newline.
using Progress = std::function<void(const std::string& line)>;
// Makes a directory the flow writes many files into (--keep, --cache) and checks that it
// takes new files, throwing where it cannot ("OPTION: ..."): the caller's, so that the
// directory is checked as the caller checks its other outputs.
using PrepareDirectory = std::function<void(const std::string& dir, const std::string& option)>;

// How a flow finds and runs its tools, and where it reports; each field is the option of the
// same name (empty: the default).
struct FlowOptions {
  std::string liberty;  // the Liberty library (default: rtl/synth/nibble_generic.lib)
  std::string yosys, python, synth_dir, cache;
  Progress progress;
  PrepareDirectory prepare_directory;  // the flow's output directories, once the tools are found
};

// A flow's results: its table as printed, and as JSON and CSV.
struct FlowReport {
  std::string table;
  nlohmann::json json;
  std::string csv;
};

// An element-format set a unit is built for (golden's kFormatSets).
struct Config {
  std::string name;   // command-line name
  std::string label;  // table label
  std::string mask;   // FormatMask value (nibble_pkg::format_mask_t, bit f = format f)
  FormatMask bits;    // the same mask as a number
  bool energy_default;
};
extern const std::array<Config, kFormatSets.size()> kConfigs;
// The configuration of any non-empty set of formats: kConfigs' row where the table has one;
// the other sets (E2M1+INT4, E1M2+INT4) are synthesized only when named.
const Config& config_for(FormatMask mask);
// The row of kBaselineFormatSet, E2M1 alone: what every area and energy figure is compared with.
const Config& baseline_config();
// The names of kConfigs, comma-separated, in table order ("all (= e2m1+e1m2+int4)" for all).
std::string config_names();

// The block-scale formats a DPU decodes (nibble_pkg::scale_format_mask_t, bit f = scale format
// f), and the golden scale mode of the energy runs' operand streams on it (golden's
// kScaleFormatSets).
struct ScaleConfig {
  std::string name;        // command-line name
  std::string label;       // table label
  std::string mask;        // ScaleFormatMask value
  std::string scale_mode;  // golden scale mode of the energy streams
};
extern const std::array<ScaleConfig, kScaleFormatSets.size()> kScaleConfigs;
// "all,fp32,..." -> scale-format sets; FlowError on an unknown or repeated name.
std::vector<const ScaleConfig*> parse_scale_configs(const std::string& text, const char* option);

using published::kMixFp4AreaPercent;  // MixFP4's published figures, printed beside ours
using published::kMixFp4PowerPercent;

std::string default_yosys();      // NIBBLE_YOSYS, the configure-time path, or "yosys"
std::string default_synth_dir();  // NIBBLE_SOURCE_DIR/rtl/synth or the configure-time source
// This process's scratch directory for the flow's files (<temp>/<prefix>_<pid>), created on
// construction and removed with its contents when it goes out of scope, on an error too.
class ScratchDir {
 public:
  explicit ScratchDir(const std::string& prefix);
  ~ScratchDir();
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};
// The words of a comma-separated option value, in order (an empty word included, so that
// "a,,b" is refused by the caller's lookup).
std::vector<std::string> split_list(const std::string& text);
// The entry of `table` whose `name` is `word`, or nullptr.
template <class Table>
auto find_named(const Table& table, const std::string& word) -> decltype(&*std::begin(table)) {
  for (const auto& e : table) {
    if (word == e.name) return &e;
  }
  return nullptr;
}
// Appends `e` to `out`; FlowError "<option>: '<word>' given twice" where it is there already.
template <class T>
void append_once(std::vector<const T*>& out, const T* e, const char* option, const std::string& word) {
  for (const T* x : out) {
    if (x == e) throw FlowError(std::string(option) + ": '" + word + "' given twice");
  }
  out.push_back(e);
}
// "e2m1,e2m1+e1m2,e1m2+int4,..." -> configurations (any set of formats joined by '+', "all");
// FlowError on a name that is not one.
std::vector<const Config*> parse_configs(const std::string& text);
// An array of DPUs, rows x cols ("MxN" on the command line, 1 to 16 each).
struct TileShape {
  int rows = 0, cols = 0;
};
// "4x4" -> {4, 4}; FlowError naming --tile on anything else.
TileShape parse_tile(const std::string& text);
// "split-late-sign,common-unit" or "all" -> lane designs (kLaneDesignTable); FlowError on an
// unknown name. `option` names the flag in messages.
std::vector<const LaneDesignInfo*> parse_lane_designs(const std::string& text, const char* option);
// The lane designs' names, comma-separated (for help and error messages).
std::string lane_design_names();

// The DPU's sub-blocks, in the order `nibble area --breakdown` and `nibble energy --breakdown`
// print them, and the sub-block of one cell of a hierarchical DPU netlist flattened after
// mapping (its name keeps the instance path: u_decode_a/b, u_scale_decode_a/b, u_lane,
// u_adder_tree, u_scale_mul, u_block_round, u_acc_add; the rest of the core is registers
// (flops) and glue). "inputs" is GateSim's group of the primary-input pins.
const std::vector<std::string>& dpu_sub_block_names();
std::string dpu_sub_block(const std::string& cell, bool flop);

}  // namespace nibble::power
