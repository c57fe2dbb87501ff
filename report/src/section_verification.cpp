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
  s.title = "6. Verification status";
  const fs::path path = fs::path(o.results_dir) / "verification.json";
  std::string problem;
  const nlohmann::json rec = read_recorded(path.string(), "verification counts", problem).value_or(nlohmann::json());
  s.source = "live check computed now on the SystemC model; case counts recorded in " + path.string() +
             " (taken from the test suites and docs/results)";
  Table t{"verification_recorded",
          "What is checked against the golden model, and how: recorded case counts per layer, with the source of "
          "each count.",
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
    problem = path.string() + " has no \"checks\" list";
  }
  if (!t.rows.empty()) s.tables.push_back(t);
  if (!problem.empty()) s.notes_html += "<p class=\"note\">" + html_escape(problem) + "</p>\n";

  nlohmann::json live = nlohmann::json::array();
  Table lt{"verification_live", "Live check run by this report.", {"check", "GEMMs", "elements compared", "mismatches"},
           {}};
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
    const std::string w1 = fmt::format("SystemC model vs golden gemm on the {} GEMMs of the cycle sweep (section 7)",
                                       cyc.sweep.size());
    lt.rows.push_back({w1, std::to_string(cyc.sweep.size()), std::to_string(compared), std::to_string(mism)});
    live.push_back({{"check", w1}, {"gemms", cyc.sweep.size()}, {"compared", compared}, {"mismatches", mism}});
    const std::string w2 = "SystemC cycle counts vs the closed forms of sim/systemc_device.h (sweep points where they apply)";
    lt.rows.push_back({w2, std::to_string(fa), std::to_string(fa) + " cycle counts", std::to_string(fa - fagree)});
    live.push_back({{"check", w2}, {"gemms", fa}, {"compared", fa}, {"mismatches", fa - fagree}});
    s.tables.push_back(lt);
  } else {
    s.notes_html += "<p class=\"note\" data-absent=\"live-check\">No live check: this build has no SystemC model "
                    "(configure with SystemC installed).</p>\n";
  }
  w.json("data/verification.json", {{"recorded", rec}, {"recorded_path", path.string()}, {"live", live}});
  return s;
}

}  // namespace nibble::report::detail
