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
  s.title = "4. Hardware cost of format support";
  if (!area.present) {
    mark_absent(s, "area", "area/energy results", area.problem,
                fmt::format("They come from the Yosys flow (<code>nibble area</code>, docs/area-energy.md). "
                            "Published reference: MixFP4 (arXiv 2605.31035) reports +{:.1f}% area and +{:.1f}% "
                            "power for adding E1M2 next to E2M1 in a tensor core.",
                            kMixFp4AreaPercent, kMixFp4PowerPercent));
    return s;
  }
  s.source = "recorded: " + (fs::path(o.results_dir) / "area-energy.json").string() + " (Yosys synthesis; not re-run)";
  Table t{"area", "Area (and energy per MAC where recorded) per format configuration, against E2M1-only.",
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
      {"area", "Area of each format configuration relative to E2M1-only.",
       fmt::format("Bars: synthesized area, percent over E2M1-only. Dashed line: MixFP4's published +{:.1f}% for "
                   "adding E1M2 next to E2M1.",
                   area.mixfp4_area_percent),
       fmt::format("set style fill solid 0.8 border -1\nset boxwidth 0.6\nset xtics ({}) rotate by -25\n"
                   "set ylabel 'area vs E2M1-only (%)'\nset xrange [-0.7:{}]\n"
                   "plot 'data/area.csv' skip 1 using 1:5 with boxes title 'synthesized', {} with lines dt 2 lw 2 "
                   "title 'MixFP4 published'\n",
                   xtics, idx - 0.3, area.mixfp4_area_percent)});
  if (any_energy && area.energy.empty()) {
    s.figures.push_back({"energy", "Energy per MAC of each format configuration.", "As recorded.",
                         fmt::format("set style fill solid 0.8 border -1\nset boxwidth 0.6\nset xtics ({}) rotate by "
                                     "-25\nset ylabel 'energy per MAC'\nset xrange [-0.7:{}]\nplot 'data/area.csv' skip 1 "
                                     "using 1:6 with boxes title 'recorded'\n",
                                     xtics, idx - 0.3),
                         "area"});
  }
  if (!area.energy.empty()) {
    Table et{"energy", "Energy per MAC per configuration, element format and operand set (activity from simulated "
                       "operands through the synthesized netlist), and against E2M1-only running E2M1 on the same "
                       "operands.",
             {"library", "config", "format", "operands", "energy/MAC", "unit", "vs E2M1-only"}, {}};
    io::CsvTable ecsv(
        {"index", "library", "config", "format", "operands", "energy_per_mac", "unit", "percent_vs_e2m1_only"});
    std::string etics;
    int ei = 0;
    for (const AreaData::Energy& e : area.energy) {
      const double pc = area.energy_percent(e.table, e.config, e.format, e.operands);
      et.rows.push_back({e.table, e.config, e.format, e.operands, num(e.energy_per_mac, 5), e.unit,
                         std::isfinite(pc) ? fmt::format("{:+.1f}%", pc) : "-"});
      if (e.operands != "gaussian") continue;
      ecsv.add({ei, e.table, e.config, e.format, e.operands, e.energy_per_mac, e.unit, pc});
      etics += fmt::format("{}'{} {}{}' {}", ei ? ", " : "", e.config, e.format,
                           e.table == area.energy.front().table ? "" : " (" + e.table + ")", ei);
      ++ei;
    }
    s.tables.push_back(et);
    w.text("data/energy.csv", ecsv.text());
    s.figures.push_back(
        {"energy", "Energy per MAC against E2M1-only, gaussian operands.",
         fmt::format("Bars: energy per MAC of each configuration running each of its formats, percent over E2M1-only "
                     "running E2M1 (same library, same operands). Dashed: MixFP4's published +{:.1f}% power.",
                     area.mixfp4_power_percent),
         fmt::format("set style fill solid 0.8 border -1\nset boxwidth 0.6\nset xtics ({}) rotate by -35 font ',8'\n"
                     "set ylabel 'energy per MAC vs E2M1-only (%)'\nset xrange [-0.7:{}]\n"
                     "plot 'data/energy.csv' skip 1 using 1:8 with boxes title 'simulated activity', {} with lines "
                     "dt 2 lw 2 title 'MixFP4 published (power)'\n",
                     etics, ei - 0.3, area.mixfp4_power_percent)});
  }
  if (!area.commands.empty()) {
    std::string cl;
    for (const auto& [k, v] : area.commands.items()) {
      cl += "<li>" + html_escape(k) + ": <code>" + html_escape(v.is_string() ? v.get<std::string>() : v.dump()) +
            "</code></li>";
    }
    s.notes_html += "<p>Commands recorded in area-energy.json:</p><ul>" + cl + "</ul>\n";
  }
  // Incremental cost of uniform-grid support, per table.
  std::string inc;
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
      inc += fmt::format("<li>{}: E2M1-only → {}: +{} {} ({:+.1f}%)</li>", html_escape(tb), html_escape(r.label),
                         fixed(r.area - base->area, std::fabs(r.area - base->area) >= 100 ? 0 : 2), html_escape(r.unit), 100.0 * (r.area - base->area) / base->area);
    }
  }
  if (!inc.empty()) s.notes_html += "<p>Incremental cost of uniform-grid support:</p><ul>" + inc + "</ul>\n";
  return s;
}

}  // namespace nibble::report::detail
