// The energy estimator's per-toggle model against OpenSTA's vectorless `report_power` on the
// same SKY130 HD netlists at the same uniform activity: an 8-bit multiplier and a 32-bit adder
// (rtl/synth/calib_blocks.v), synthesized by the area flow. OpenSTA (Debian `opensta`, a 2019
// snapshot) takes `set_power_activity -global -activity` in transitions per second; we give it
// rate / period and compare its internal + switching power x period with
// GateSim::energy_at_rate(rate). OpenSTA 2019 charges an output's internal energy once per
// toggle of each related input pin (all pins toggling at the global activity), i.e. the sum
// of the arcs' energies per output toggle; our model charges one output toggle the mean over
// the arcs. The comparison therefore uses cell models written with `liberty_cells.py
// --arc-sum` (OpenSTA's convention) and prints ours beside it. Leakage is compared as well.
// Skips with a message without `sta` or the SKY130 library.
#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <unistd.h>

#include "nibble/power/gate_sim.h"

#include "synth_test_util.h"

namespace nibble::power {
namespace {

namespace fs = std::filesystem;

using synth_test::env;
using synth_test::run;

bool on_path(const std::string& exe) {
  if (exe.find('/') != std::string::npos) return fs::exists(exe);
  std::string out;
  return run("command -v " + exe, out) == 0 && !out.empty();
}

struct Case {
  const char* top;
  int n;
};

class OpenStaCrossCheck : public ::testing::TestWithParam<Case> {};

TEST_P(OpenStaCrossCheck, InternalPlusSwitchingAgree) {
  const Case c = GetParam();
  const std::string src = env("NIBBLE_SOURCE_DIR", "");
  ASSERT_FALSE(src.empty()) << "NIBBLE_SOURCE_DIR not set (ctest sets it)";
  const std::string sta = env("NIBBLE_STA", "sta");
  if (!on_path(sta)) GTEST_SKIP() << "OpenSTA (`sta`) not found: apt-get install opensta (scripts/setup.sh)";
  const fs::path pdk = env("NIBBLE_PDK_DIR", (fs::path(src).parent_path() / "shared" / "pdk").string());
  const fs::path lib = pdk / "sky130hd" / "sky130_fd_sc_hd__tt_025C_1v80.lib.gz";
  if (!fs::exists(lib)) GTEST_SKIP() << "no SKY130 HD library at " << lib << " (set NIBBLE_PDK_DIR)";
  const std::string yosys = env("NIBBLE_YOSYS", "yosys");
  const fs::path tmp = fs::temp_directory_path() / ("nibble_sta_" + std::to_string(::getpid()) + "_" + c.top +
                                                    std::to_string(c.n));
  fs::create_directories(tmp);
  const std::string synth = src + "/rtl/synth";
  std::string out;
  std::string cmd = "python3 " + synth + "/nibble_synth.py --top " + c.top + " --source " + synth +
                    "/calib_blocks.v --param N=" + std::to_string(c.n) + " --liberty " + lib.string() +
                    " --yosys " + yosys + " --netlist " + (tmp / "n.json").string() + " --json " +
                    (tmp / "rec.json").string();
  if (const std::string cache = env("NIBBLE_SYNTH_CACHE", ""); !cache.empty()) cmd += " --cache " + cache;
  ASSERT_EQ(run(cmd, out), 0) << out;
  ASSERT_EQ(run("python3 " + synth + "/liberty_cells.py " + lib.string() + " " + (tmp / "cells.json").string(), out), 0)
      << out;
  ASSERT_EQ(run("python3 " + synth + "/liberty_cells.py --arc-sum " + lib.string() + " " +
                    (tmp / "cells_sum.json").string(),
                out),
            0)
      << out;
  ASSERT_EQ(run("cd " + tmp.string() + " && zcat " + lib.string() + " > sky.lib && " + yosys +
                    " -q -p 'read_json n.json; write_verilog -noattr n.v'",
                out),
            0)
      << out;
  constexpr double kRate = 0.2, kPeriodNs = 10.0;
  {
    std::ofstream tcl(tmp / "p.tcl");
    tcl << "read_liberty sky.lib\nread_verilog n.v\nlink_design " << c.top
        << "\ncreate_clock -name clk -period " << kPeriodNs << "\nset_power_activity -global -activity "
        << kRate / (kPeriodNs * 1e-9) << " -duty 0.5\nset_power_activity -input -activity "
        << kRate / (kPeriodNs * 1e-9) << " -duty 0.5\nreport_power\n";
  }
  ASSERT_EQ(run("cd " + tmp.string() + " && " + sta + " -no_init -no_splash -exit p.tcl", out), 0) << out;
  double internal = -1, switching = -1, leakage = -1;
  {
    std::istringstream ss(out);
    std::string line;
    while (std::getline(ss, line)) {
      if (line.rfind("Total", 0) == 0) {
        std::istringstream ls(line.substr(5));
        ls >> internal >> switching >> leakage;
      }
    }
  }
  ASSERT_GT(internal, 0) << "no Total line in OpenSTA's report:\n" << out;
  const GateSim sim((tmp / "cells_sum.json").string(), (tmp / "n.json").string());
  const EnergyReport e = sim.energy_at_rate(kRate, 1, kPeriodNs);
  const GateSim own((tmp / "cells.json").string(), (tmp / "n.json").string());
  const EnergyReport eo = own.energy_at_rate(kRate, 1, kPeriodNs);
  const double sta_pj = (internal + switching) * kPeriodNs * 1e-9 * 1e12;
  const double ours_pj = e.logic + e.flops;
  std::printf("%s N=%d (%zu cells), activity %.2f per %.0f ns cycle: OpenSTA internal+switching %.4f pJ "
              "(internal %.3e W, switching %.3e W); ours with OpenSTA's arc-sum convention %.4f pJ (ratio %.3f), "
              "ours as used (mean over arcs) %.4f pJ; leakage OpenSTA %.3e W, ours %.3e W\n",
              c.top, c.n, sim.num_cells(), kRate, kPeriodNs, sta_pj, internal, switching, ours_pj, ours_pj / sta_pj,
              eo.logic + eo.flops, leakage, e.leakage / (kPeriodNs * 1e-9) * 1e-12);
  // Same tables and loads; what is left is the input slew (ours a nominal 0.1 ns, OpenSTA's
  // propagated slews), pin capacitance (ours `capacitance`, OpenSTA rise/fall) and whether
  // primary-input nets are charged.
  EXPECT_NEAR(ours_pj / sta_pj, 1.0, 0.15);
  EXPECT_NEAR(e.leakage / (kPeriodNs * 1e-9) * 1e-12 / leakage, 1.0, 0.25);
  std::error_code ec;
  fs::remove_all(tmp, ec);
}

INSTANTIATE_TEST_SUITE_P(Blocks, OpenStaCrossCheck, ::testing::Values(Case{"calib_mul", 8}, Case{"calib_add", 32}),
                         [](const ::testing::TestParamInfo<Case>& i) {
                           return std::string(i.param.top) + std::to_string(i.param.n);
                         });

}  // namespace
}  // namespace nibble::power
