// Section 6: the recorded bit-exact case counts per layer and a live check of the
// SystemC model against golden.
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
#include "nibble/formats.h"
#include "nibble/stats.h"
#include "sections.h"

namespace nibble::report::detail {
namespace fs = std::filesystem;

Section verification_section(ReportContext& ctx) {
  const ReportOptions& o = ctx.options;
  const Writer& w = ctx.writer;
  if (!ctx.cycles) {
    o.progress("cycles: GEMM sweep and live check on the SystemC model");
    ctx.cycles = run_cycle_sweep(o.seed, o.progress);
  }
  const CycleResults& cyc = *ctx.cycles;
  Section s;
  s.id = "verification";
  s.title = prose("verification", "title");
  const fs::path path = fs::path(o.results_dir) / "verification.json";
  std::string problem;
  const nlohmann::json rec = read_recorded(path.string(), "verification counts", problem).value_or(nlohmann::json());
  s.source = prose("verification", "source", {{"path", path.string()}});
  Table t{"verification_recorded", prose("verification", "recorded_table_caption"),
          {"layer", "check", "against", "cases", "status", "source"}, {}};
  if (rec.is_object() && rec.contains("checks") && rec["checks"].is_array()) {
    for (const auto& c : rec["checks"]) {
      auto g = [&](const char* k) {
        if (!c.contains(k)) return std::string("-");
        return c[k].is_string() ? c[k].get<std::string>() : c[k].dump();
      };
      t.rows.push_back({g("layer"), g("check"), g("against"), g("cases"), g("status"), g("source")});
    }
  } else if (problem.empty()) {
    problem = prose("verification", "no_checks", {{"path", path.string()}});
  }
  if (!t.rows.empty()) s.tables.push_back(t);
  if (!problem.empty()) s.notes_html += prose("verification", "problem", {{"problem", problem}}) + "\n";

  nlohmann::json live = nlohmann::json::array();
  Table lt{"verification_live", prose("verification", "live_table_caption"),
           {"check", "GEMMs", "elements compared", "mismatches"}, {}};
  if (cyc.available) {
    for (const LiveCheck& l : cyc.live) {
      lt.rows.push_back({l.what, std::to_string(l.gemms), std::to_string(l.compared), std::to_string(l.mismatches)});
      live.push_back({{"check", l.what}, {"gemms", l.gemms}, {"compared", l.compared}, {"mismatches", l.mismatches}});
    }
    uint64_t compared = 0, mism = 0, fa = 0, fagree = 0;
    for (const CyclePoint& p : cyc.sweep) {
      compared += p.compared;
      mism += p.mismatches;
      if (p.formula_applies) {
        ++fa;
        fagree += p.formula_cycles == p.cycles;
      }
    }
    const std::string w1 = prose("verification", "sweep_check", {{"gemms", std::to_string(cyc.sweep.size())}});
    lt.rows.push_back({w1, std::to_string(cyc.sweep.size()), std::to_string(compared), std::to_string(mism)});
    live.push_back({{"check", w1}, {"gemms", cyc.sweep.size()}, {"compared", compared}, {"mismatches", mism}});
    const std::string w2 = prose("verification", "formula_check");
    lt.rows.push_back({w2, std::to_string(fa), std::to_string(fa) + " cycle counts", std::to_string(fa - fagree)});
    live.push_back({{"check", w2}, {"gemms", fa}, {"compared", fa}, {"mismatches", fa - fagree}});
    s.tables.push_back(lt);
  } else {
    s.notes_html += prose("verification", "no_live") + "\n";
  }
  w.json("data/verification.json", {{"recorded", rec}, {"recorded_path", path.string()}, {"live", live}});
  return s;
}

}  // namespace nibble::report::detail
