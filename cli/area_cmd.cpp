// `nibble area`: what first-class E1M2 / INT4 support costs in silicon next to E2M1.
// Synthesizes nibble_dpu (or nibble_tile with --tile MxN) once per format mask with Yosys,
// mapped to a Liberty library (the project's technology-neutral rtl/synth/nibble_generic.lib,
// areas in NAND2 gate equivalents, by default; --liberty FILE for a real library, areas in
// um^2), and prints area, cells, flops and depth with each configuration's increment over
// E2M1-only, beside MixFP4's published +3.1%. The flow itself is rtl/synth/nibble_synth.py
// (docs/area-energy.md); this command runs it per configuration and tabulates.
#include <CLI/CLI.hpp>
#include <fmt/core.h>

#include <nlohmann/json.hpp>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <sys/wait.h>
#include <unistd.h>

#include "commands.h"
#include "synth_flow.h"

namespace nibble::cli {

namespace fs = std::filesystem;

// MixFP4 (arXiv 2605.31035): adding E1M2 next to E2M1 in a tensor core.
constexpr double kMixFp4AreaPercent = 3.1;
constexpr double kMixFp4PowerPercent = 1.5;

const std::array<Config, 5> kConfigs = {{
    {"e2m1", "E2M1-only", "3'b001"},
    {"e2m1+e1m2", "E2M1+E1M2", "3'b011"},
    {"all", "E2M1+E1M2+INT4", "3'b111"},
    {"int4", "INT4-only", "3'b100"},
    {"e1m2", "E1M2-only", "3'b010"},
}};

namespace {

struct AreaArgs {
  std::string configs = "e2m1,e2m1+e1m2,all,int4,e1m2";
  std::string lanes = "16";
  std::string tile;  // MxN
  std::string liberty;
  std::string json_out, csv_out;
  std::string yosys, python, synth_dir, keep, cache;
};

struct Row {
  const Config* config;
  double area = 0;
  long cells = 0, flops = 0;
  double depth = -1;
  double seconds = 0;
  std::string area_unit, depth_unit;
};

}  // namespace

std::string shell_quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out += c;
    }
  }
  return out + "'";
}

// An executable: a path with a separator is taken as it is; a bare name is looked up on PATH.
std::string find_executable(const std::string& name) {
  if (name.find('/') != std::string::npos) {
    return fs::exists(name) ? name : std::string();
  }
  const char* path = std::getenv("PATH");
  if (path == nullptr) return {};
  std::stringstream ss(path);
  std::string dir;
  while (std::getline(ss, dir, ':')) {
    if (dir.empty()) continue;
    const fs::path p = fs::path(dir) / name;
    std::error_code ec;
    if (fs::is_regular_file(p, ec)) return p.string();
  }
  return {};
}

std::string default_yosys() {
  if (const char* env = std::getenv("NIBBLE_YOSYS")) return env;
#ifdef NIBBLE_YOSYS_EXECUTABLE
  if (fs::exists(NIBBLE_YOSYS_EXECUTABLE)) return NIBBLE_YOSYS_EXECUTABLE;
#endif
  return "yosys";
}

std::string default_synth_dir() {
  if (const char* env = std::getenv("NIBBLE_SOURCE_DIR")) return (fs::path(env) / "rtl" / "synth").string();
#ifdef NIBBLE_SOURCE_DIR
  return (fs::path(NIBBLE_SOURCE_DIR) / "rtl" / "synth").string();
#else
  return "rtl/synth";
#endif
}

// Runs a shell command, returning its exit status and its combined output.
int run_command(const std::string& cmd, std::string& output) {
  output.clear();
  FILE* pipe = popen((cmd + " 2>&1").c_str(), "r");
  if (pipe == nullptr) return -1;
  std::array<char, 4096> buf{};
  while (std::fgets(buf.data(), buf.size(), pipe) != nullptr) output += buf.data();
  const int status = pclose(pipe);
  if (status == -1) return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}

std::vector<const Config*> parse_configs(const std::string& text) {
  std::vector<const Config*> out;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    if (item == "e2m1+e1m2+int4") item = "all";
    const Config* found = nullptr;
    for (const Config& c : kConfigs) {
      if (item == c.name) found = &c;
    }
    if (found == nullptr) {
      throw UsageError(fmt::format(
          "--configs: unknown configuration '{}' (known: e2m1, e1m2, int4, e2m1+e1m2, all "
          "= e2m1+e1m2+int4)",
          item));
    }
    out.push_back(found);
  }
  if (out.empty()) throw UsageError("--configs: no configuration given");
  return out;
}

namespace {

void run_area(const AreaArgs& a) {
  const std::vector<const Config*> configs = parse_configs(a.configs);
  if (a.lanes != "16" && a.lanes != "32") {
    throw UsageError(fmt::format("--lanes: must be 16 or 32, got '{}'", a.lanes));
  }
  int rows = 0, cols = 0;
  if (!a.tile.empty()) {
    char x = 0;
    std::istringstream ts(a.tile);
    std::string rest;
    if (!(ts >> rows >> x >> cols) || (x != 'x' && x != 'X') || (ts >> rest) || rows < 1 ||
        cols < 1 || rows > 16 || cols > 16) {
      throw UsageError(fmt::format("--tile: want MxN with 1 <= M, N <= 16, got '{}'", a.tile));
    }
  }
  if (!a.liberty.empty() && !fs::is_regular_file(a.liberty)) {
    throw UsageError(fmt::format("--liberty: no such file: {}", a.liberty));
  }
  const std::string yosys = find_executable(a.yosys.empty() ? default_yosys() : a.yosys);
  if (yosys.empty()) {
    throw UsageError(fmt::format(
        "yosys not found ('{}'): install Yosys (Debian: apt-get install yosys) or pass "
        "--yosys PATH / set NIBBLE_YOSYS",
        a.yosys.empty() ? default_yosys() : a.yosys));
  }
  const std::string python = find_executable(a.python.empty() ? "python3" : a.python);
  if (python.empty()) throw UsageError("python3 not found (the flow's driver is a Python script); pass --python PATH");
  const std::string synth_dir = a.synth_dir.empty() ? default_synth_dir() : a.synth_dir;
  const fs::path driver = fs::path(synth_dir) / "nibble_synth.py";
  if (!fs::is_regular_file(driver)) {
    throw UsageError(fmt::format("flow driver not found: {} (pass --synth-dir DIR or set "
                                 "NIBBLE_SOURCE_DIR to the source tree)",
                                 driver.string()));
  }

  const fs::path tmp = fs::temp_directory_path() /
                       fmt::format("nibble_area_{}", static_cast<long>(::getpid()));
  fs::create_directories(tmp);
  const std::string top = a.tile.empty() ? "nibble_dpu" : "nibble_tile";
  std::vector<Row> rows_out;
  for (const Config* c : configs) {
    const fs::path rec = tmp / fmt::format("{}.json", rows_out.size());
    std::string cmd = fmt::format("{} {} --top {} --yosys {} --param {} --param Lanes={} --json {}",
                                  shell_quote(python), shell_quote(driver.string()), top,
                                  shell_quote(yosys), shell_quote(fmt::format("FormatMask={}", c->mask)),
                                  a.lanes, shell_quote(rec.string()));
    if (!a.tile.empty()) cmd += fmt::format(" --param Rows={} --param Cols={}", rows, cols);
    if (!a.liberty.empty()) cmd += " --liberty " + shell_quote(fs::absolute(a.liberty).string());
    if (!a.keep.empty()) {
      cmd += " --work " + shell_quote((fs::absolute(a.keep) / c->name).string());
    }
    if (!a.cache.empty()) cmd += " --cache " + shell_quote(fs::absolute(a.cache).string());
    fmt::print(stderr, "nibble area: synthesizing {} {} ...\n", top, c->label);
    std::string output;
    const int rc = run_command(cmd, output);
    if (rc != 0 || !fs::exists(rec)) {
      std::error_code ec;
      fs::remove_all(tmp, ec);
      throw UsageError(fmt::format("synthesis of {} {} failed (exit {}):\n{}", top, c->label, rc, output));
    }
    std::ifstream in(rec);
    const nlohmann::json j = nlohmann::json::parse(in);
    Row r;
    r.config = c;
    r.area = j.at("area").get<double>();
    r.cells = j.at("cells").get<long>();
    r.flops = j.at("flops").get<long>();
    r.depth = j.at("depth").is_null() ? -1.0 : j.at("depth").get<double>();
    r.seconds = j.at("seconds").get<double>();
    r.area_unit = j.at("area_unit").get<std::string>();
    r.depth_unit = j.at("depth_unit").get<std::string>();
    rows_out.push_back(r);
  }
  std::error_code ec;
  fs::remove_all(tmp, ec);

  const Row* base = nullptr;
  for (const Row& r : rows_out) {
    if (std::string(r.config->name) == "e2m1") base = &r;
  }
  const bool ge = rows_out.front().area_unit == "GE";
  const std::string unit = ge ? "kGE" : "um^2";
  auto area_shown = [&](double area) { return ge ? area / 1000.0 : area; };
  auto delta = [&](const Row& r) -> std::string {
    if (base == nullptr || base->area <= 0) return "-";
    return fmt::format("{:+.1f}%", 100.0 * (r.area - base->area) / base->area);
  };

  const std::string what = a.tile.empty() ? fmt::format("nibble_dpu, {} lanes", a.lanes)
                                          : fmt::format("nibble_tile {}x{}, {} lanes", rows, cols, a.lanes);
  fmt::print("area of {} ({}; liberty {})\n", what, ge ? "generic NAND2-equivalent cells" : "user library",
             a.liberty.empty() ? "rtl/synth/nibble_generic.lib" : a.liberty);
  fmt::print("{:<16} {:>12} {:>10} {:>8} {:>7} {:>8} {:>7}\n", "config", "area " + unit, "vs E2M1",
             "cells", "flops", "depth", "synth s");
  for (const Row& r : rows_out) {
    fmt::print("{:<16} {:>12.{}f} {:>10} {:>8} {:>7} {:>8} {:>7.1f}\n", r.config->label,
               area_shown(r.area), ge ? 2 : 0, delta(r), r.cells, r.flops,
               r.depth < 0 ? std::string("-") : fmt::format("{:.{}f}", r.depth, ge ? 0 : 2),
               r.seconds);
  }
  fmt::print("depth: ABC stime critical path of the mapped logic between flops/ports ({})\n",
             rows_out.front().depth_unit == "levels" ? "cell levels, unit-delay library" : "ns, library delays");
  fmt::print("published: MixFP4 (arXiv 2605.31035) adding E1M2 next to E2M1 in a tensor core: "
             "+{:.1f}% area, +{:.1f}% power\n",
             kMixFp4AreaPercent, kMixFp4PowerPercent);

  if (!a.json_out.empty()) {
    nlohmann::json j;
    j["top"] = top;
    j["lanes"] = std::stoi(a.lanes);
    if (!a.tile.empty()) {
      j["rows"] = rows;
      j["cols"] = cols;
    }
    j["liberty"] = a.liberty.empty() ? "rtl/synth/nibble_generic.lib" : a.liberty;
    j["area_unit"] = rows_out.front().area_unit;
    j["depth_unit"] = rows_out.front().depth_unit;
    j["mixfp4_area_percent"] = kMixFp4AreaPercent;
    j["mixfp4_power_percent"] = kMixFp4PowerPercent;
    for (const Row& r : rows_out) {
      nlohmann::json e;
      e["config"] = r.config->name;
      e["label"] = r.config->label;
      e["format_mask"] = r.config->mask;
      e["area"] = r.area;
      e["cells"] = r.cells;
      e["flops"] = r.flops;
      e["depth"] = r.depth < 0 ? nlohmann::json(nullptr) : nlohmann::json(r.depth);
      e["seconds"] = r.seconds;
      if (base != nullptr && base->area > 0) {
        e["percent_vs_e2m1"] = 100.0 * (r.area - base->area) / base->area;
      }
      j["configs"].push_back(e);
    }
    std::ofstream out(a.json_out);
    if (!out) throw UsageError(fmt::format("--json: cannot write {}", a.json_out));
    out << j.dump(2) << "\n";
  }
  if (!a.csv_out.empty()) {
    std::ofstream out(a.csv_out);
    if (!out) throw UsageError(fmt::format("--csv: cannot write {}", a.csv_out));
    out << "config,label,format_mask,top,lanes,rows,cols,area,area_unit,percent_vs_e2m1,cells,flops,depth,"
           "depth_unit\n";
    for (const Row& r : rows_out) {
      out << fmt::format("{},{},{},{},{},{},{},{},{},{},{},{},{},{}\n", r.config->name, r.config->label,
                         r.config->mask, top, a.lanes, a.tile.empty() ? 1 : rows, a.tile.empty() ? 1 : cols,
                         r.area, r.area_unit,
                         (base != nullptr && base->area > 0)
                             ? fmt::format("{:.3f}", 100.0 * (r.area - base->area) / base->area)
                             : std::string(),
                         r.cells, r.flops, r.depth < 0 ? std::string() : fmt::format("{}", r.depth),
                         r.depth_unit);
    }
  }
}

}  // namespace

void add_area_command(CLI::App& app) {
  auto args = std::make_shared<AreaArgs>();
  CLI::App* sub = app.add_subcommand(
      "area",
      "Synthesize the DPU (or a tile) per format mask with Yosys and report area, cells, flops and "
      "depth vs E2M1-only (docs/area-energy.md)");
  sub->add_option("--configs", args->configs,
                  "comma-separated: e2m1, e2m1+e1m2, all (= e2m1+e1m2+int4), int4, e1m2")
      ->capture_default_str();
  sub->add_option("--lanes", args->lanes, "lanes per DPU: 16 or 32")->capture_default_str();
  sub->add_option("--tile", args->tile, "synthesize nibble_tile with M x N DPUs instead (e.g. 2x2)");
  sub->add_option("--liberty", args->liberty,
                  "a Liberty library (.lib or .lib.gz) instead of the generic one: areas in um^2");
  sub->add_option("--json", args->json_out, "write the results as JSON");
  sub->add_option("--csv", args->csv_out, "write the results as CSV");
  sub->add_option("--yosys", args->yosys, "the yosys executable (default: NIBBLE_YOSYS, configure-time, PATH)");
  sub->add_option("--python", args->python, "the python3 executable (default: python3 on PATH)");
  sub->add_option("--synth-dir", args->synth_dir, "the flow's directory (default: <source>/rtl/synth)");
  sub->add_option("--keep", args->keep, "keep each run's Yosys script, log and netlist under DIR/<config>");
  sub->add_option("--cache", args->cache,
                  "reuse/store synthesis results in DIR (keyed by RTL, flow, library and parameters; "
                  "shared with nibble energy)");
  sub->callback([args] { run_area(*args); });
}

}  // namespace nibble::cli
