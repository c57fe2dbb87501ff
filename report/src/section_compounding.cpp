// Section 2: eta across depth (the chain) and the per-layer attenuation of recorded
// training diagnostics.
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

Section compounding_section(ReportContext& ctx) {
  const ReportOptions& o = ctx.options;
  const Writer& w = ctx.writer;
  nlohmann::json& quant_json = ctx.quant;
  const TrainingData& training = ctx.training;
  Section s;
  s.id = "compounding";
  s.title = prose("compounding", "title");
  s.source = prose("compounding", "source");
  const analysis::ChainShape shape{kChainLayers, kChainWidth, kChainBatch};
  const analysis::ChainProblem problem = analysis::make_chain_problem(shape, o.seed);
  std::vector<analysis::ChainRun> runs;
  for (Format f : kAllFormats) {
    for (int rht : {0, 16}) {
      QuantConfig c;
      c.format = f;
      c.scale = ScaleMode::kNVFP4;
      c.block = BlockShape::k1x16;
      c.rounding = Rounding::kNearestEven;
      c.sr_bits = 8;
      c.seed = o.seed;
      c.rht.size = rht;
      runs.push_back({c, analysis::run_chain(problem, c)});
      if (o.progress) o.progress(fmt::format("compounding: chain of {} layers, {}", shape.layers, label(f, rht)));
    }
  }
  quant_json["chain"] = analysis::chain_json(shape, runs);
  std::vector<std::string> columns = {"depth"};
  for (const analysis::ChainRun& run : runs) columns.push_back(label(run.config.format, run.config.rht.size));
  io::CsvTable csv(columns);
  for (int d = 0; d < shape.layers; ++d) {
    std::vector<io::CsvCell> row = {d + 1};
    for (const analysis::ChainRun& run : runs) row.emplace_back(run.depths[static_cast<size_t>(d)].eta);
    csv.add(row);
  }
  w.text("data/chain_eta.csv", csv.text());
  s.figures.push_back(
      {"chain_eta", prose("compounding", "chain_title"),
       prose("compounding", "chain_caption",
             {{"batch", std::to_string(shape.batch)},
              {"layers", std::to_string(shape.layers)},
              {"width", std::to_string(shape.width)}}),
       fmt::format("set xlabel 'depth (layers)'\nset ylabel 'eta'\nset key autotitle columnhead\nset xtics 1\n"
                   "plot for [i=2:{}] 'data/chain_eta.csv' using 1:i with linespoints lw 2\n",
                   runs.size() + 1)});
  Table t{"chain", prose("compounding", "chain_table_caption"), {"configuration"}, {}};
  for (int d = 1; d <= shape.layers; ++d) t.header.push_back(fmt::format("eta {}", d));
  t.header.push_back("cosine " + std::to_string(shape.layers));
  t.header.push_back("per-layer gain");
  for (const analysis::ChainRun& run : runs) {
    std::vector<std::string> row = {label(run.config.format, run.config.rht.size)};
    for (const analysis::ChainDepth& d : run.depths) row.push_back(fixed(d.eta, 5));
    row.push_back(fixed(run.depths.back().cosine, 5));
    row.push_back(fixed(std::pow(run.depths.back().eta, 1.0 / shape.layers), 5));
    t.rows.push_back(row);
  }
  s.tables.push_back(t);

  // From training: cum_alpha across the linear layers at the last diagnostic step.
  if (!training.present) {
    s.notes_html = prose("compounding", "no_diagnostics", {{"problem", training.problem}, {"period", true}}) + "\n";
    return s;
  }
  const fs::path base = training_dir(o);
  std::string diag_path;
  std::string run_name;
  for (const auto& rec : training.summary["recipes"]) {
    if (!rec.contains("runs") || !rec["runs"].is_array()) continue;
    for (const auto& run : rec["runs"]) {
      if (run.contains("diag_csv") && run["diag_csv"].is_string() && diag_path.empty()) {
        diag_path = (base / run["diag_csv"].get<std::string>()).string();
        run_name = rec.value("name", std::string("?")) + " seed " + (run.contains("seed") ? run["seed"].dump() : "?");
      }
    }
  }
  try {
    if (diag_path.empty()) throw ReportError("summary.json lists no diag_csv");
    const auto rows = read_csv(diag_path);
    if (rows.size() < 2) throw ReportError(diag_path + " is empty");
    std::map<std::string, size_t> col;
    for (size_t i = 0; i < rows[0].size(); ++i) col[rows[0][i]] = i;
    for (const char* k : {"step", "layer", "linear", "gemm", "variant", "cum_alpha"}) {
      if (!col.count(k)) throw ReportError(fmt::format("{} has no column '{}'", diag_path, k));
    }
    double last = -1;
    for (size_t i = 1; i < rows.size(); ++i) last = std::max(last, std::stod(rows[i].at(col["step"])));
    const std::vector<std::string> variants = {"e2m1", "e2m1+rht", "e1m2", "e1m2+rht"};
    std::map<std::string, std::vector<std::pair<std::string, double>>> series;
    for (size_t i = 1; i < rows.size(); ++i) {
      const auto& c = rows[i];
      if (std::stod(c.at(col["step"])) != last || c.at(col["gemm"]) != "fprop") continue;
      series[c.at(col["variant"])].push_back({c.at(col["layer"]) + "." + c.at(col["linear"]),
                                              std::stod(c.at(col["cum_alpha"]))});
    }
    std::vector<std::string> columns = {"index", "layer"};
    columns.insert(columns.end(), variants.begin(), variants.end());
    io::CsvTable out(columns);
    const size_t n = series["e2m1"].size();
    if (n == 0) throw ReportError(diag_path + ": no fprop rows of variant e2m1 at the last step");
    for (size_t i = 0; i < n; ++i) {
      std::vector<io::CsvCell> row = {i + 1, series["e2m1"][i].first};
      for (const auto& v : variants) row.emplace_back(i < series[v].size() ? series[v][i].second : NAN);
      out.add(row);
    }
    w.text("data/training_cum_alpha.csv", out.text());
    s.source = prose("compounding", "source_training",
                     {{"source", s.source}, {"fresh", o.training_fresh}, {"run", run_name}});
    s.figures.push_back({"training_cum_alpha", prose("compounding", "cum_alpha_title"),
                         prose("compounding", "cum_alpha_caption",
                               {{"path", diag_path},
                                {"step", std::to_string(static_cast<long long>(last))},
                                {"run", run_name}}),
                         "set xlabel 'linear layer (in order of depth)'\nset ylabel 'cumulative alpha'\n"
                         "set key autotitle columnhead\nplot for [i=3:6] 'data/training_cum_alpha.csv' using 1:i "
                         "with linespoints lw 2\n"});
  } catch (const std::exception& e) {
    s.notes_html = prose("compounding", "no_diagnostics", {{"problem", e.what()}, {"period", false}}) + "\n";
  }
  return s;
}

}  // namespace nibble::report::detail
