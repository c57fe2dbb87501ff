// Section 4: area and energy per format configuration beside the published figures.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <set>
#include <sstream>

#include "nibble/analysis/chain.h"
#include "nibble/analysis/quant_matrix.h"
#include "nibble/analysis/render.h"
#include "nibble/analysis/synthetic.h"
#include "nibble/format_sets.h"
#include "nibble/formats.h"
#include "nibble/stats.h"
#include "sections.h"

namespace nibble::report::detail {
namespace fs = std::filesystem;

Section hardware_section(ReportContext& ctx) {
  const ReportOptions& o = ctx.options;
  const Writer& w = ctx.writer;
  const AreaData& area = ctx.area;
  Section s;
  s.id = "hardware";
  s.title = prose("hardware", "title");
  if (!area.present) {
    mark_absent(s, "area", prose("hardware", "absent_what"), area.problem,
                prose("hardware", "absent_how",
                      {{"area_percent", fmt::format("{:.1f}", kMixFp4AreaPercent)},
                       {"power_percent", fmt::format("{:.1f}", kMixFp4PowerPercent)}}));
    return s;
  }
  s.source = prose("hardware", "source", {{"path", (fs::path(o.results_dir) / "area-energy.json").string()}});
  Table t{"area", prose("hardware", "area_table_caption"),
          {"table", "config", "label", "area", "unit", "vs E2M1-only", "energy/MAC", "energy unit"}, {}};
  bool any_energy = false;
  io::CsvTable csv({"index", "table", "config", "area", "percent_vs_e2m1", "energy_per_mac"});
  std::string xtics;
  int idx = 0;
  for (const AreaData::Record& r : area.records) {
    t.rows.push_back({r.table, r.config, r.label, num(r.area, 6), r.unit,
                      r.has_percent ? fmt::format("{:+.1f}%", r.percent_vs_e2m1) : "-",
                      r.has_energy ? num(r.energy_per_mac, 5) : "-", r.has_energy ? r.energy_unit : "-"});
    any_energy = any_energy || r.has_energy;
    csv.add({idx, r.table, r.config, r.area, r.has_percent ? r.percent_vs_e2m1 : NAN,
             r.has_energy ? r.energy_per_mac : NAN});
    xtics += fmt::format("{}'{}{}' {}", idx ? ", " : "", r.config,
                         area.records.front().table == r.table ? "" : " (" + r.table + ")", idx);
    ++idx;
  }
  t.rows.push_back({"published", "MixFP4 (arXiv 2605.31035)", "E1M2 added next to E2M1 in a tensor core", "-", "-",
                    fmt::format("{:+.1f}%", area.mixfp4_area_percent),
                    fmt::format("{:+.1f}% power", area.mixfp4_power_percent), "-"});
  s.tables.push_back(t);
  w.text("data/area.csv", csv.text());
  s.figures.push_back(
      {"area", prose("hardware", "area_title"),
       prose("hardware", "area_caption", {{"area_percent", fmt::format("{:.1f}", area.mixfp4_area_percent)}}),
       fmt::format("set style fill solid 0.8 border -1\nset boxwidth 0.6\nset xtics ({}) rotate by -25\n"
                   "set ylabel 'area vs E2M1-only (%)'\nset xrange [-0.7:{}]\n"
                   "plot 'data/area.csv' skip 1 using 1:5 with boxes title 'synthesized', {} with lines dt 2 lw 2 "
                   "title 'MixFP4 published'\n",
                   xtics, idx - 0.3, area.mixfp4_area_percent)});
  if (any_energy && area.energy.empty()) {
    s.figures.push_back({"energy", prose("hardware", "record_energy_title"), prose("hardware", "record_energy_caption"),
                         fmt::format("set style fill solid 0.8 border -1\nset boxwidth 0.6\nset xtics ({}) rotate by "
                                     "-25\nset ylabel 'energy per MAC'\nset xrange [-0.7:{}]\nplot 'data/area.csv' skip 1 "
                                     "using 1:6 with boxes title 'recorded'\n",
                                     xtics, idx - 0.3),
                         "area"});
  }
  if (!area.energy.empty()) {
    Table et{"energy",
             prose("hardware", "energy_table_caption"),
             {"library", "config", "format", "operands", "energy/MAC", "unit", "vs E2M1-only", "tensor core energy/MAC",
              "vs E2M1-only"},
             {}};
    io::CsvTable ecsv({"index", "library", "config", "format", "operands", "energy_per_mac", "unit",
                       "percent_vs_e2m1_only", "tensor_core_energy_per_mac", "tensor_core_percent_vs_e2m1_only"});
    std::string etics;
    int ei = 0;
    const auto percent = [](double pc) { return std::isfinite(pc) ? fmt::format("{:+.1f}%", pc) : std::string("-"); };
    for (const AreaData::Energy& e : area.energy) {
      const double pc = area.energy_percent(e.table, e.config, e.format, e.operands);
      const double tc = area.tensor_core_energy_percent(e.table, e.config, e.format, e.operands);
      const bool has_tc = std::isfinite(e.tensor_core_energy_per_mac);
      et.rows.push_back({e.table, e.config, e.format, e.operands, num(e.energy_per_mac, 5), e.unit, percent(pc),
                         has_tc ? num(e.tensor_core_energy_per_mac, 5) : "-", percent(tc)});
      if (e.operands != "gaussian") continue;
      ecsv.add({ei, e.table, e.config, e.format, e.operands, e.energy_per_mac, e.unit, pc,
                e.tensor_core_energy_per_mac, tc});
      etics += fmt::format("{}'{} {}{}' {}", ei ? ", " : "", e.config, e.format,
                           e.table == area.energy.front().table ? "" : " (" + e.table + ")", ei);
      ++ei;
    }
    s.tables.push_back(et);
    w.text("data/energy.csv", ecsv.text());
    s.figures.push_back(
        {"energy", prose("hardware", "energy_title"),
         prose("hardware", "energy_caption", {{"power_percent", fmt::format("{:.1f}", area.mixfp4_power_percent)}}),
         fmt::format("set style fill solid 0.8 border -1\nset boxwidth 0.6\nset xtics ({}) rotate by -35 font ',8'\n"
                     "set ylabel 'energy per MAC vs E2M1-only (%)'\nset xrange [-0.7:{}]\n"
                     "plot 'data/energy.csv' skip 1 using 1:8 with boxes title 'simulated activity', {} with lines "
                     "dt 2 lw 2 title 'MixFP4 published (power)'\n",
                     etics, ei - 0.3, area.mixfp4_power_percent)});
  }
  if (!area.levels.empty()) {
    Table lt{"levels", prose("hardware", "levels_table_caption"),
             {"library", "level", "what it includes", "E2M1-only", "config", "area", "unit", "vs E2M1-only"}, {}};
    io::CsvTable lcsv({"library", "level", "config", "e2m1_area", "area", "unit", "percent_vs_e2m1"});
    for (const AreaData::Level& l : area.levels) {
      lt.rows.push_back({l.table, l.level, l.includes, num(l.baseline_area, 6), l.label, num(l.area, 6), l.unit,
                         fmt::format("{:+.1f}%", l.percent_vs_e2m1)});
      lcsv.add({l.table, l.level, l.config, l.baseline_area, l.area, l.unit, l.percent_vs_e2m1});
    }
    lt.rows.push_back({"published", "MixFP4 (arXiv 2605.31035)", prose("hardware", "levels_mixfp4_includes"), "-",
                       "E2M1+E1M2", "-", "-", fmt::format("{:+.1f}%", area.mixfp4_area_percent)});
    s.tables.push_back(lt);
    w.text("data/levels.csv", lcsv.text());
  }
  if (!area.commands.empty()) {
    TemplateData list{TemplateData::type::list};
    for (const auto& [k, v] : area.commands.items()) {
      TemplateData item;
      item.set("name", k);
      item.set("command", v.is_string() ? v.get<std::string>() : v.dump());
      list.push_back(item);
    }
    s.notes_html += prose("hardware", "commands", {{"list", list}}) + "\n";
  }
  // Incremental cost of uniform-grid support, per table.
  TemplateData inc{TemplateData::type::list};
  std::set<std::string> tables;
  for (const auto& r : area.records) tables.insert(r.table);
  for (const std::string& tb : tables) {
    const std::string baseline = format_set_name(kBaselineFormatSet);
    const AreaData::Record* base = nullptr;
    for (const auto& r : area.records) {
      if (r.table == tb && r.config == baseline) base = &r;
    }
    if (!base) continue;
    for (const auto& r : area.records) {
      // the configurations that add formats to E2M1
      const std::optional<FormatMask> set = parse_format_set(r.config);
      if (r.table != tb || r.config == baseline || !set || (*set & kBaselineFormatSet) == 0) continue;
      TemplateData item;
      item.set("table", tb);
      item.set("label", r.label);
      item.set("delta", fixed(r.area - base->area, std::fabs(r.area - base->area) >= 100 ? 0 : 2));
      item.set("unit", r.unit);
      item.set("percent", fmt::format("{:+.1f}", 100.0 * (r.area - base->area) / base->area));
      inc.push_back(item);
    }
  }
  if (!inc.is_empty_list()) s.notes_html += prose("hardware", "incremental", {{"list", inc}}) + "\n";
  return s;
}

}  // namespace nibble::report::detail
