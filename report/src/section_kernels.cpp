// Section 8: the recorded GPU kernel runs.
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

// The range of a value over several runs.
namespace {

struct Span {
  double lo = 0, hi = 0, sum = 0;
  int n = 0;
  void add(double v) {
    lo = n ? std::min(lo, v) : v;
    hi = n ? std::max(hi, v) : v;
    sum += v;
    ++n;
  }
  void merge(const Span& o) {
    if (o.n == 0) return;
    lo = n ? std::min(lo, o.lo) : o.lo;
    hi = n ? std::max(hi, o.hi) : o.hi;
    sum += o.sum;
    n += o.n;
  }
  double mean() const { return sum / n; }
};

// One row of the runs of one GPU: its time, its ratio to the yardstick and,
// for a quantize recipe without RHT, the RHT16 recipe's time over its own.
struct RowRange {
  Span ms, ratio, no_rht;
  std::string tile;
  void add(const io::KernelBenchRow& r) {
    ms.add(r.ms);
    ratio.add(r.vs_baseline);
    if (r.vs_no_rht) no_rht.add(*r.vs_no_rht);
    tile = r.tile;
  }
};

std::string range_cell(const Span& v, int decimals, const char* suffix = "") {
  const std::string a = fixed(v.lo, decimals) + suffix, b = fixed(v.hi, decimals) + suffix;
  return a == b ? a : a + " – " + b;
}

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string s;
  for (int64_t v : shape) s += (s.empty() ? "" : " × ") + std::to_string(v);
  return s;
}

}  // namespace

Section kernels_section(ReportContext& ctx) {
  const Writer& w = ctx.writer;
  const KernelData& kd = ctx.kernels;
  Section s;
  s.id = "gpu-kernels";
  s.title = prose("kernels", "title");
  if (kd.runs.empty()) {
    mark_absent(s, "gpu-kernels", prose("kernels", "absent_what"), kd.problem, prose("kernels", "absent_how"));
    return s;
  }
  std::vector<std::string> files;
  for (const std::string& f : kd.files) files.push_back(fs::path(f).filename().string());
  s.source = prose("kernels", "source", {{"dir", kd.dir}, {"files", template_series(files)}});
  s.intro_html = prose("kernels", "intro") + "\n";

  // The GPUs, in the order the runs name them.
  std::vector<std::string> devices;
  for (const io::KernelBenchRun& run : kd.runs) {
    if (std::find(devices.begin(), devices.end(), run.device.name) == devices.end()) devices.push_back(run.device.name);
  }
  Table gemm{"kernels_gemm", prose("kernels", "gemm_table_caption"),
             {"GPU", "M × N × K", "path", "ms", "vs cuBLAS BF16", "tile"},
             {}};
  Table quant{"kernels_quantize", prose("kernels", "quantize_table_caption"),
              {"GPU", "input", "shape", "recipe", "ms", "vs copy", "RHT16 above / this"},
              {}};
  std::vector<std::string> columns;  // figure columns after the shape: bound, then each recipe, then the emulation
  std::vector<std::vector<io::CsvCell>> csv_rows;
  nlohmann::json data = nlohmann::json::array();
  for (const std::string& dev : devices) {
    // This GPU's rows, each as its first run has it and over all its runs.
    std::vector<io::KernelBenchRun> runs;
    for (const io::KernelBenchRun& run : kd.runs) {
      if (run.device.name == dev) runs.push_back(run);
    }
    struct Line {
      io::KernelBenchRow row;
      RowRange range;
    };
    std::vector<Line> lines;
    for (const io::KernelBenchSeries& one : io::kernel_bench_series(runs)) {
      Line line{one.rows.front(), {}};
      for (const io::KernelBenchRow& r : one.rows) line.range.add(r);
      lines.push_back(line);
    }
    // GEMM rows, shape by shape.
    std::vector<std::vector<int64_t>> shapes;
    for (const Line& line : lines) {
      const io::KernelBenchRow& r = line.row;
      if (r.section == "gemm" && std::find(shapes.begin(), shapes.end(), r.shape) == shapes.end()) {
        shapes.push_back(r.shape);
      }
    }
    for (const std::vector<int64_t>& shape : shapes) {
      std::vector<io::CsvCell> fig_row = {shape_text(shape)};
      Span emulation;         // every emulation row's ratio, over the recipes and runs
      Span emulation_ms;
      for (const Line& line : lines) {
        const io::KernelBenchRow& r = line.row;
        if (r.section != "gemm" || r.shape != shape) continue;
        const RowRange& rr = line.range;
        if (r.kind == "emulation") {
          emulation.merge(rr.ratio);
          emulation_ms.merge(rr.ms);
          continue;
        }
        const bool shown = r.kind == "yardstick" || r.kind == "bound" || (r.kind == "kernel" && r.library_default);
        if (!shown) continue;
        const std::string path = r.kind == "kernel" ? "bit-exact " + r.recipe : r.name;
        gemm.rows.push_back({dev, shape_text(shape), path, range_cell(rr.ms, 3), range_cell(rr.ratio, 2, "×"),
                             rr.tile.empty() ? "-" : rr.tile});
        data.push_back({{"gpu", dev}, {"shape", shape}, {"path", path}, {"kind", r.kind}, {"ms", {rr.ms.lo, rr.ms.hi}},
                        {"vs_cublas", {rr.ratio.lo, rr.ratio.hi}}, {"runs", rr.ms.n}});
        if (dev == devices.front() && r.kind != "yardstick" &&
            (r.kind == "kernel" || r.name.find("16-wide") != std::string::npos)) {
          const std::string name = r.kind == "kernel" ? "bit-exact " + r.recipe : "contract's adds alone (1x16)";
          if (shape == shapes.front()) columns.push_back(name);
          fig_row.emplace_back(rr.ratio.mean());
        }
      }
      if (emulation.n > 0) {
        gemm.rows.push_back({dev, shape_text(shape), "emulation (dequantize + cuBLAS), any recipe",
                             range_cell(emulation_ms, 3), range_cell(emulation, 2, "×"), "-"});
        data.push_back({{"gpu", dev}, {"shape", shape}, {"path", "emulation"}, {"kind", "emulation"},
                        {"ms", {emulation_ms.lo, emulation_ms.hi}}, {"vs_cublas", {emulation.lo, emulation.hi}}});
        if (dev == devices.front()) {
          if (shape == shapes.front()) columns.push_back("emulation (mean over recipes)");
          fig_row.emplace_back(emulation.mean());
        }
      }
      if (dev == devices.front()) csv_rows.push_back(fig_row);
    }
    // Quantize rows.
    for (const Line& line : lines) {
      const io::KernelBenchRow& r = line.row;
      if (r.section != "quantize") continue;
      const RowRange& rr = line.range;
      quant.rows.push_back({dev, r.input, shape_text(r.shape), r.kind == "yardstick" ? r.name : r.recipe,
                            range_cell(rr.ms, 3), range_cell(rr.ratio, 2, "×"),
                            rr.no_rht.n ? range_cell(rr.no_rht, 3, "×") : "-"});
    }
  }
  std::vector<std::string> heads = {"shape"};
  for (std::string name : columns) {  // gnuplot's columnhead titles: no separator, quoted or not
    std::replace(name.begin(), name.end(), ',', ';');
    heads.push_back(name);
  }
  io::CsvTable csv(heads);
  for (const auto& row : csv_rows) csv.add(row);
  s.tables.push_back(gemm);
  s.tables.push_back(quant);
  w.text("data/kernels_gemm.csv", csv.text());
  w.json("data/kernels.json", {{"files", kd.files}, {"gemm", data}});
  s.figures.push_back(
      {"kernels_gemm", prose("kernels", "gemm_title", {{"gpu", devices.front()}}), prose("kernels", "gemm_caption"),
       // noenhanced: the recipes' names hold '^' and '_' as they are
       "set key noenhanced\n" +
           histogram_script("kernels_gemm", static_cast<int>(columns.size()), "throughput vs cuBLAS BF16")});
  if (!kd.problem.empty()) s.notes_html += prose("kernels", "problem", {{"problem", kd.problem}}) + "\n";
  return s;
}

}  // namespace nibble::report::detail
