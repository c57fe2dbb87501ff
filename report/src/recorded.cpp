// Readers of recorded results. They are tolerant: a missing file is "absent",
// an unreadable or unexpected one is reported with what was wrong, and only
// the fields the page shows are required.
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>

#include "nibble/format_sets.h"
#include "nibble/io/json.h"
#include "nibble/limits.h"
#include "nibble/report/report.h"

namespace nibble::report {
namespace fs = std::filesystem;

nlohmann::json read_json(const std::string& path) {
  std::string text;
  try {
    text = io::read_text_file(path, limits::kMaxJsonBytes);
  } catch (const io::JsonError& e) {
    throw ReportError(fmt::format("cannot read {}", e.what()));
  }
  try {
    return io::parse_json(text);
  } catch (const io::JsonError& e) {
    throw ReportError(fmt::format("{} is not valid JSON: {}", path, e.what()));
  }
}

std::optional<nlohmann::json> read_recorded(const std::string& path, const char* what, std::string& problem) {
  if (!fs::exists(path)) {
    problem = fmt::format("no recorded {} ({} is absent)", what, path);
    return std::nullopt;
  }
  try {
    return read_json(path);
  } catch (const ReportError& e) {
    problem = e.what();
    return std::nullopt;
  }
}

namespace {

bool contains(const std::string& s, const char* what) { return s.find(what) != std::string::npos; }

// Numbers under keys naming energy per MAC (or per operation), in the unit the key or a
// sibling "energy_unit" names.
void find_energy(const nlohmann::json& e, AreaData::Record& r) {
  for (const auto& [key, value] : e.items()) {
    if (!value.is_number() || !contains(key, "energy")) continue;
    if (contains(key, "percent") || contains(key, "ratio")) continue;
    r.energy_per_mac = value.get<double>();
    r.has_energy = true;
    r.energy_unit = e.contains("energy_unit") && e["energy_unit"].is_string() ? e["energy_unit"].get<std::string>()
                                                                               : key;
    return;
  }
}

// Every array of objects with a "config" and a numeric "area", anywhere in the file.
void collect_records(const nlohmann::json& j, const std::string& where, const std::string& unit, AreaData& out) {
  if (j.is_object()) {
    const std::string u = j.contains("area_unit") && j["area_unit"].is_string() ? j["area_unit"].get<std::string>() : unit;
    if (j.contains("mixfp4_area_percent") && j["mixfp4_area_percent"].is_number()) {
      out.mixfp4_area_percent = j["mixfp4_area_percent"].get<double>();
    }
    if (j.contains("mixfp4_power_percent") && j["mixfp4_power_percent"].is_number()) {
      out.mixfp4_power_percent = j["mixfp4_power_percent"].get<double>();
    }
    for (const auto& [key, value] : j.items()) {
      collect_records(value, where.empty() ? key : where + "." + key, u, out);
    }
    return;
  }
  if (!j.is_array()) return;
  for (const nlohmann::json& e : j) {
    if (!e.is_object() || !e.contains("config") || !e["config"].is_string() || !e.contains("area") ||
        !e["area"].is_number()) {
      collect_records(e, where, unit, out);
      continue;
    }
    AreaData::Record r;
    r.table = where;
    r.config = e["config"].get<std::string>();
    r.label = e.contains("label") && e["label"].is_string() ? e["label"].get<std::string>() : r.config;
    r.unit = e.contains("area_unit") && e["area_unit"].is_string() ? e["area_unit"].get<std::string>() : unit;
    r.area = e["area"].get<double>();
    if (e.contains("percent_vs_e2m1") && e["percent_vs_e2m1"].is_number()) {
      r.percent_vs_e2m1 = e["percent_vs_e2m1"].get<double>();
      r.has_percent = true;
    }
    find_energy(e, r);
    out.records.push_back(r);
  }
}

std::string text(const nlohmann::json& e, const char* key) {
  return e.is_object() && e.contains(key) && e[key].is_string() ? e[key].get<std::string>() : std::string();
}

// docs/area-energy.md, "docs/results/area-energy.json": area[] and energy[] records keyed by library.
// One object of the file's "levels" (nibble area --level tensor-core --json, one per library
// and tile size): a row per level and configuration other than E2M1-only whose area and
// recorded percent are numbers, in the file's configuration order. Its table is the library
// and, where recorded, the tile ("generic 4x4"), so two tile sizes of one library stay apart.
void read_levels(const nlohmann::json& lib, AreaData& out) {
  if (!lib.is_object() || !lib.contains("levels") || !lib["levels"].is_array() || !lib.contains("configs") ||
      !lib["configs"].is_array()) {
    return;
  }
  const std::string baseline = format_set_name(kBaselineFormatSet);
  const auto number = [](const nlohmann::json& o, const std::string& key) {
    return o.is_object() && o.contains(key) && o[key].is_number();
  };
  std::string table = text(lib, "library");
  if (lib.contains("rows") && lib["rows"].is_number_integer() && lib.contains("cols") &&
      lib["cols"].is_number_integer()) {
    table += fmt::format(" {}x{}", lib["rows"].get<long long>(), lib["cols"].get<long long>());
  }
  for (const nlohmann::json& lv : lib["levels"]) {
    if (!lv.is_object() || !lv.contains("area") || !lv.contains("percent_vs_e2m1") || !number(lv["area"], baseline)) {
      continue;
    }
    const nlohmann::json& area = lv["area"];
    const nlohmann::json& pc = lv["percent_vs_e2m1"];
    for (const nlohmann::json& c : lib["configs"]) {
      const std::string config = c.is_object() ? text(c, "config") : "";
      if (config.empty() || config == baseline || !number(area, config) || !number(pc, config)) continue;
      AreaData::Level r;
      r.table = table;
      r.level = text(lv, "level");
      r.includes = text(lv, "includes");
      r.unit = text(lib, "area_unit");
      r.config = config;
      r.label = text(c, "label").empty() ? config : text(c, "label");
      r.baseline_area = area[baseline].get<double>();
      r.area = area[config].get<double>();
      r.percent_vs_e2m1 = pc[config].get<double>();
      out.levels.push_back(r);
    }
  }
}

void read_area_energy_v1(const nlohmann::json& j, AreaData& out) {
  out.schema = "nibble-area-energy/1";
  if (j.contains("commands") && j["commands"].is_object()) out.commands = j["commands"];
  if (j.contains("mixfp4") && j["mixfp4"].is_object()) {
    const nlohmann::json& m = j["mixfp4"];
    if (m.contains("area_percent") && m["area_percent"].is_number()) out.mixfp4_area_percent = m["area_percent"];
    if (m.contains("power_percent") && m["power_percent"].is_number()) out.mixfp4_power_percent = m["power_percent"];
  }
  if (j.contains("area") && j["area"].is_array()) {
    for (const nlohmann::json& e : j["area"]) {
      if (!e.is_object() || text(e, "config").empty() || !e.contains("area") || !e["area"].is_number()) continue;
      AreaData::Record r;
      r.table = text(e, "library");
      if (!text(e, "level").empty() && text(e, "level") != "dpu") r.table += " " + text(e, "level");
      r.config = text(e, "config");
      r.label = text(e, "label").empty() ? r.config : text(e, "label");
      r.unit = text(e, "area_unit");
      r.area = e["area"].get<double>();
      if (e.contains("percent_vs_e2m1") && e["percent_vs_e2m1"].is_number()) {
        r.percent_vs_e2m1 = e["percent_vs_e2m1"].get<double>();
        r.has_percent = true;
      }
      out.records.push_back(r);
    }
  }
  if (j.contains("energy") && j["energy"].is_array()) {
    for (const nlohmann::json& e : j["energy"]) {
      if (!e.is_object() || text(e, "config").empty() || !e.contains("energy_per_mac") ||
          !e["energy_per_mac"].is_number()) {
        continue;
      }
      AreaData::Energy r;
      r.table = text(e, "library");
      if (!text(e, "level").empty() && text(e, "level") != "dpu") r.table += " " + text(e, "level");
      r.config = text(e, "config");
      r.format = text(e, "format");
      r.operands = text(e, "operands");
      r.unit = text(e, "energy_unit");
      r.command = text(e, "command");
      r.energy_per_mac = e["energy_per_mac"].get<double>();
      if (e.contains("tensor_core_energy_per_mac") && e["tensor_core_energy_per_mac"].is_number()) {
        r.tensor_core_energy_per_mac = e["tensor_core_energy_per_mac"].get<double>();
      }
      out.energy.push_back(r);
    }
  }
  if (j.contains("levels") && j["levels"].is_array()) {
    for (const nlohmann::json& lib : j["levels"]) read_levels(lib, out);
  }
}

}  // namespace

namespace {

// (config, format) against E2M1-only running E2M1, same table and operands, in percent
// of the field `of`; NaN where either is not recorded.
double percent_of(const std::vector<AreaData::Energy>& energy, double AreaData::Energy::*of, const std::string& table,
                  const std::string& config, const std::string& format, const std::string& operands) {
  const std::string baseline = format_set_name(kBaselineFormatSet);
  double base = std::nan(""), value = std::nan("");
  for (const AreaData::Energy& e : energy) {
    if (e.table != table || e.operands != operands) continue;
    if (e.config == baseline && e.format == baseline) base = e.*of;  // E2M1-only running E2M1
    if (e.config == config && e.format == format) value = e.*of;
  }
  return std::isfinite(base) && std::isfinite(value) && base > 0 ? 100.0 * (value - base) / base : std::nan("");
}

}  // namespace

double AreaData::energy_percent(const std::string& table, const std::string& config, const std::string& format,
                                const std::string& operands) const {
  return percent_of(energy, &Energy::energy_per_mac, table, config, format, operands);
}

double AreaData::tensor_core_energy_percent(const std::string& table, const std::string& config,
                                            const std::string& format, const std::string& operands) const {
  return percent_of(energy, &Energy::tensor_core_energy_per_mac, table, config, format, operands);
}

std::vector<std::vector<std::string>> read_csv(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw ReportError(fmt::format("cannot read {}", path));
  std::vector<std::vector<std::string>> rows;
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty()) continue;
    std::vector<std::string> cells;
    std::stringstream ss(line);
    std::string cell;
    while (std::getline(ss, cell, ',')) cells.push_back(cell);
    if (line.back() == ',') cells.emplace_back();
    rows.push_back(std::move(cells));
  }
  return rows;
}

KernelData read_kernels(const std::string& results_dir) {
  KernelData out;
  out.dir = (fs::path(results_dir) / "kernels").string();
  std::error_code ec;
  if (!fs::is_directory(out.dir, ec)) {
    out.problem = fmt::format("no recorded GPU kernel runs ({} is absent)", out.dir);
    return out;
  }
  std::vector<std::string> paths;
  for (const fs::directory_entry& e : fs::directory_iterator(out.dir, ec)) {
    if (e.is_regular_file() && e.path().extension() == ".json") paths.push_back(e.path().string());
  }
  std::sort(paths.begin(), paths.end());
  for (const std::string& p : paths) {
    try {
      out.runs.push_back(io::read_kernel_bench(p));
      out.files.push_back(p);
    } catch (const io::BenchFileError& e) {
      out.problem += (out.problem.empty() ? "" : "; ") + std::string(e.what());
    }
  }
  if (out.runs.empty() && out.problem.empty()) {
    out.problem = fmt::format("no recorded GPU kernel runs ({} holds no .json file)", out.dir);
  }
  return out;
}

TrainingData read_training(const std::string& training_dir) {
  TrainingData out;
  const fs::path path = fs::path(training_dir) / "summary.json";
  std::optional<nlohmann::json> j = read_recorded(path.string(), "training results", out.problem);
  if (!j) return out;
  out.summary = std::move(*j);
  const nlohmann::json& s = out.summary;
  if (!s.is_object() || !s.contains("recipes") || !s["recipes"].is_array() || s["recipes"].empty()) {
    out.problem = fmt::format("{} has no \"recipes\" list", path.string());
    return out;
  }
  if (s.contains("schema") && s["schema"] != "nibble-train-summary/1") {
    out.problem = fmt::format("{}: schema {} (this report reads nibble-train-summary/1; shown as far as it matches)",
                              path.string(), s["schema"].dump());
  }
  out.present = true;
  return out;
}

StudyData read_study(const std::string& training_dir) {
  StudyData out;
  out.path = (fs::path(training_dir) / "study" / "summary.json").string();
  std::optional<nlohmann::json> j = read_recorded(out.path, "training-study results", out.problem);
  if (!j) return out;
  out.summary = std::move(*j);
  const nlohmann::json& s = out.summary;
  if (!s.is_object() || s.value("schema", "") != "nibble-train-study-summary/1" || !s.contains("sizes") ||
      !s["sizes"].is_array()) {
    out.problem = fmt::format("{} is not a nibble-train-study-summary/1 file with a \"sizes\" list", out.path);
    return out;
  }
  out.present = true;
  return out;
}

AreaData read_area(const std::string& results_dir) {
  AreaData out;
  const fs::path path = fs::path(results_dir) / "area-energy.json";
  std::optional<nlohmann::json> j = read_recorded(path.string(), "area/energy results", out.problem);
  if (!j) return out;
  out.raw = std::move(*j);
  if (out.raw.is_object() && out.raw.value("schema", "") == "nibble-area-energy/1") {
    read_area_energy_v1(out.raw, out);
  } else {
    collect_records(out.raw, "", "", out);
  }
  if (out.records.empty()) {
    out.problem = fmt::format("{} holds no records with \"config\" and a numeric \"area\"", path.string());
    return out;
  }
  out.present = true;
  return out;
}

}  // namespace nibble::report
