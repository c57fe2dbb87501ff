// Section 7: the GEMM sweep over array shapes and operand bandwidths.
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

Section cycles_section(ReportContext& ctx) {
  const Writer& w = ctx.writer;
  const CycleResults& cyc = *ctx.cycles;  // verification ran the sweep
  Section s;
  s.id = "cycles";
  s.title = prose("cycles", "title");
  if (!cyc.available) {
    s.source = prose("cycles", "source_absent");
    s.notes_html = prose("cycles", "absent") + "\n";
    return s;
  }
  s.source = prose("cycles", "source");
  io::CsvTable csv({"rows", "cols", "lanes", "bandwidth", "m", "n", "k", "cycles", "macs", "peak_macs_per_cycle",
                    "utilization", "stall_operand", "stall_output", "stall_pipeline", "formula_cycles", "compared",
                    "mismatches"});
  Table t{"cycles", "", {"array", "bandwidth B/cycle", "cycles", "MAC/cycle", "utilization", "operand stalls",
                         "pipeline stalls", "closed form", "checked vs golden"}, {}};
  std::vector<std::string> shapes;
  for (const CyclePoint& p : cyc.sweep) {
    csv.add({p.rows, p.cols, p.lanes, p.bandwidth, p.m, p.n, p.k, p.cycles, p.macs, p.peak, p.utilization,
             p.stall_operand, p.stall_output, p.stall_pipeline,
             p.formula_applies ? io::CsvCell(p.formula_cycles) : io::CsvCell(NAN), p.compared, p.mismatches});
    const std::string shape = fmt::format("{}x{}x{}", p.rows, p.cols, p.lanes);
    if (shapes.empty() || shapes.back() != shape) shapes.push_back(shape);
    t.rows.push_back({shape, num(p.bandwidth), std::to_string(p.cycles),
                      fixed(static_cast<double>(p.macs) / static_cast<double>(p.cycles), 1),
                      fixed(100.0 * p.utilization, 1) + "%", std::to_string(p.stall_operand),
                      std::to_string(p.stall_pipeline),
                      p.formula_applies ? (p.formula_cycles == p.cycles ? "agrees" : "DIFFERS") : "-",
                      fmt::format("{} elements, {} mismatches", p.compared, p.mismatches)});
  }
  const CyclePoint& p0 = cyc.sweep.front();
  t.caption = prose("cycles", "table_caption",
                    {{"m", std::to_string(p0.m)}, {"n", std::to_string(p0.n)}, {"k", std::to_string(p0.k)}});
  w.text("data/cycles.csv", csv.text());
  s.tables.push_back(t);
  std::string plot = "set logscale x 2\nset xlabel 'operand bandwidth (bytes/cycle)'\nset ylabel 'MAC utilization "
                     "(%)'\nset yrange [0:105]\nplot ";
  for (size_t i = 0; i < shapes.size(); ++i) {
    int r = 0, c = 0;
    std::sscanf(shapes[i].c_str(), "%dx%d", &r, &c);
    plot += fmt::format("{}'data/cycles.csv' skip 1 using (($1=={} && $2=={}) ? $4 : NaN):($11*100) with linespoints "
                        "lw 2 title '{}'",
                        i ? ", " : "", r, c, shapes[i]);
  }
  s.figures.push_back({"cycles", prose("cycles", "utilization_title"), prose("cycles", "utilization_caption"),
                       plot + "\n"});
  return s;
}

}  // namespace nibble::report::detail
