// Helpers shared by `nibble area` and `nibble energy` (defined in area_cmd.cpp): the format
// configurations and how the rtl/synth flow is found and run.
#pragma once

#include <array>
#include <string>
#include <vector>

#include "nibble/io/shell.h"
#include "nibble/power/lane_design.h"
#include "nibble/report/report.h"

namespace nibble::cli {

struct Config {
  const char* name;   // command-line name
  const char* label;  // table label
  const char* mask;   // FormatMask value (nibble_pkg::format_mask_t, bit f = format f)
};
extern const std::array<Config, 5> kConfigs;

using report::kMixFp4AreaPercent;  // MixFP4's published figures, printed beside ours
using report::kMixFp4PowerPercent;

using io::shell_quote;
// An executable: a path with a separator is taken as it is; a bare name is looked up on PATH.
std::string find_executable(const std::string& name);
std::string default_yosys();      // NIBBLE_YOSYS, the configure-time path, or "yosys"
std::string default_synth_dir();  // NIBBLE_SOURCE_DIR/rtl/synth or the configure-time source
// Runs a shell command, returning its exit status and its combined output.
int run_command(const std::string& cmd, std::string& output);
// "e2m1,e2m1+e1m2,..." -> configurations; UsageError on an unknown name.
std::vector<const Config*> parse_configs(const std::string& text);
// "split-late-sign,common-unit" or "all" -> lane designs (power::kLaneDesignTable); UsageError on
// an unknown name. `option` names the flag in messages.
std::vector<const power::LaneDesignInfo*> parse_lane_designs(const std::string& text, const char* option);
// The lane designs' names, comma-separated (for help and error messages).
std::string lane_design_names();

}  // namespace nibble::cli
