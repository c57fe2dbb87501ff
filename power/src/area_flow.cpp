#include "nibble/power/area_flow.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include "nibble/io/json.h"
#include "nibble/io/shell.h"

namespace nibble::power {

namespace fs = std::filesystem;
using io::find_executable;
using io::run_command;
using io::shell_quote;

namespace {

// The units `nibble area --unit` synthesizes. masks: built per format mask (FormatMask) and
// lane count (Lanes); otherwise the unit has no parameters. div_stages: the quantizer's
// DivStages (0, the RTL's default, is not passed, so the plain quantizer keeps its cache key).
struct Unit {
  const char* name;   // command-line name
  const char* top;    // RTL top module
  const char* label;  // table label prefix
  bool masks;
  unsigned div_stages = 0;
};

constexpr std::array<Unit, 4> kUnits = {{
    {"dpu", "nibble_dpu", "DPU", true},
    {"quantizer", "nibble_quantizer", "quantizer", true},
    {"quantizer-pipe", "nibble_quantizer", "quantizer (pipelined)", true, kQuantPipeDivStages},
    {"rht16", "nibble_rht16", "RHT16", false},
}};

// The DPU's sub-blocks in a hierarchical synthesis (nibble_synth.py --hier): name, area.
struct SubBlock {
  std::string name;
  double area = 0;
};

struct Row {
  const Unit* unit = nullptr;
  const Config* config = nullptr;  // nullptr for a unit without format masks
  const LaneDesignInfo* design = nullptr;  // the DPU's and tile's lane design
  const ScaleConfig* scales = nullptr;            // the DPU's and tile's scale formats
  std::string top, name, label;
  double area = 0;
  long cells = 0, flops = 0;
  double depth = -1;
  double seconds = 0;
  std::string area_unit, depth_unit;
  double hier_area = 0;  // --breakdown: the hierarchical synthesis' total
  std::vector<SubBlock> blocks;
  // --sta: the worst path of the mapped netlist (arrival + setup), its end points, the slack
  double crit_ns = -1, slack_ns = 0;
  double delay_target_ps = 0;  // --map timing: the ABC target of the netlist kept
  int mappings = 0;            // --map timing: the targets tried
  std::string startpoint, endpoint;
};

// OpenSTA's worst setup path of a report_checks -path_delay max report: arrival + the
// endpoint's setup time (the minimum clock period with an ideal clock launching at 0).
bool parse_sta_report(const std::string& out, Row& r) {
  auto number_before = [&](const std::string& label, double& v) {
    const size_t at = out.find(label);
    if (at == std::string::npos) return false;
    const size_t line = out.rfind('\n', at);
    std::istringstream ss(out.substr(line == std::string::npos ? 0 : line + 1, at - (line == std::string::npos ? 0 : line + 1)));
    // the first column: "time label" or "delay time label" (the setup line: -t_setup)
    return static_cast<bool>(ss >> v);
  };
  auto rest_of_line = [&](const std::string& label) {
    const size_t at = out.find(label);
    if (at == std::string::npos) return std::string();
    const size_t end = out.find('\n', at);
    std::string v = out.substr(at + label.size(), end - at - label.size());
    while (!v.empty() && v.front() == ' ') v.erase(v.begin());
    return v;
  };
  double arrival = 0, setup = 0, slack = 0;
  if (!number_before("data arrival time", arrival) || !number_before("slack", slack)) return false;
  if (!number_before("library setup time", setup)) setup = 0;  // an output port endpoint
  r.crit_ns = arrival - setup;  // the setup line reads "-t_setup required"
  r.slack_ns = slack;
  r.startpoint = rest_of_line("Startpoint:");
  r.endpoint = rest_of_line("Endpoint:");
  return true;
}

// --map: true for timing-driven mapping, false for area; FlowError otherwise.
bool parse_map(const std::string& text) {
  if (text == "area") return false;
  if (text == "timing") return true;
  throw FlowError(fmt::format("--map: want area or timing, got '{}'", text));
}

// The fewest pipeline stages whose clock could be the given one: the path cut into equal
// parts, each no longer than the period. A lower bound: every added register adds its own
// clock-to-Q and setup, and a real cut rarely falls at equal delays.
long stages_at_clock(double path_ns, double clock_ns) {
  return std::max(1L, static_cast<long>(std::ceil(path_ns / clock_ns - 1e-9)));
}


// The DPU's area per sub-block from a hierarchical record's `modules` (nibble_synth.py --hier):
// each module with its submodules; the binary32 rounder of the block product is what the
// core's nibble_f32_round instances leave after the multiplier's, adder's and scale
// decoders' own rounders; the core's own cells split into flops (registers) and the rest.
std::vector<SubBlock> sub_blocks(const nlohmann::json& modules) {
  auto area = [&](const char* m) { return modules.contains(m) ? modules[m].at("area").get<double>() : 0.0; };
  auto own = [&](const char* m) { return modules.contains(m) ? modules[m].at("own_area").get<double>() : 0.0; };
  auto flops = [&](const char* m) { return modules.contains(m) ? modules[m].at("own_flop_area").get<double>() : 0.0; };
  const double nested_rounders = (area("nibble_f32_mul") - own("nibble_f32_mul")) +
                                 (area("nibble_f32_add") - own("nibble_f32_add")) +
                                 (area("nibble_scale_decode") - own("nibble_scale_decode"));
  return {
      {"element decode", area("nibble_decode")},
      {"lane multiply", area("nibble_lane")},
      {"adder tree", area("nibble_adder_tree")},
      {"scale decode", area("nibble_scale_decode")},
      {"scale multiply", area("nibble_f32_mul")},
      {"|P| x sig, exponent, glue", own("nibble_dpu_core") - flops("nibble_dpu_core") + own("nibble_dpu") -
                                        flops("nibble_dpu")},
      {"block rounding", area("nibble_f32_round") - nested_rounders},
      {"FP32 accumulate add", area("nibble_f32_add")},
      {"registers", flops("nibble_dpu_core") + flops("nibble_dpu")},
  };
}

std::vector<const Unit*> parse_units(const std::string& text) {
  std::vector<const Unit*> out;
  for (const std::string& item : split_list(text)) {
    const Unit* found = find_named(kUnits, item);
    if (found == nullptr) {
      throw FlowError(fmt::format("--unit: unknown unit '{}' (known: dpu, quantizer, quantizer-pipe, rht16)", item));
    }
    append_once(out, found, "--unit", item);
  }
  if (out.empty()) throw FlowError("--unit: no unit given");
  return out;
}

// The flow's executables and driver, checked before any synthesis; the --keep and --cache
// directories made and probed.
struct FlowTools {
  std::string yosys, python;
  fs::path driver;
};

FlowTools flow_tools(const AreaOptions& a) {
  if (!a.liberty.empty() && !fs::is_regular_file(a.liberty)) {
    throw FlowError(fmt::format("--liberty: no such file: {}", a.liberty));
  }
  FlowTools t;
  t.yosys = find_executable(a.yosys.empty() ? default_yosys() : a.yosys);
  if (t.yosys.empty()) {
    throw FlowError(fmt::format(
        "yosys not found ('{}'): install Yosys (Debian: apt-get install yosys) or pass "
        "--yosys PATH / set NIBBLE_YOSYS",
        a.yosys.empty() ? default_yosys() : a.yosys));
  }
  t.python = find_executable(a.python.empty() ? "python3" : a.python);
  if (t.python.empty()) throw FlowError("python3 not found (the flow's driver is a Python script); pass --python PATH");
  const std::string synth_dir = a.synth_dir.empty() ? default_synth_dir() : a.synth_dir;
  t.driver = fs::path(synth_dir) / "nibble_synth.py";
  if (!fs::is_regular_file(t.driver)) {
    throw FlowError(fmt::format("flow driver not found: {} (pass --synth-dir DIR or set "
                                 "NIBBLE_SOURCE_DIR to the source tree)",
                                 t.driver.string()));
  }
  if (!a.keep.empty() && a.prepare_directory) a.prepare_directory(a.keep, "--keep");
  if (!a.cache.empty() && a.prepare_directory) a.prepare_directory(a.cache, "--cache");
  return t;
}

void say(const Progress& progress, const std::string& line) {
  if (progress) progress(line);
}

// The unit table: each unit per configuration (and the DPU per lane design and scale-format set).
AreaFlowReport run_units(const AreaOptions& a) {
  const bool given_configs = a.configs_given, given_lanes = a.lanes_given;
  const bool given_designs = a.designs_given, given_scales = a.scales_given;
  AreaFlowReport report;
  const std::vector<const Unit*> units = parse_units(a.units);
  const std::vector<const Config*> configs = parse_configs(a.configs);
  const std::vector<const LaneDesignInfo*> designs = parse_lane_designs(a.lane_designs, "--lane-design");
  const std::vector<const ScaleConfig*> scale_sets = parse_scale_configs(a.scales, "--scales");
  if (a.lanes != "16" && a.lanes != "32") {
    throw FlowError(fmt::format("--lanes: must be 16 or 32, got '{}'", a.lanes));
  }
  bool any_masks = false, has_dpu = false;
  for (const Unit* u : units) {
    any_masks = any_masks || u->masks;
    has_dpu = has_dpu || std::string(u->name) == "dpu";
  }
  if (!any_masks && given_configs) {
    throw FlowError("--configs: nibble_rht16 has no format-mask parameter (it is format-independent)");
  }
  if (!any_masks && given_lanes) {
    throw FlowError("--lanes: nibble_rht16 is a fixed 16-point transform (no Lanes parameter)");
  }
  if (!a.tile.empty() && !has_dpu) {
    throw FlowError("--tile: applies to the DPU only (add dpu to --unit)");
  }
  if (given_designs && !has_dpu) throw FlowError("--lane-design: applies to the DPU only (add dpu to --unit)");
  if (given_scales && !has_dpu) throw FlowError("--scales: applies to the DPU only (add dpu to --unit)");
  if (a.breakdown && (!has_dpu || !a.tile.empty())) {
    throw FlowError("--breakdown: applies to the DPU only (--unit dpu, no --tile)");
  }
  // --map timing maps for the clock and then times the result: it implies --sta.
  const bool timing = parse_map(a.map);
  const bool timed = a.sta || timing;
  const char* timed_by = a.sta ? "--sta" : "--map timing";
  if (a.strict && !timed) throw FlowError("--strict: applies to --sta or --map timing (the clock a netlist must meet)");
  if (timed && a.liberty.empty()) {
    throw FlowError(fmt::format("{}: needs --liberty (the generic library's unit delays are not a clock)", timed_by));
  }
  if (!(a.clock_ns > 0) || !std::isfinite(a.clock_ns)) {
    throw FlowError(fmt::format("--clock-ns: want a finite period > 0 ns, got {}", a.clock_ns));
  }
  const std::string sta = timed ? find_executable(a.sta_bin.empty() ? "sta" : a.sta_bin) : std::string();
  if (timed && sta.empty()) {
    throw FlowError(fmt::format("{}: OpenSTA not found (Debian: apt-get install opensta) or pass --sta-bin PATH",
                                 timed_by));
  }
  // ABC's first target is the whole period (see the synthesis loop for the others).
  const double period_ps = std::round(a.clock_ns * 1000.0);
  constexpr int kMaxMappings = 4;
  if (timing && a.breakdown) {
    throw FlowError("--breakdown: not with --map timing (the hierarchical synthesis maps for area)");
  }
  const bool dpu_only = units.size() == 1 && has_dpu;
  const TileShape shape = a.tile.empty() ? TileShape{} : parse_tile(a.tile);
  const int rows = shape.rows, cols = shape.cols;
  const FlowTools tools = flow_tools(a);
  const std::string& yosys = tools.yosys;
  const std::string& python = tools.python;
  const fs::path& driver = tools.driver;

  const ScratchDir scratch("nibble_area");
  const fs::path& tmp = scratch.path();
  // The rows to synthesize: every unit with format masks once per configuration, the others once.
  std::vector<Row> rows_out;
  for (const Unit* u : units) {
    const bool dpu = std::string(u->name) == "dpu";
    const std::string top = dpu && !a.tile.empty() ? "nibble_tile" : u->top;
    if (!u->masks) {
      Row r;
      r.unit = u;
      r.config = nullptr;
      r.top = top;
      r.name = u->name;
      r.label = u->label;
      rows_out.push_back(r);
      continue;
    }
    // Lane designs apply to the DPU (and tile); other units are built once per mask.
    const std::vector<const LaneDesignInfo*> unit_designs =
        dpu ? designs : std::vector<const LaneDesignInfo*>{nullptr};
    const std::vector<const ScaleConfig*> unit_scales =
        dpu ? scale_sets : std::vector<const ScaleConfig*>{nullptr};
    for (const LaneDesignInfo* d : unit_designs) {
      for (const ScaleConfig* sc : unit_scales) {
        for (const Config* c : configs) {
          Row r;
          r.unit = u;
          r.config = c;
          r.design = d;
          r.scales = sc;
          r.top = top;
          r.name = dpu_only ? c->name : fmt::format("{}:{}", u->name, c->name);
          r.label = dpu_only ? c->label : fmt::format("{} {}", u->label, c->label);
          if (sc != nullptr && scale_sets.size() > 1) {
            r.name = fmt::format("{}:{}", sc->name, r.name);
            r.label = fmt::format("{} {}", r.label, sc->label);
          }
          if (d != nullptr && designs.size() > 1) {
            r.name = fmt::format("{}:{}", d->name, r.name);
            r.label = fmt::format("{} {}", d->name, r.label);
          }
          rows_out.push_back(r);
        }
      }
    }
  }
  auto synth_command = [&](const Row& r, const fs::path& rec, double delay_target_ps = 0) {
    std::string cmd = fmt::format("{} {} --top {} --yosys {} --json {}", shell_quote(python),
                                  shell_quote(driver.string()), r.top, shell_quote(yosys),
                                  shell_quote(rec.string()));
    if (r.config != nullptr) {
      cmd += fmt::format(" --param {} --param Lanes={}",
                         shell_quote(fmt::format("FormatMask={}", r.config->mask)), a.lanes);
    }
    if (r.unit != nullptr && r.unit->div_stages > 0) cmd += fmt::format(" --param DivStages={}", r.unit->div_stages);
    if (r.design != nullptr) cmd += fmt::format(" --param LaneDesign={}", static_cast<unsigned>(r.design->id));
    // the RTL's default, every scale format, is not passed (its cache key stays that of the plain run)
    if (r.scales != nullptr && std::string(r.scales->name) != "all") {
      cmd += " --param " + shell_quote(fmt::format("ScaleFormatMask={}", r.scales->mask));
    }
    if (r.top == "nibble_tile") cmd += fmt::format(" --param Rows={} --param Cols={}", rows, cols);
    if (!a.liberty.empty()) cmd += " --liberty " + shell_quote(fs::absolute(a.liberty).string());
    if (!a.keep.empty()) {
      std::string dir = r.name;
      for (char& ch : dir) {
        if (ch == ':') ch = '_';
      }
      cmd += " --work " + shell_quote((fs::absolute(a.keep) / dir).string());
    }
    if (!a.cache.empty()) cmd += " --cache " + shell_quote(fs::absolute(a.cache).string());
    if (delay_target_ps > 0) cmd += fmt::format(" --delay-target {:.0f}", delay_target_ps);
    return cmd;
  };
  // --sta: the Liberty file as plain text (OpenSTA reads no .gz), once.
  fs::path sta_lib;
  if (timed) {
    sta_lib = tmp / "sta.lib";
    std::string out;
    const std::string lib = fs::absolute(a.liberty).string();
    const std::string cat = lib.size() > 3 && lib.compare(lib.size() - 3, 3, ".gz") == 0 ? "gunzip -c" : "cat";
    if (run_command(fmt::format("{} {} > {}", cat, shell_quote(lib), shell_quote(sta_lib.string())), out) != 0) {
      throw FlowError(fmt::format("--liberty {}: cannot be read: {}", a.liberty, out));
    }
    // A clock needs delays: a library without timing arcs (cell_rise tables or the older
    // intrinsic_rise) would map and time every path as zero.
    std::ifstream in(sta_lib);
    std::string line;
    bool delays = false;
    while (!delays && std::getline(in, line)) {
      delays = line.find("cell_rise") != std::string::npos || line.find("intrinsic_rise") != std::string::npos;
    }
    if (!delays) {
      throw FlowError(fmt::format("{}: --liberty {} has no delays (no cell_rise or intrinsic_rise)", timed_by,
                                   a.liberty));
    }
  }
  // The worst setup path of a mapped netlist: Yosys writes it as Verilog, OpenSTA times it
  // with an ideal clock on clk_i, every other input arriving and every output required at the
  // clock edge (0 ns), no wires.
  auto time_netlist = [&](Row& r, const fs::path& net, size_t i) {
    const fs::path v = tmp / fmt::format("{}.v", i), tcl = tmp / fmt::format("{}.tcl", i);
    std::string out;
    if (run_command(fmt::format("{} -q -p {}", shell_quote(yosys),
                                shell_quote(fmt::format("read_json {}; write_verilog -noattr {}", net.string(),
                                                        v.string()))),
                    out) != 0) {
      throw FlowError(fmt::format("--sta: writing the netlist of {} {} as Verilog failed:\n{}", r.top, r.label, out));
    }
    std::ofstream t(tcl);
    t << "read_liberty " << sta_lib.string() << "\nread_verilog " << v.string() << "\nlink_design " << r.top
      << "\ncreate_clock -name clk -period " << a.clock_ns << " [get_ports clk_i]\n"
      << "set_input_delay 0 -clock clk [delete_from_list [all_inputs] [get_ports clk_i]]\n"
      << "set_output_delay 0 -clock clk [all_outputs]\n"
      // the asynchronous reset is not a clocked path (recovery/removal checks left out)
      << "set_false_path -from [get_ports rst_ni]\n"
      << "report_checks -path_delay max -format full -digits 3\n";
    t.close();
    if (run_command(fmt::format("{} -no_init -no_splash -exit {}", shell_quote(sta), shell_quote(tcl.string())), out) !=
            0 ||
        !parse_sta_report(out, r)) {
      throw FlowError(fmt::format("--sta: OpenSTA on {} {} failed:\n{}", r.top, r.label, out));
    }
  };
  for (size_t i = 0; i < rows_out.size(); ++i) {
    Row& r = rows_out[i];
    const fs::path rec = tmp / fmt::format("{}.json", i);
    const fs::path net = tmp / fmt::format("{}.netlist.json", i);
    double seconds = 0;
    Row best;  // --map timing: the first netlist that meets the clock, else the shortest path
    double last_target = 0, last_path_ps = 0;  // the previous mapping's target and path
    for (double target = timing ? period_ps : 0;;) {
      std::error_code gone;
      fs::remove(rec, gone);  // a failed retry must not read the previous attempt's record
      const std::string cmd =
          synth_command(r, rec, target) + (timed ? " --netlist " + shell_quote(net.string()) : "");
      say(a.progress, fmt::format("nibble area: synthesizing {} {}{} ...", r.top, r.label,
                                  target > 0 ? fmt::format(" for {:.0f} ps", target) : ""));
      std::string output;
      const int rc = run_command(cmd, output);
      if ((rc != 0 || !fs::exists(rec)) && best.mappings > 0) {
        // A tighter target than one already mapped can fail inside ABC (seen on nibble_rht16:
        // no output netlist); the netlists already timed stand, and the report says so.
        say(a.progress, fmt::format("nibble area: mapping {} {} for {:.0f} ps failed (exit {}); keeping the {:.0f} ps "
                                    "netlist",
                                    r.top, r.label, target, rc, best.delay_target_ps));
        r.mappings = best.mappings + 1;
        break;
      }
      if (rc != 0 || !fs::exists(rec)) {
        throw FlowError(fmt::format("synthesis of {} {} failed (exit {}):\n{}", r.top,
                                     r.config != nullptr ? r.config->label : "", rc, output));
      }
      const nlohmann::json j = io::read_json_file(rec.string());
      r.area = j.at("area").get<double>();
      r.cells = j.at("cells").get<long>();
      r.flops = j.at("flops").get<long>();
      r.depth = j.at("depth").is_null() ? -1.0 : j.at("depth").get<double>();
      seconds += j.at("seconds").get<double>();
      r.area_unit = j.at("area_unit").get<std::string>();
      r.depth_unit = j.at("depth_unit").get<std::string>();
      r.delay_target_ps = target;
      if (timed) time_netlist(r, net, i);
      if (!timing) break;
      r.mappings = best.mappings + 1;
      if (best.mappings == 0 || r.crit_ns < best.crit_ns) best = r;
      // ABC times the logic between flops and ports at its own loads (no clock-to-Q, no
      // setup, no input drive), and `map -D` lands near its target, not under it: OpenSTA's
      // path can miss a clock ABC was given. A missed clock tightens the target by the miss
      // divided by how much the path moved per ps of target on the last two mappings (a
      // secant step; 0.5 before there are two, kept within [0.25, 1]: on the DPU it moved
      // 0.3-1.0) and maps again, up to kMaxMappings targets. A path that does not shrink, or
      // ABC's own delay over its target by more than 10%, ends the search: that unit needs
      // pipelining, not mapping.
      const double miss_ps = r.crit_ns * 1000.0 - period_ps;
      double slope = 0.5;
      if (r.mappings > 1 && last_target > target) {
        slope = std::clamp((last_path_ps - r.crit_ns * 1000.0) / (last_target - target), 0.25, 1.0);
      }
      const double next = std::round(target - miss_ps / slope);
      if (r.slack_ns >= 0 || r.mappings == kMaxMappings || next <= 0 || best.mappings < r.mappings ||
          r.depth * 1000.0 > 1.1 * target) {
        break;
      }
      last_target = target;
      last_path_ps = r.crit_ns * 1000.0;
      target = next;
    }
    if (timing) {
      const int tried = r.mappings;
      r = best;
      r.mappings = tried;
    }
    r.seconds = seconds;
    if (a.breakdown) {
      const fs::path hrec = tmp / fmt::format("{}.hier.json", i);
      say(a.progress, fmt::format("nibble area: synthesizing {} {} hierarchically ...", r.top, r.label));
      std::string hout;
      const int hrc = run_command(synth_command(r, hrec) + " --hier", hout);
      if (hrc != 0 || !fs::exists(hrec)) {
        throw FlowError(fmt::format("hierarchical synthesis of {} {} failed (exit {}):\n{}", r.top, r.label, hrc, hout));
      }
      const nlohmann::json h = io::read_json_file(hrec.string());
      r.hier_area = h.at("area").get<double>();
      r.blocks = sub_blocks(h.at("modules"));
    }
  }

  // Each row against its own unit's E2M1-only row (none for a unit without format masks).
  // (and its own lane design); with several designs, also against the smallest E2M1-only DPU.
  auto base_of = [&](const Row& r) -> const Row* {
    for (const Row& b : rows_out) {
      if (b.unit == r.unit && b.design == r.design && b.scales == r.scales && b.config != nullptr &&
          b.config->bits == kBaselineFormatSet && b.area > 0) {
        return &b;
      }
    }
    return nullptr;
  };
  auto min_base_of = [&](const Row& r) -> const Row* {
    const Row* best = nullptr;
    for (const Row& b : rows_out) {
      if (b.unit == r.unit && b.scales == r.scales && b.config != nullptr && b.config->bits == kBaselineFormatSet &&
          b.area > 0 && (best == nullptr || b.area < best->area)) {
        best = &b;
      }
    }
    return best;
  };
  const bool several_designs = designs.size() > 1 && has_dpu;
  const bool ge = rows_out.front().area_unit == "GE";
  const std::string unit = ge ? "kGE" : "um^2";
  auto area_shown = [&](double area) { return ge ? area / 1000.0 : area; };
  auto delta = [&](const Row& r) -> std::string {
    const Row* base = base_of(r);
    if (base == nullptr) return "-";
    return fmt::format("{:+.1f}%", 100.0 * (r.area - base->area) / base->area);
  };
  auto min_delta = [&](const Row& r) -> std::string {
    const Row* base = min_base_of(r);
    if (base == nullptr) return "-";
    return fmt::format("{:+.1f}%", 100.0 * (r.area - base->area) / base->area);
  };

  std::string what;
  for (const Unit* u : units) {
    if (!what.empty()) what += " + ";
    if (!u->masks) {
      what += "nibble_rht16, 16 points";
    } else if (std::string(u->name) == "dpu" && !a.tile.empty()) {
      what += fmt::format("nibble_tile {}x{}, {} lanes", rows, cols, a.lanes);
    } else {
      what += fmt::format("{}, {} lanes", u->top, a.lanes);
    }
    if (std::string(u->name) == "dpu" && designs.size() == 1) {
      what += fmt::format(", lane design {}", designs.front()->name);
    }
    if (std::string(u->name) == "dpu" && scale_sets.size() == 1) {
      what += fmt::format(", {}", scale_sets.front()->label);
    }
  }
  size_t label_width = 16;
  for (const Row& r : rows_out) label_width = std::max(label_width, r.label.size());
  fmt::format_to(std::back_inserter(report.table), "area of {} ({}; liberty {})\n", what, ge ? "generic NAND2-equivalent cells" : "user library",
             a.liberty.empty() ? "rtl/synth/nibble_generic.lib" : a.liberty);
  fmt::format_to(std::back_inserter(report.table), "{:<{}} {:>12} {:>10}{} {:>8} {:>7} {:>8}{} {:>7}\n", dpu_only ? "config" : "unit / config",
             label_width, "area " + unit, "vs E2M1", several_designs ? fmt::format(" {:>12}", "vs min E2M1") : "",
             "cells", "flops", "depth",
             timed ? fmt::format(" {:>8} {:>9} {:>9} {:>6}", "path ns", "Fmax MHz", "slack ns", "stages") : "",
             "synth s");
  for (const Row& r : rows_out) {
    fmt::format_to(std::back_inserter(report.table), "{:<{}} {:>12.{}f} {:>10}{} {:>8} {:>7} {:>8}{} {:>7.1f}\n", r.label, label_width,
               area_shown(r.area), ge ? 2 : 0, delta(r),
               several_designs ? fmt::format(" {:>12}", r.design != nullptr ? min_delta(r) : "-") : "", r.cells,
               r.flops, r.depth < 0 ? std::string("-") : fmt::format("{:.{}f}", r.depth, ge ? 0 : 2),
               timed ? fmt::format(" {:>8.2f} {:>9.1f} {:>+9.2f} {:>6}", r.crit_ns, 1000.0 / r.crit_ns, r.slack_ns,
                                   stages_at_clock(r.crit_ns, a.clock_ns))
                     : "",
               r.seconds);
  }
  if (several_designs) {
    fmt::format_to(std::back_inserter(report.table), "vs E2M1: against the same lane design's E2M1-only DPU; vs min E2M1: against the smallest "
               "E2M1-only DPU above{}\n",
               scale_sets.size() > 1 ? " (each with the same scale formats)" : "");
  }
  if (a.breakdown) {
    fmt::format_to(std::back_inserter(report.table), "\narea per sub-block ({}), from a hierarchical synthesis of each row (no optimization across "
               "module boundaries)\n",
               unit);
    fmt::format_to(std::back_inserter(report.table), "{:<{}}", "sub-block", 26);
    for (const Row& r : rows_out) fmt::format_to(std::back_inserter(report.table), " {:>{}}", r.label, std::max<size_t>(10, r.label.size()));
    fmt::format_to(std::back_inserter(report.table), "\n");
    for (size_t b = 0; b < rows_out.front().blocks.size(); ++b) {
      fmt::format_to(std::back_inserter(report.table), "{:<{}}", rows_out.front().blocks[b].name, 26);
      for (const Row& r : rows_out) {
        fmt::format_to(std::back_inserter(report.table), " {:>{}.{}f}", area_shown(r.blocks[b].area), std::max<size_t>(10, r.label.size()), ge ? 2 : 0);
      }
      fmt::format_to(std::back_inserter(report.table), "\n");
    }
    fmt::format_to(std::back_inserter(report.table), "{:<{}}", "total (hierarchical)", 26);
    for (const Row& r : rows_out) {
      fmt::format_to(std::back_inserter(report.table), " {:>{}.{}f}", area_shown(r.hier_area), std::max<size_t>(10, r.label.size()), ge ? 2 : 0);
    }
    fmt::format_to(std::back_inserter(report.table), "\n{:<{}}", "total (flattened, above)", 26);
    for (const Row& r : rows_out) {
      fmt::format_to(std::back_inserter(report.table), " {:>{}.{}f}", area_shown(r.area), std::max<size_t>(10, r.label.size()), ge ? 2 : 0);
    }
    fmt::format_to(std::back_inserter(report.table), "\n");
  }
  fmt::format_to(std::back_inserter(report.table), "depth: ABC stime critical path of the mapped logic between flops/ports ({})\n",
             rows_out.front().depth_unit == "levels" ? "cell levels, unit-delay library" : "ns, library delays");
  if (timed) {
    fmt::format_to(std::back_inserter(report.table), "path ns: OpenSTA's worst setup path of the {} (arrival + setup; ideal clock on clk_i, inputs and "
               "outputs at the clock edge, no wires); Fmax = 1 / path; slack against {} ns ({:.1f} MHz); stages: "
               "pipeline stages the path needs at that clock, at least (path / clock, rounded up)\n",
               timing ? "netlist mapped for the clock (ABC map -D, then buffer / upsize / dnsize; target ps "
                        "in the JSON)"
                      : "area-mapped netlist",
               a.clock_ns, 1000.0 / a.clock_ns);
    std::string missed;
    for (const Row& r : rows_out) {
      if (r.slack_ns < 0) {
        missed += fmt::format("{}{} by {:.2f} ns ({:.0f}%)", missed.empty() ? "" : ", ", r.label, -r.slack_ns,
                              100.0 * -r.slack_ns / a.clock_ns);
      }
    }
    fmt::format_to(std::back_inserter(report.table), "at {} ns: {}\n", a.clock_ns, missed.empty() ? "every netlist meets the clock" : "missed by " + missed);
  }
  if (has_dpu) {
    fmt::format_to(std::back_inserter(report.table), "published: MixFP4 (arXiv 2605.31035) adding E1M2 next to E2M1 in a tensor core: "
               "+{:.1f}% area, +{:.1f}% power\n",
               kMixFp4AreaPercent, kMixFp4PowerPercent);
  }

  std::string tops;
  for (const Row& r : rows_out) {
    if (tops.find(r.top) == std::string::npos) tops += (tops.empty() ? "" : ",") + r.top;
  }
  auto lanes_of = [&](const Row& r) { return r.config != nullptr ? std::stoi(a.lanes) : 16; };
  if (a.strict) {
    // Reported after the table, so the misses are on screen; before any output file is written.
    std::string missed;
    for (const Row& r : rows_out) {
      if (r.slack_ns < 0) missed += fmt::format("{}{} ({:.2f} ns)", missed.empty() ? "" : ", ", r.label, r.crit_ns);
    }
    if (!missed.empty()) {
      report.strict_error = fmt::format("--strict: the clock of {} ns is not met by {}", a.clock_ns, missed);
    }
  }
  {
    nlohmann::json j;
    j["top"] = tops;
    j["lanes"] = any_masks ? std::stoi(a.lanes) : 16;
    if (!a.tile.empty()) {
      j["rows"] = rows;
      j["cols"] = cols;
    }
    j["liberty"] = a.liberty.empty() ? "rtl/synth/nibble_generic.lib" : a.liberty;
    j["area_unit"] = rows_out.front().area_unit;
    j["depth_unit"] = rows_out.front().depth_unit;
    j["mapping"] = timing ? "timing" : "area";
    if (timing) j["clock_ns"] = a.clock_ns;
    j["mixfp4_area_percent"] = kMixFp4AreaPercent;
    j["mixfp4_power_percent"] = kMixFp4PowerPercent;
    for (const Row& r : rows_out) {
      nlohmann::json e;
      e["config"] = r.name;
      e["label"] = r.label;
      e["format_mask"] = r.config != nullptr ? nlohmann::json(r.config->mask) : nlohmann::json(nullptr);
      if (r.design != nullptr) e["lane_design"] = r.design->name;
      if (r.scales != nullptr) {
        e["scale_formats"] = r.scales->name;
        e["scale_format_mask"] = r.scales->mask;
      }
      if (const Row* mb = min_base_of(r); several_designs && r.design != nullptr && mb != nullptr) {
        e["percent_vs_min_e2m1"] = 100.0 * (r.area - mb->area) / mb->area;
      }
      if (timed) {
        e["sta"] = {{"critical_path_ns", r.crit_ns}, {"fmax_mhz", 1000.0 / r.crit_ns}, {"clock_ns", a.clock_ns},
                    {"slack_ns", r.slack_ns}, {"startpoint", r.startpoint}, {"endpoint", r.endpoint},
                    {"meets_clock", r.slack_ns >= 0}, {"misses_by_ns", std::max(0.0, -r.slack_ns)},
                    {"stages_at_clock", stages_at_clock(r.crit_ns, a.clock_ns)}};
        if (timing) {
          e["sta"]["delay_target_ps"] = r.delay_target_ps;
          e["sta"]["mappings"] = r.mappings;
        }
      }
      if (a.breakdown) {
        e["hier_area"] = r.hier_area;
        for (const SubBlock& b : r.blocks) e["sub_blocks"][b.name] = b.area;
      }
      if (!dpu_only) {
        e["unit"] = r.unit->name;
        e["top"] = r.top;
        e["lanes"] = lanes_of(r);
      }
      e["area"] = r.area;
      e["cells"] = r.cells;
      e["flops"] = r.flops;
      e["depth"] = r.depth < 0 ? nlohmann::json(nullptr) : nlohmann::json(r.depth);
      e["seconds"] = r.seconds;
      if (const Row* base = base_of(r); base != nullptr) {
        e["percent_vs_e2m1"] = 100.0 * (r.area - base->area) / base->area;
      }
      j["configs"].push_back(e);
    }
    report.json = std::move(j);
  }
  {
    std::ostringstream out;
    out << "config,label,format_mask,lane_design,top,lanes,rows,cols,area,area_unit,percent_vs_e2m1,cells,flops,depth,"
           "depth_unit,scale_formats\n";
    for (const Row& r : rows_out) {
      const Row* base = base_of(r);
      const bool tile = r.top == "nibble_tile";
      out << fmt::format("{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}\n", r.name, r.label,
                         r.config != nullptr ? r.config->mask : "", r.design != nullptr ? r.design->name : "", r.top, lanes_of(r), tile ? rows : 1,
                         tile ? cols : 1, r.area, r.area_unit,
                         base != nullptr ? fmt::format("{:.3f}", 100.0 * (r.area - base->area) / base->area)
                                         : std::string(),
                         r.cells, r.flops, r.depth < 0 ? std::string() : fmt::format("{}", r.depth),
                         r.depth_unit, r.scales != nullptr ? r.scales->name : "");
    }
    report.csv = out.str();
  }
  return report;
}

// --level: the format overhead at every level from one lane up to a tensor core. Each part is
// synthesized once by the same flow (per format mask where it has one) and the levels are sums
// of the parts' areas with the multiplicities below, so every figure comes from a netlist:
//   lane         the 2 element decoders and the lane multiplier of one lane: (all decoders +
//                all lanes) / Lanes in the hierarchical synthesis of nibble_dpu
//   DPU          nibble_dpu, flattened (decoders, lanes, adder tree, scale decode and multiply,
//                rounding, FP32 accumulator)
//   array        nibble_tile R x C, flattened: R * C DPU cores with their FP32 accumulators,
//                one set of decoders per A row and per B column, the output buffer and its
//                flow control
//   + staging    the array plus R + C operand register files (nibble_operand_rf, flops)
//   tensor core  the above plus a share of one quantizer and one RHT unit: the array emits
//                R * C results every K / Lanes cycles, a Lanes-wide quantizer takes Lanes per
//                cycle, so it is busy R * C / K of the time (the RHT feeds the quantizer)
// One netlist of a whole tensor core is not synthesized: the quantizer and RHT alone take
// minutes each here, and a fractional share of them has no netlist.
enum class Level { kLane, kDpu, kArray, kTensorCore };

struct LevelName {
  const char* name;
  Level level;
};
constexpr std::array<LevelName, 4> kLevelNames = {{
    {"lane", Level::kLane}, {"dpu", Level::kDpu}, {"array", Level::kArray}, {"tensor-core", Level::kTensorCore}}};

Level parse_level(const std::string& text) {
  for (const LevelName& l : kLevelNames) {
    if (text == l.name) return l.level;
  }
  throw FlowError(fmt::format("--level: unknown level '{}' (known: lane, dpu, array, tensor-core)", text));
}

// One synthesized part: per configuration (a unit with format masks) or once.
struct Part {
  std::string name, top, what;
  std::vector<std::pair<std::string, std::string>> params;  // without FormatMask
  bool masks = true;
  bool hier = false;
  double count = 1;  // instances in the tensor core
  std::vector<nlohmann::json> records;  // per configuration (one when !masks)
};

AreaFlowReport run_levels(const AreaOptions& a) {
  const bool given_configs = a.configs_given, given_tile = a.tile_given;
  AreaFlowReport report;
  const Level level = parse_level(a.level);
  if (a.units != "dpu") throw FlowError("--unit: --level composes its own units (leave --unit out)");
  if (a.breakdown) throw FlowError("--breakdown: not with --level (the lane level is the breakdown's decoders and lanes)");
  if (a.sta || a.strict || a.map != "area") {
    throw FlowError(fmt::format("{}: not with --level (it times single netlists; use it without --level)",
                                 a.sta ? "--sta" : a.strict ? "--strict" : "--map"));
  }
  if (given_tile && level < Level::kArray) throw FlowError("--tile: applies to --level array and tensor-core");
  std::vector<const Config*> configs = parse_configs(given_configs ? a.configs : "e2m1,all");
  // every level is compared with E2M1 alone: its row comes first
  const Config* base = &baseline_config();
  configs.erase(std::remove(configs.begin(), configs.end(), base), configs.end());
  configs.insert(configs.begin(), base);
  const std::vector<const LaneDesignInfo*> designs = parse_lane_designs(a.lane_designs, "--lane-design");
  if (designs.size() != 1) throw FlowError("--lane-design: --level takes one lane design");
  const std::vector<const ScaleConfig*> scale_sets = parse_scale_configs(a.scales, "--scales");
  if (scale_sets.size() != 1) throw FlowError("--scales: --level takes one scale-format set");
  if (a.lanes != "16" && a.lanes != "32") throw FlowError(fmt::format("--lanes: must be 16 or 32, got '{}'", a.lanes));
  const int lanes = std::stoi(a.lanes);
  const TileShape shape = a.tile.empty() ? TileShape{kLevelArrayRows, kLevelArrayCols} : parse_tile(a.tile);
  const int rows = shape.rows, cols = shape.cols;
  if (a.rf_depth < 2 || a.rf_depth > 256) {
    throw FlowError(fmt::format("--rf-depth: want 2 to 256 entries, got {}", a.rf_depth));
  }
  if (a.gemm_k < lanes || a.gemm_k % lanes != 0) {
    throw FlowError(fmt::format("--gemm-k: want a positive multiple of the {} lanes, got {}", lanes, a.gemm_k));
  }
  const FlowTools tools = flow_tools(a);
  const double share = static_cast<double>(rows * cols) / a.gemm_k;

  const LaneDesignInfo* design = designs.front();
  const ScaleConfig* scales = scale_sets.front();
  // The DPU's and tile's parameters in the order `nibble area` passes them (the same cache keys).
  std::vector<std::pair<std::string, std::string>> dpu_params = {{"Lanes", a.lanes},
                                                                 {"LaneDesign", fmt::format("{}", static_cast<unsigned>(design->id))}};
  if (std::string(scales->name) != "all") dpu_params.push_back({"ScaleFormatMask", scales->mask});
  std::vector<std::pair<std::string, std::string>> tile_params = dpu_params;
  tile_params.push_back({"Rows", std::to_string(rows)});
  tile_params.push_back({"Cols", std::to_string(cols)});

  std::vector<Part> parts;
  parts.push_back({"lane", "nibble_dpu", "element decoders + lane multipliers of the hierarchical DPU, / lanes",
                   dpu_params, true, true, 1.0 / lanes, {}});
  if (level >= Level::kDpu) parts.push_back({"dpu", "nibble_dpu", "the DPU, flattened", dpu_params, true, false, 1, {}});
  if (level >= Level::kArray) {
    parts.push_back({"array", "nibble_tile", fmt::format("{}x{} DPU array, flattened", rows, cols), tile_params, true,
                     false, 1, {}});
  }
  if (level >= Level::kTensorCore) {
    parts.push_back({"staging", "nibble_operand_rf",
                     fmt::format("operand register file, {} entries of {} codes + scale", a.rf_depth, lanes),
                     {{"Lanes", a.lanes}, {"Depth", std::to_string(a.rf_depth)}}, false, false,
                     static_cast<double>(rows + cols), {}});
    parts.push_back({"quantizer", "nibble_quantizer", fmt::format("block quantizer, {} lanes", lanes),
                     {{"Lanes", a.lanes}}, true, false, share, {}});
    parts.push_back({"rht16", "nibble_rht16", "16-point RHT unit", {}, false, false, share, {}});
  }

  const ScratchDir scratch("nibble_area");
  const fs::path& tmp = scratch.path();
  auto synthesize = [&](const Part& p, const Config* c) {
    const fs::path rec = tmp / "part.json";
    std::string cmd = fmt::format("{} {} --top {} --yosys {} --json {}", shell_quote(tools.python),
                                  shell_quote(tools.driver.string()), p.top, shell_quote(tools.yosys),
                                  shell_quote(rec.string()));
    if (c != nullptr) cmd += " --param " + shell_quote(fmt::format("FormatMask={}", c->mask));
    for (const auto& [k, v] : p.params) cmd += " --param " + shell_quote(fmt::format("{}={}", k, v));
    if (p.hier) cmd += " --hier";
    if (!a.liberty.empty()) cmd += " --liberty " + shell_quote(fs::absolute(a.liberty).string());
    if (!a.keep.empty()) {
      const std::string dir = p.name + (p.hier ? "_hier" : "") + (c != nullptr ? "_" + c->name : "");
      cmd += " --work " + shell_quote((fs::absolute(a.keep) / dir).string());
    }
    if (!a.cache.empty()) cmd += " --cache " + shell_quote(fs::absolute(a.cache).string());
    say(a.progress, fmt::format("nibble area: synthesizing {} {}{} ...", p.top, c != nullptr ? c->label : "",
                                p.hier ? " hierarchically" : ""));
    std::string out;
    const int rc = run_command(cmd, out);
    if (rc != 0 || !fs::exists(rec)) {
      throw FlowError(fmt::format("synthesis of {} {} failed (exit {}):\n{}", p.top, c != nullptr ? c->label : "", rc, out));
    }
    nlohmann::json j = io::read_json_file(rec.string());
    fs::remove(rec);
    return j;
  };
  for (Part& p : parts) {
    if (p.masks) {
      for (const Config* c : configs) p.records.push_back(synthesize(p, c));
    } else {
      p.records.push_back(synthesize(p, nullptr));
    }
  }

  // A part's area for configuration i (its one record when it has no format mask); the lane
  // part reads the decoders and lanes out of the hierarchical record.
  auto area_of = [&](const Part& p, size_t i) {
    const nlohmann::json& r = p.records[p.masks ? i : 0];
    if (p.hier) {
      const nlohmann::json& m = r.at("modules");
      double sum = 0;
      for (const char* mod : {"nibble_decode", "nibble_lane"}) {
        if (!m.contains(mod)) throw FlowError(fmt::format("the hierarchical DPU record has no {}", mod));
        sum += m.at(mod).at("area").get<double>();
      }
      return sum;
    }
    return r.at("area").get<double>();
  };
  auto part = [&](const char* name) -> const Part& {
    for (const Part& p : parts) {
      if (p.name == name) return p;
    }
    throw std::logic_error("no such part");
  };
  struct LevelRow {
    std::string name, includes;
    std::vector<std::pair<const Part*, double>> terms;  // part, instances
    std::vector<double> area;                           // per configuration
  };
  std::vector<LevelRow> levels;
  levels.push_back({"lane", "2 element decoders + 1 lane multiplier (1/" + a.lanes + " of the DPU's)",
                    {{&part("lane"), part("lane").count}}, {}});
  if (level >= Level::kDpu) {
    levels.push_back({"DPU", fmt::format("{} lanes, adder tree, scale decode + multiply, rounding, FP32 accumulator", lanes),
                      {{&part("dpu"), 1.0}}, {}});
  }
  if (level >= Level::kArray) {
    levels.push_back({fmt::format("array {}x{}", rows, cols),
                      fmt::format("{} DPU cores, decoders per A row / B column, output buffer", rows * cols),
                      {{&part("array"), 1.0}}, {}});
  }
  if (level >= Level::kTensorCore) {
    levels.push_back({"array + staging",
                      fmt::format("+ {} operand register files of {} entries (flops)", rows + cols, a.rf_depth),
                      {{&part("array"), 1.0}, {&part("staging"), part("staging").count}}, {}});
    levels.push_back({"tensor core",
                      fmt::format("+ {:.4g} of a quantizer and of an RHT16 unit (K = {})", share, a.gemm_k),
                      {{&part("array"), 1.0}, {&part("staging"), part("staging").count},
                       {&part("quantizer"), share}, {&part("rht16"), share}},
                      {}});
  }
  for (LevelRow& l : levels) {
    for (size_t i = 0; i < configs.size(); ++i) {
      double sum = 0;
      for (const auto& [p, n] : l.terms) sum += n * area_of(*p, i);
      l.area.push_back(sum);
    }
  }

  const bool ge = parts.front().records.front().at("area_unit").get<std::string>() == "GE";
  const std::string unit = ge ? "kGE" : "um^2";
  // three decimals of a kGE: one lane is about 0.1 kGE
  auto shown = [&](double v) { return ge ? fmt::format("{:.3f}", v / 1000.0) : fmt::format("{:.0f}", v); };
  auto pct = [](double v, double b) { return 100.0 * (v - b) / b; };
  fmt::format_to(std::back_inserter(report.table), "format overhead by level: lane design {}, {}, {} lanes{} ({}; liberty {})\n", design->name,
             scales->label, lanes,
             level >= Level::kArray ? fmt::format(", {}x{} DPUs", rows, cols) : "",
             ge ? "generic NAND2-equivalent cells" : "user library",
             a.liberty.empty() ? "rtl/synth/nibble_generic.lib" : a.liberty);
  size_t w = 16;
  for (const LevelRow& l : levels) w = std::max(w, l.name.size());
  std::vector<size_t> cw;
  for (const Config* c : configs) cw.push_back(std::max<size_t>(12, c->label.size() + 1 + unit.size()));
  fmt::format_to(std::back_inserter(report.table), "{:<{}}", "level", w);
  for (size_t i = 0; i < configs.size(); ++i) fmt::format_to(std::back_inserter(report.table), " {:>{}}", configs[i]->label + " " + unit, cw[i]);
  for (size_t i = 1; i < configs.size(); ++i) fmt::format_to(std::back_inserter(report.table), " {:>{}}", "vs E2M1", std::max<size_t>(8, 0));
  fmt::format_to(std::back_inserter(report.table), "  includes\n");
  for (const LevelRow& l : levels) {
    fmt::format_to(std::back_inserter(report.table), "{:<{}}", l.name, w);
    for (size_t i = 0; i < configs.size(); ++i) fmt::format_to(std::back_inserter(report.table), " {:>{}}", shown(l.area[i]), cw[i]);
    for (size_t i = 1; i < configs.size(); ++i) fmt::format_to(std::back_inserter(report.table), " {:>8}", fmt::format("{:+.1f}%", pct(l.area[i], l.area[0])));
    fmt::format_to(std::back_inserter(report.table), "  {}\n", l.includes);
  }
  fmt::format_to(std::back_inserter(report.table), "vs E2M1: against the same level built for E2M1 alone\n");
  fmt::format_to(std::back_inserter(report.table), "published: MixFP4 (arXiv 2605.31035) adding E1M2 next to E2M1 in a tensor core: +{:.1f}% area\n",
             kMixFp4AreaPercent);
  fmt::format_to(std::back_inserter(report.table), "\ncomposed of (each part synthesized once per format mask, or once where it has none):\n");
  fmt::format_to(std::back_inserter(report.table), "{:<10} {:<18} {:>9}", "part", "top", "count");
  for (size_t i = 0; i < configs.size(); ++i) fmt::format_to(std::back_inserter(report.table), " {:>{}}", configs[i]->label + " " + unit, cw[i]);
  fmt::format_to(std::back_inserter(report.table), " {:>7} {:>8}  {}\n", "flops", "synth s", "what");
  for (const Part& p : parts) {
    fmt::format_to(std::back_inserter(report.table), "{:<10} {:<18} {:>9.4g}", p.name, p.top, p.count);
    for (size_t i = 0; i < configs.size(); ++i) fmt::format_to(std::back_inserter(report.table), " {:>{}}", shown(area_of(p, i)), cw[i]);
    const nlohmann::json& r = p.records.back();
    double seconds = 0;
    for (const nlohmann::json& rec : p.records) seconds += rec.at("seconds").get<double>();
    fmt::format_to(std::back_inserter(report.table), " {:>7} {:>8.1f}  {}{}\n", r.contains("flops") ? std::to_string(r.at("flops").get<long>()) : "-",
               seconds, p.what, p.masks ? "" : " (no format parameter)");
  }
  fmt::format_to(std::back_inserter(report.table), "flops: of the last configuration's netlist; synth s: the part's syntheses together (as recorded in "
             "the cache)\n");
  if (level >= Level::kTensorCore) {
    fmt::format_to(std::back_inserter(report.table), "tensor core = array + {} x staging + {:.4g} x (quantizer + rht16): the array emits {} results per "
               "{} cycles of K = {}, a {}-lane quantizer takes {} per cycle\n",
               rows + cols, share, rows * cols, a.gemm_k / lanes, a.gemm_k, lanes, lanes);
  }

  {
    nlohmann::json j;
    j["level"] = a.level;
    j["lane_design"] = design->name;
    j["scale_formats"] = scales->name;
    j["lanes"] = lanes;
    j["rows"] = rows;
    j["cols"] = cols;
    j["rf_depth"] = a.rf_depth;
    j["gemm_k"] = a.gemm_k;
    j["quantizer_share"] = share;
    j["liberty"] = a.liberty.empty() ? "rtl/synth/nibble_generic.lib" : a.liberty;
    j["area_unit"] = parts.front().records.front().at("area_unit");
    j["mixfp4_area_percent"] = kMixFp4AreaPercent;
    for (const Config* c : configs) j["configs"].push_back({{"config", c->name}, {"label", c->label}, {"format_mask", c->mask}});
    for (const Part& p : parts) {
      nlohmann::json e = {{"part", p.name}, {"top", p.top}, {"count", p.count}, {"hier", p.hier}, {"format_masks", p.masks}};
      for (const auto& [k, v] : p.params) e["params"][k] = v;
      for (size_t i = 0; i < configs.size(); ++i) e["area"][configs[i]->name] = area_of(p, i);
      j["parts"].push_back(e);
    }
    for (const LevelRow& l : levels) {
      nlohmann::json e = {{"level", l.name}, {"includes", l.includes}};
      for (const auto& [p, n] : l.terms) e["terms"].push_back({{"part", p->name}, {"count", n}});
      for (size_t i = 0; i < configs.size(); ++i) {
        e["area"][configs[i]->name] = l.area[i];
        e["percent_vs_e2m1"][configs[i]->name] = pct(l.area[i], l.area[0]);
      }
      j["levels"].push_back(e);
    }
    report.json = std::move(j);
  }
  {
    std::ostringstream out;
    out << "level,config,format_mask,area,area_unit,percent_vs_e2m1\n";
    for (const LevelRow& l : levels) {
      for (size_t i = 0; i < configs.size(); ++i) {
        out << fmt::format("{},{},{},{},{},{:.3f}\n", l.name, configs[i]->name, configs[i]->mask, l.area[i],
                           parts.front().records.front().at("area_unit").get<std::string>(), pct(l.area[i], l.area[0]));
      }
    }
    report.csv = out.str();
  }
  return report;
}

}  // namespace

AreaFlowReport run_area(const AreaOptions& a) {
  if ((a.rf_depth_given || a.gemm_k_given) && a.level != "tensor-core") {
    throw FlowError(fmt::format("{}: applies to --level tensor-core", a.rf_depth_given ? "--rf-depth" : "--gemm-k"));
  }
  return a.level.empty() ? run_units(a) : run_levels(a);
}

}  // namespace nibble::power
