// Section 5: quality against cost, one point per configuration and recipe.
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
#include "nibble/train/recipe.h"
#include "nibble/train/sweep.h"
#include "sections.h"

namespace nibble::report::detail {
namespace fs = std::filesystem;

namespace {

// The element format of a recipe spec ("preset" or "preset+key=value+..."), as train parses
// it; empty for a recipe that quantizes nothing (bf16) or that train does not know.
std::string format_of_recipe(const std::string& recipe) {
  try {
    const train::Recipe r = train::parse_recipe_spec(recipe);
    return r.quantized ? std::string(name(r.format)) : std::string();
  } catch (const train::RecipeError&) {
    return "";
  }
}

// Whether a format-set configuration ("all", "e2m1+e1m2", ...) multiplies format f.
bool config_supports(const std::string& config, const std::string& format) {
  const std::optional<FormatMask> set = parse_format_set(config);
  const std::optional<Format> f = parse_format(format);
  return set && f && (*set & format_bit(*f)) != 0;
}

}  // namespace

Section tradeoff_section(ReportContext& ctx) {
  const Writer& w = ctx.writer;
  const AreaData& area = ctx.area;
  const std::vector<RecipeGap>& gaps = ctx.gaps;
  const nlohmann::json& chain = ctx.quant["chain"];
  Section s;
  s.id = "tradeoff";
  s.title = prose("tradeoff", "title");
  if (!area.present) {
    s.source = prose("tradeoff", "source_absent");
    s.notes_html = prose("tradeoff", "no_tradeoff", {{"problem", area.problem}, {"training", !gaps.empty()}}) + "\n";
    return s;
  }
  // The first table of area records (one library/top).
  const std::string tb = area.records.front().table;
  std::vector<const AreaData::Record*> recs;
  for (const auto& r : area.records) {
    if (r.table == tb) recs.push_back(&r);
  }
  // The baseline, E2M1 alone: its configuration name is also the name of its one format.
  const std::string baseline = format_set_name(kBaselineFormatSet);
  auto pct = [&](const AreaData::Record& r) {
    if (r.has_percent) return r.percent_vs_e2m1;
    for (const auto& b : area.records) {
      if (b.table == r.table && b.config == baseline && b.area > 0) return 100.0 * (r.area - b.area) / b.area;
    }
    return std::nan("");
  };
  // Energy per MAC running format f, percent over E2M1-only running E2M1 (gaussian operands).
  auto epct = [&](const AreaData::Record& r, const std::string& f) {
    if (!area.energy.empty()) return area.energy_percent(r.table, r.config, f);
    for (const auto& b : area.records) {
      if (r.has_energy && b.table == r.table && b.config == baseline && b.has_energy && b.energy_per_mac > 0) {
        return 100.0 * (r.energy_per_mac - b.energy_per_mac) / b.energy_per_mac;
      }
    }
    return std::nan("");
  };
  Table t{"tradeoff", prose("tradeoff", "table_caption"),
          {"config", "recipe / run", "format", "area vs E2M1-only (%)", "energy/MAC vs E2M1-only (%)", "quality",
           "quality measure"},
          {}};
  io::CsvTable csv({"series", "config", "recipe", "area_percent", "energy_percent", "quality"});
  int series = 0;
  if (!gaps.empty()) {
    s.source = prose("tradeoff", "source_training");
    for (const RecipeGap& g : gaps) {
      const std::string f = format_of_recipe(g.recipe);
      if (f.empty()) continue;
      for (const auto* r : recs) {
        if (!config_supports(r->config, f)) continue;
        csv.add({0, r->config, g.recipe, pct(*r), epct(*r, f), 100.0 * g.mean});
        t.rows.push_back({r->config, g.recipe, f, fixed(pct(*r), 1), fixed(epct(*r, f), 1),
                          fixed(100.0 * g.mean, 3) + " %", "loss gap to BF16"});
      }
    }
    series = 1;
  } else {
    s.source = prose("tradeoff", "source_chain");
  }
  // Quality proxy: attenuation of the 8-layer chain, 1 - eta_8, per format and RHT.
  for (const auto& run : chain["runs"]) {
    const std::string f = run["format"].get<std::string>();
    const double eta = run["depths"].back()["eta"].get<double>();
    const std::string nm = f + (run["rht"] == "off" ? std::string(" no-rht") : " rht" + run["rht"].get<std::string>());
    for (const auto* r : recs) {
      if (!config_supports(r->config, f)) continue;
      csv.add({1, r->config, nm, pct(*r), epct(*r, f), 100.0 * std::fabs(1.0 - eta)});
      t.rows.push_back({r->config, "chain: " + nm, f, fixed(pct(*r), 1), fixed(epct(*r, f), 1),
                        fixed(100.0 * std::fabs(1.0 - eta), 3) + " %", "|1 - eta_8| of the chain"});
    }
  }
  w.text("data/tradeoff.csv", csv.text());
  s.tables.push_back(t);
  std::string plot = "set xlabel 'area vs E2M1-only (%)'\nset ylabel 'quality loss (%)'\n"
                     "set offsets graph 0.05, graph 0.3, graph 0.1, graph 0.05\nplot ";
  if (series) {
    plot += "'data/tradeoff.csv' skip 1 using ($1==0 ? $4 : NaN):6:3 with labels point pt 7 ps 1.2 offset 0.5,0.5 "
            "left font ',9' title 'loss gap to BF16 (training)', ";
  }
  plot += "'data/tradeoff.csv' skip 1 using ($1==1 ? $4 : NaN):6:3 with labels point pt 6 ps 1.2 offset 0.5,-0.5 "
          "left font ',9' title '|1 - eta_8| (chain)'\n";
  s.figures.push_back({"tradeoff", prose("tradeoff", "area_title"), prose("tradeoff", "area_caption"), plot});
  if (std::any_of(recs.begin(), recs.end(), [&](const auto* r) { return std::isfinite(epct(*r, baseline)); })) {
    std::string p2 = "set xlabel 'energy per MAC vs E2M1-only (%)'\nset ylabel 'quality loss (%)'\n"
                     "set offsets graph 0.05, graph 0.3, graph 0.1, graph 0.05\nplot ";
    if (series) p2 += "'data/tradeoff.csv' skip 1 using ($1==0 ? $5 : NaN):6:3 with labels point pt 7 offset 0.5,0.5 left font ',9' title 'loss gap to BF16', ";
    p2 += "'data/tradeoff.csv' skip 1 using ($1==1 ? $5 : NaN):6:3 with labels point pt 6 offset 0.5,-0.5 left font ',9' title '|1 - eta_8|'\n";
    s.figures.push_back({"tradeoff_energy", prose("tradeoff", "energy_title"), prose("tradeoff", "energy_caption"), p2,
                         "tradeoff"});
  }
  return s;
}

}  // namespace nibble::report::detail
