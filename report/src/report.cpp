// The report's sections: which experiments to run, which recorded results to
// read, and the CSV/JSON files behind every figure and table.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "nibble/analysis/chain.h"
#include "nibble/analysis/quant_matrix.h"
#include "nibble/analysis/render.h"
#include "nibble/analysis/synthetic.h"
#include "nibble/formats.h"
#include "nibble/report/report.h"
#include "nibble/stats.h"

namespace nibble::report {
namespace fs = std::filesystem;

namespace {

using Clock = std::chrono::steady_clock;

std::string training_dir(const ReportOptions& o) {
  return o.training_dir.empty() ? (fs::path(o.results_dir) / "training").string() : o.training_dir;
}

// The quantization experiments, written as the `nibble quant` command that
// reproduces them (the test runs it and compares the numbers).
constexpr const char* kFormatsList = "e2m1,e1m2,int4";
constexpr const char* kScalesList = "nvfp4,fp32";
constexpr int kChainLayers = 8;
constexpr int64_t kChainWidth = 256, kChainBatch = 64;
constexpr int64_t kRows = 256, kCols = 256;

std::string num(double v, int digits = 4) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  return fmt::format("{:.{}g}", v, digits);
}
std::string fixed(double v, int decimals) {
  if (!std::isfinite(v)) return num(v);
  return fmt::format("{:.{}f}", v, decimals);
}
std::string csv_num(double v) { return std::isfinite(v) ? fmt::format("{:.9g}", v) : "NaN"; }

class Writer {
 public:
  explicit Writer(fs::path out) : out_(std::move(out)) { fs::create_directories(out_ / "data"); }
  void text(const std::string& rel, const std::string& content) const {
    std::ofstream f(out_ / rel, std::ios::binary | std::ios::trunc);
    f << content;
    f.close();
    if (!f) throw ReportError(fmt::format("cannot write {}", (out_ / rel).string()));
    if (rel.rfind("data/", 0) == 0) data_files_.insert(rel);
  }
  void json(const std::string& rel, const nlohmann::json& j) const { text(rel, j.dump(2) + "\n"); }
  const fs::path& dir() const { return out_; }
  // Every file written under data/ so far, in name order.
  const std::set<std::string>& data_files() const { return data_files_; }

 private:
  fs::path out_;
  mutable std::set<std::string> data_files_;
};

std::string label(Format f, int rht) {
  return std::string(name(f)) + (rht ? fmt::format(" rht{}", rht) : std::string(" no-rht"));
}

// gnuplot: one clustered-histogram figure of column `first`.. of a wide CSV.
std::string histogram_script(const std::string& csv, int series, const std::string& ylabel) {
  return fmt::format(
      "set style data histograms\nset style histogram clustered gap 1\nset style fill solid 0.85 border -1\n"
      "set ylabel '{}'\nset xtics rotate by -20\nset key autotitle columnhead\n"
      "plot for [i=2:{}] 'data/{}.csv' using i:xtic(1)\n",
      ylabel, series + 1, csv);
}

// ---------------------------------------------------------------- 1 formats
struct FormatsResult {
  Section section;
  std::vector<analysis::MatrixRow> rows;
  nlohmann::json json;
};

FormatsResult formats_section(const ReportOptions& o, const Writer& w) {
  FormatsResult r;
  Section& s = r.section;
  s.id = "formats";
  s.title = "1. Formats: grids, shrinkage bias, quantization matrix";
  s.source = "computed now with the golden model (nibble::analysis, the code behind `nibble quant`)";

  // Grids to scale: every code's value, normalized to the format's largest magnitude.
  std::string grids = "format_index,format,code,value,normalized\n";
  std::string ytics;
  int fi = 0;
  for (Format f : kAllFormats) {
    const double top = max_value(f);
    for (int code = 0; code < 16; ++code) {
      const double v = decode_value(f, static_cast<uint8_t>(code));
      grids += fmt::format("{},{},{},{},{}\n", fi, name(f), code, csv_num(v), csv_num(v / top));
    }
    ytics += fmt::format("{}'{}' {}", fi ? ", " : "", name(f), fi);
    ++fi;
  }
  w.text("data/grids.csv", grids);
  s.figures.push_back(
      {"grids", "The three 4-bit grids to scale.",
       "Every code's value divided by the format's largest magnitude (E2M1 6, E1M2 1.75, INT4 7; INT4's -8 sits "
       "at -8/7). E2M1's spacing doubles at 2 and 4; E1M2 and INT4 are uniform.",
       // One short vertical bar per code, each format on its own row (impulses from y = 0 would merge rows).
       fmt::format("set ytics ({})\nset yrange [-0.6:2.6]\nset xrange [-1.2:1.2]\nset xlabel 'value / largest "
                   "magnitude'\nset key off\nplot for [i=0:2] 'data/grids.csv' skip 1 using ($1==i ? $5 : NaN):($1-0.25):"
                   "(0):(0.5) with vectors nohead lw 2 lc i+1\n",
                   ytics)});

  // The quantization matrix on every synthetic input.
  analysis::MatrixSpec spec;
  spec.formats.assign(kAllFormats.begin(), kAllFormats.end());
  spec.scales = {ScaleMode::kNVFP4, ScaleMode::kFP32};
  spec.blocks = {BlockShape::k1x16};
  spec.rht_sizes = {0, 16};
  spec.roundings = {Rounding::kNearestEven, Rounding::kStochastic};
  spec.sr_bits = 8;
  spec.seed = o.seed;
  nlohmann::json inputs = nlohmann::json::array();
  for (analysis::Distribution d : analysis::kAllDistributions) {
    analysis::NamedTensor t{std::string(analysis::name(d)), kRows, kCols,
                            analysis::synthetic_tensor(d, kRows, kCols, o.seed)};
    std::vector<analysis::MatrixRow> rows = analysis::run_quant_matrix(t, spec);
    r.rows.insert(r.rows.end(), rows.begin(), rows.end());
    inputs.push_back({{"name", t.name}, {"rows", t.rows}, {"cols", t.cols}, {"nonfinite_zeroed", 0}});
    if (o.progress) o.progress(fmt::format("formats: {} configurations on {}", rows.size(), t.name));
  }
  r.json = {{"command", "quant"}, {"seed", o.seed}, {"sr_bits", spec.sr_bits}, {"inputs", inputs}};
  r.json["rows"] = nlohmann::json::array();
  for (const analysis::MatrixRow& row : r.rows) r.json["rows"].push_back(analysis::matrix_row_json(row));
  r.json["grid_level_bias"] = nlohmann::json::object();
  for (Format f : kAllFormats) r.json["grid_level_bias"][std::string(name(f))] = analysis::grid_level_bias_json(f);
  {
    std::ostringstream csv;
    analysis::write_matrix_csv(csv, r.rows);
    w.text("data/quant_matrix.csv", csv.str());
  }

  // Per-level bias: predicted (RNE, flat density) and measured (gaussian, nvfp4 1x16 RNE), relative to the top.
  std::string pred = "format_index,format,level,normalized_level,bias,bias_over_max\n";
  std::string meas = "format_index,format,rht,level,normalized_level,count,bias,bias_over_max\n";
  Table bias_table{"level_bias", "Predicted per-level bias of RNE, (ell - r)/2 with ell, r the half-gaps of the "
                                 "level's bucket, in the format's values, and measured on the gaussian input "
                                 "(nvfp4 scale, 1x16, RNE, no RHT).",
                   {"format", "level", "predicted bias", "measured bias", "elements"}, {}};
  fi = 0;
  for (Format f : kAllFormats) {
    const double top = max_value(f);
    const analysis::MatrixRow* m = nullptr;
    for (const analysis::MatrixRow& row : r.rows) {
      for (int rht : {0, 16}) {
        const QuantConfig& c = row.config;
        if (row.input == "gaussian" && c.format == f && c.scale == ScaleMode::kNVFP4 &&
            c.rounding == Rounding::kNearestEven && c.rht.size == rht) {
          for (const MeasuredLevelBias& l : row.measurement.level_bias) {
            meas += fmt::format("{},{},{},{},{},{},{},{}\n", fi, name(f), rht, csv_num(l.level),
                                csv_num(l.level / top), l.count, csv_num(l.bias), csv_num(l.bias / top));
          }
          if (rht == 0) m = &row;
        }
      }
    }
    for (const GridLevelBias& g : grid_level_bias(f)) {
      pred += fmt::format("{},{},{},{},{},{}\n", fi, name(f), csv_num(g.level), csv_num(g.level / top),
                          csv_num(g.bias), csv_num(g.bias / top));
      std::string mb = "-", mc = "-";
      if (m) {
        for (const MeasuredLevelBias& l : m->measurement.level_bias) {
          if (l.level == g.level) {
            mb = fixed(l.bias, 4);
            mc = std::to_string(l.count);
          }
        }
      }
      bias_table.rows.push_back({std::string(name(f)), num(g.level), fixed(g.bias, 4), mb, mc});
    }
    ++fi;
  }
  w.text("data/level_bias.csv", pred);
  w.text("data/level_bias_measured.csv", meas);
  s.figures.push_back(
      {"level_bias", "Per-level shrinkage bias, relative to the largest magnitude.",
       "Lines: predicted bias of RNE at each positive level (flat density within the bucket). Points: measured mean "
       "|q| - |x| of the elements rounded to that level, gaussian input, nvfp4 1x16 RNE without RHT (filled) and "
       "with RHT16 (open). Negative = rounds magnitudes down.",
       "set xlabel 'level / largest magnitude'\nset ylabel 'bias / largest magnitude'\n"
       "plot for [i=0:2] 'data/level_bias.csv' skip 1 using ($1==i ? $4 : NaN):6 with linespoints lw 2 lc i+1 "
       "pt 0 title word('e2m1 e1m2 int4', i+1).' predicted', "
       "for [i=0:2] 'data/level_bias_measured.csv' skip 1 using (($1==i && $3==0) ? $5 : NaN):8 with points pt 7 "
       "lc i+1 title word('e2m1 e1m2 int4', i+1).' measured', "
       "for [i=0:2] 'data/level_bias_measured.csv' skip 1 using (($1==i && $3==16) ? $5 : NaN):8 with points pt 6 "
       "lc i+1 title word('e2m1 e1m2 int4', i+1).' measured, RHT16'\n"});
  s.tables.push_back(bias_table);

  // alpha and SQNR by input: nvfp4 1x16 RNE, each format with and without RHT.
  std::string alpha = "input", sqnr = "input";
  for (Format f : kAllFormats) {
    for (int rht : {0, 16}) {
      alpha += "," + label(f, rht);
      sqnr += "," + label(f, rht);
    }
  }
  alpha += "\n";
  sqnr += "\n";
  for (analysis::Distribution d : analysis::kAllDistributions) {
    alpha += std::string(analysis::name(d));
    sqnr += std::string(analysis::name(d));
    for (Format f : kAllFormats) {
      for (int rht : {0, 16}) {
        for (const analysis::MatrixRow& row : r.rows) {
          const QuantConfig& c = row.config;
          if (row.input == analysis::name(d) && c.format == f && c.scale == ScaleMode::kNVFP4 &&
              c.rounding == Rounding::kNearestEven && c.rht.size == rht) {
            alpha += "," + csv_num(row.measurement.metrics.alpha);
            sqnr += "," + csv_num(row.measurement.metrics.sqnr_db);
          }
        }
      }
    }
    alpha += "\n";
    sqnr += "\n";
  }
  w.text("data/alpha_by_input.csv", alpha);
  w.text("data/sqnr_by_input.csv", sqnr);
  s.figures.push_back({"alpha_by_input", "Attenuation alpha = <Q(x),x>/||x||^2 by input.",
                       "nvfp4 scales, 1x16 blocks, RNE; alpha < 1 shrinks magnitudes. E1M2 and INT4 give "
                       "bit-identical results under the same scale rule.",
                       histogram_script("alpha_by_input", 6, "alpha") + ""});
  s.figures.back().script = "set yrange [0.985:1.005]\n" + s.figures.back().script;
  s.figures.push_back({"sqnr_by_input", "SQNR by input.", "nvfp4 scales, 1x16 blocks, RNE.",
                       histogram_script("sqnr_by_input", 6, "SQNR (dB)")});

  // Relative magnitude error, RNE against SR: nvfp4 1x16, no RHT.
  std::string mag = "input";
  for (Format f : kAllFormats) mag += fmt::format(",{} rne,{} sr", name(f), name(f));
  mag += "\n";
  for (analysis::Distribution d : analysis::kAllDistributions) {
    mag += std::string(analysis::name(d));
    for (Format f : kAllFormats) {
      for (Rounding rd : {Rounding::kNearestEven, Rounding::kStochastic}) {
        for (const analysis::MatrixRow& row : r.rows) {
          const QuantConfig& c = row.config;
          if (row.input == analysis::name(d) && c.format == f && c.scale == ScaleMode::kNVFP4 && c.rounding == rd &&
              c.rht.size == 0) {
            mag += "," + csv_num(100.0 * row.measurement.metrics.rel_mag_error);
          }
        }
      }
    }
    mag += "\n";
  }
  w.text("data/mag_error.csv", mag);
  s.figures.push_back({"mag_error", "Relative magnitude error E[|Q| - |x|] / E|x|, RNE against SR, by input.",
                       "nvfp4 scales, 1x16 blocks, no RHT, in percent. Negative: the quantized tensor is smaller in "
                       "magnitude than the input.",
                       histogram_script("mag_error", 6, "relative magnitude error (%)")});

  Table mt{"quant_matrix",
           fmt::format("The <code>nibble quant</code> matrix: {} rows ({} inputs of {}x{}, seed {}); "
                       "dSQNR RHT is SQNR with the RHT minus without it. Same numbers as "
                       "<code>nibble quant --input all --scale {} --block 1x16 --rht off,16 --rounding rne,sr "
                       "--seed {}</code>.",
                       r.rows.size(), analysis::kAllDistributions.size(), kRows, kCols, o.seed, kScalesList, o.seed),
           {"input", "format", "scale", "block", "RHT", "rounding", "SQNR dB", "dSQNR RHT", "alpha", "|q|/|x|-1",
            "H bits", "B_eff"},
           {}};
  for (const analysis::MatrixRow& row : r.rows) {
    const QuantConfig& c = row.config;
    const analysis::Measurement& m = row.measurement;
    mt.rows.push_back({row.input, std::string(name(c.format)), std::string(name(c.scale)), std::string(name(c.block)),
                       analysis::rht_name(c.rht), std::string(name(c.rounding)), fixed(m.metrics.sqnr_db, 3),
                       c.rht.size ? fixed(row.delta_sqnr_rht, 3) : "-", fixed(m.metrics.alpha, 5),
                       fixed(m.metrics.rel_mag_error, 5), fixed(m.code_entropy_bits, 3), fixed(m.b_eff, 3)});
  }
  s.tables.push_back(mt);
  return r;
}

// ---------------------------------------------------------------- 2 compounding
Section compounding_section(const ReportOptions& o, const Writer& w, nlohmann::json& quant_json,
                            const TrainingData& training) {
  Section s;
  s.id = "compounding";
  s.title = "2. Compounding across depth";
  s.source = "computed now (the --chain analysis of nibble quant)";
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
  std::string csv = "depth";
  for (const analysis::ChainRun& run : runs) csv += "," + label(run.config.format, run.config.rht.size);
  csv += "\n";
  for (int d = 0; d < shape.layers; ++d) {
    csv += std::to_string(d + 1);
    for (const analysis::ChainRun& run : runs) csv += "," + csv_num(run.depths[static_cast<size_t>(d)].eta);
    csv += "\n";
  }
  w.text("data/chain_eta.csv", csv);
  s.figures.push_back(
      {"chain_eta", "Compounded gain eta across depth.",
       fmt::format("A batch of {} through {} random linear layers of width {} (W ~ N(0, 1/width)), both GEMM operands "
                   "quantized (nvfp4 scales, 1x16, RNE); eta_l = &lt;y_q, y_ref&gt; / ||y_ref||^2. E1M2 and INT4 coincide: "
                   "under the same scale rule they dequantize to bit-identical tensors. Same numbers as "
                   "<code>nibble quant --chain {}</code> with the options of section 1.",
                   shape.batch, shape.layers, shape.width, shape.layers),
       fmt::format("set xlabel 'depth (layers)'\nset ylabel 'eta'\nset key autotitle columnhead\nset xtics 1\n"
                   "plot for [i=2:{}] 'data/chain_eta.csv' using 1:i with linespoints lw 2\n",
                   runs.size() + 1)});
  Table t{"chain", "eta and cosine at each depth, and the per-layer gain eta_L^(1/L).", {"configuration"}, {}};
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
    s.notes_html = "<p class=\"note\" data-absent=\"training-diagnostics\">Per-layer attenuation from training: " +
                   html_escape(training.problem) + ".</p>\n";
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
    std::string out = "index,layer";
    for (const auto& v : variants) out += "," + v;
    out += "\n";
    const size_t n = series["e2m1"].size();
    if (n == 0) throw ReportError(diag_path + ": no fprop rows of variant e2m1 at the last step");
    for (size_t i = 0; i < n; ++i) {
      out += fmt::format("{},{}", i + 1, series["e2m1"][i].first);
      for (const auto& v : variants) out += "," + (i < series[v].size() ? csv_num(series[v][i].second) : "NaN");
      out += "\n";
    }
    w.text("data/training_cum_alpha.csv", out);
    s.source += std::string("; per-layer attenuation ") +
                (o.training_fresh ? "from the training run now" : "recorded from training") + " (" + run_name + ")";
    s.figures.push_back({"training_cum_alpha",
                         "Running product of alpha across the linear layers of the trained model (Fprop).",
                         html_escape(fmt::format("From {} at step {} of the recorded run {}.", diag_path,
                                                 static_cast<long long>(last), run_name)),
                         "set xlabel 'linear layer (in order of depth)'\nset ylabel 'cumulative alpha'\n"
                         "set key autotitle columnhead\nplot for [i=3:6] 'data/training_cum_alpha.csv' using 1:i "
                         "with linespoints lw 2\n"});
  } catch (const std::exception& e) {
    s.notes_html = "<p class=\"note\" data-absent=\"training-diagnostics\">Per-layer attenuation from training: " +
                   html_escape(e.what()) + "</p>\n";
  }
  return s;
}

// ---------------------------------------------------------------- 3 training
struct RecipeGap {
  std::string recipe;
  double mean = 0, std = 0;
};

std::string spread_text(const nlohmann::json& j, int decimals, double scale = 1.0) {
  if (!j.is_object() || !j.contains("mean") || !j["mean"].is_number()) return "-";
  std::string s = fixed(j["mean"].get<double>() * scale, decimals);
  if (j.contains("std") && j["std"].is_number()) s += " ± " + fixed(j["std"].get<double>() * scale, decimals);
  if (j.contains("min") && j["min"].is_number() && j.contains("max") && j["max"].is_number()) {
    s += fmt::format(" [{}, {}]", fixed(j["min"].get<double>() * scale, decimals),
                     fixed(j["max"].get<double>() * scale, decimals));
  }
  return s;
}

// A section whose recorded results are missing: why (`problem`), and where they come from (`how_html`).
void mark_absent(Section& s, const char* key, const std::string& what, const std::string& problem,
                 const std::string& how_html) {
  s.source = "absent: no recorded " + what;
  s.notes_html = fmt::format("<p class=\"note\" data-absent=\"{}\"><b>No recorded {}.</b> {}. {}</p>\n", key, what,
                             html_escape(problem), how_html);
}

// The recorded 6.4 M sweep (training/summary.json), or one the report ran now.
Section sweep_section(const ReportOptions& o, const Writer& w, const TrainingData& training,
                      std::vector<RecipeGap>& gaps) {
  Section s;
  s.id = "training";
  s.title = "3. Training quality";
  if (!training.present) {
    mark_absent(s, "training", "training results", training.problem,
                "They come from <code>nibble train-sweep --out docs/results/training</code> on a GPU machine "
                "(docs/training.md), or from this report itself with <code>--training fresh</code> in a build with "
                "libtorch on a machine with a GPU.");
    return s;
  }
  const nlohmann::json& sum = training.summary;
  auto str = [](const nlohmann::json& j, const char* k) {
    return j.contains(k) && j[k].is_string() ? j[k].get<std::string>() : std::string();
  };
  std::string device = str(sum, "device");
  std::string gpu;
  for (const char* k : {"gpu", "gpu_name", "device_name"}) {
    if (gpu.empty()) gpu = str(sum, k);
  }
  std::string command = str(sum, "command");
  // The GPU's name, where summary.json does not carry it: the first run's run.json.
  std::string run_device;
  if (gpu.empty()) {
    for (const auto& rec : sum["recipes"]) {
      if (!run_device.empty() || !rec.is_object() || !rec.contains("runs") || !rec["runs"].is_array()) continue;
      for (const auto& run : rec["runs"]) {
        const fs::path rj = fs::path(training_dir(o)) / str(run, "dir") / "run.json";
        if (str(run, "dir").empty() || !fs::exists(rj)) continue;
        try {
          const nlohmann::json j = read_json(rj.string());
          for (const char* k : {"gpu", "gpu_name", "device_name", "device"}) {
            if (run_device.empty() && j.contains(k)) run_device = j[k].is_string() ? j[k].get<std::string>() : j[k].dump();
          }
        } catch (const ReportError&) {  // an unreadable run.json: look at the next run
        }
        if (!run_device.empty()) break;
      }
    }
  }
  if (gpu.empty() && !run_device.empty() && run_device != device) gpu = run_device + " (from run.json)";
  s.source = o.training_fresh
                 ? "run now by this report on this machine's GPU: " + (fs::path(training_dir(o)) / "summary.json").string()
                 : "recorded GPU results: " + (fs::path(training_dir(o)) / "summary.json").string() +
                       " (not re-run by this report)";
  s.intro_html = fmt::format(
      "<p>Device recorded: <b>{}</b>{}. Command recorded: {}.{}</p>\n", html_escape(device.empty() ? "not recorded" : device),
      gpu.empty() ? "; GPU: not recorded in summary.json or run.json (docs/results/training.md names it)"
                  : "; GPU: <b>" + html_escape(gpu) + "</b>",
      command.empty() ? "not recorded in summary.json (docs/results/training.md lists the sweep's command)"
                      : "<code>" + html_escape(command) + "</code>",
      training.problem.empty() ? "" : " <span class=\"note\">" + html_escape(training.problem) + "</span>");
  const int last_n = sum.contains("metric") && sum["metric"].is_object() && sum["metric"].contains("last_n") &&
                             sum["metric"]["last_n"].is_number()
                         ? sum["metric"]["last_n"].get<int>()
                         : 0;
  Table t{"training_gap",
          fmt::format("Relative loss gap to BF16 per recipe, mean ± sample std [min, max] over seeds, in percent{}.",
                      last_n ? fmt::format(" (mean of |L - L_bf16| / L_bf16 over the last {} steps)", last_n) : ""),
          {"recipe", "description", "seeds", "loss gap to BF16 (%)", "final loss", "final val loss", "step time vs BF16"},
          {}};
  const fs::path base = training_dir(o);
  std::vector<std::string> curve_names;
  std::map<long, std::vector<double>> curves;  // step -> per recipe mean loss
  std::string problems;
  for (const auto& rec : sum["recipes"]) {
    if (!rec.is_object()) continue;
    const std::string nm = str(rec, "name");
    const nlohmann::json gap = rec.value("gap", nlohmann::json());
    std::string n = gap.is_object() && gap.contains("n") ? gap["n"].dump() : "-";
    t.rows.push_back({nm, str(rec, "description"), n, spread_text(gap, 3, 100.0),
                      spread_text(rec.value("final_loss", nlohmann::json()), 4),
                      spread_text(rec.value("final_val_loss", nlohmann::json()), 4),
                      rec.contains("step_time_vs_bf16") && rec["step_time_vs_bf16"].is_number()
                          ? fixed(rec["step_time_vs_bf16"].get<double>(), 2) + "x"
                          : "-"});
    if (gap.is_object() && gap.contains("mean") && gap["mean"].is_number()) {
      gaps.push_back({nm, gap["mean"].get<double>(), gap.contains("std") && gap["std"].is_number() ? gap["std"].get<double>() : 0});
    }
    // Mean loss curve over the recipe's seeds.
    std::map<long, std::pair<double, int>> acc;
    if (rec.contains("runs") && rec["runs"].is_array()) {
      for (const auto& run : rec["runs"]) {
        const std::string rel = str(run, "loss_csv");
        if (rel.empty()) continue;
        try {
          const auto rows = read_csv((base / rel).string());
          if (rows.empty()) continue;
          size_t cs = 0, cl = 1;
          for (size_t i = 0; i < rows[0].size(); ++i) {
            if (rows[0][i] == "step") cs = i;
            if (rows[0][i] == "loss") cl = i;
          }
          for (size_t i = 1; i < rows.size(); ++i) {
            const long step = std::stol(rows[i].at(cs));
            acc[step].first += std::stod(rows[i].at(cl));
            acc[step].second += 1;
          }
        } catch (const std::exception& e) {
          problems += html_escape(fmt::format("{}: {}; ", (base / rel).string(), e.what()));
        }
      }
    }
    if (!acc.empty()) {
      const size_t idx = curve_names.size();
      curve_names.push_back(nm);
      for (const auto& [step, v] : acc) {
        auto& row = curves[step];
        row.resize(idx + 1, std::nan(""));
        row[idx] = v.first / v.second;
      }
    }
  }
  s.tables.push_back(t);
  if (!curve_names.empty()) {
    std::string csv = "step";
    for (const auto& nm : curve_names) csv += "," + nm;
    csv += "\n";
    for (auto& [step, row] : curves) {
      row.resize(curve_names.size(), std::nan(""));
      csv += std::to_string(step);
      for (double v : row) csv += "," + csv_num(v);
      csv += "\n";
    }
    w.text("data/training_loss.csv", csv);
    s.figures.push_back({"training_loss", "Training loss per recipe (mean over seeds).",
                         "Per-step training loss read from each run's loss.csv, averaged over the recorded seeds.",
                         fmt::format("set xlabel 'step'\nset ylabel 'training loss'\nset logscale y\n"
                                     "set key autotitle columnhead\nplot for [i=2:{}] 'data/training_loss.csv' "
                                     "using 1:i with lines lw 1.5\n",
                                     curve_names.size() + 1)});
  }
  if (!problems.empty()) s.notes_html += "<p class=\"note\">Unreadable loss files: " + problems + "</p>\n";
  return s;
}

// A gap or difference (a fraction) in percentage points with its t interval: "+0.123 ± 0.045 [+0.078, +0.168]".
std::string points_ci(const nlohmann::json& m) {
  auto num = [](const nlohmann::json& j, const char* k) {
    return j.is_object() && j.contains(k) && j[k].is_number() ? j[k].get<double>() : std::nan("");
  };
  const double mean = num(m, "mean");
  if (!std::isfinite(mean)) return "-";
  const double hw = num(m, "ci_half_width");
  if (!std::isfinite(hw)) return fmt::format("{:+.3f} (one seed)", 100 * mean);
  return fmt::format("{:+.3f} ± {:.3f} [{:+.3f}, {:+.3f}]", 100 * mean, 100 * hw, 100 * num(m, "ci_lo"),
                     100 * num(m, "ci_hi"));
}

// The scaling study (training/study/summary.json): the gap per size and arm, the paired
// differences beside the paper's effect, the ablations and the run count. `complete`
// receives the sizes whose runs are all done.
void add_study(Section& s, const Writer& w, const StudyData& study, std::vector<std::string>& complete) {
  const nlohmann::json& sum = study.summary;
  auto str = [](const nlohmann::json& j, const char* k) {
    return j.is_object() && j.contains(k) && j[k].is_string() ? j[k].get<std::string>() : std::string("-");
  };
  auto count = [](const nlohmann::json& j, const char* k) {
    return j.is_object() && j.contains(k) && j[k].is_number_integer() ? j[k].get<int64_t>() : int64_t{0};
  };
  std::vector<std::string> incomplete;
  Table gaps{"training_study_gap",
             "Scaling study: signed relative gap of the final validation loss to BF16, g = (L − L_bf16) / L_bf16, "
             "paired by seed; mean ± 95 % Student-t half-width [interval], in percentage points.",
             {"size", "recipe", "runs finished / diverged / started", "g (pp)", "g, BF16 forward of the same weights (pp)",
              "cumulative α across depth, Fprop / Dgrad / Wgrad"},
             {}};
  const nlohmann::json boot_meta =
      sum.contains("metric") && sum["metric"].is_object() ? sum["metric"].value("bootstrap", nlohmann::json()) : nlohmann::json();
  Table pairs{"training_study_pairs",
              "Scaling study: paired differences d = g_a − g_b per seed (pp), the 95 % Student-t interval and the "
              "percentile bootstrap interval (" +
                  fmt::format("{} resamples, seed {}", count(boot_meta, "resamples"), count(boot_meta, "seed")) +
                  "), paired t-test, verdict, and the paper's effect (" +
                  fmt::format("{:.0f} % of E2M1's gap, {}", 100 * published::kUfp4TrainingEffect, published::kUfp4) +
                  ") beside the primary comparison.",
              {"size", "d = g_a − g_b", "question", "seeds", "d (pp), t interval", "bootstrap interval", "p",
               "verdict", "paper's d (pp)", "seeds for the CI target"},
              {}};
  std::string csv = "size,params,recipe,g_pp,ci_lo_pp,ci_hi_pp\n";
  int plotted = 0;
  for (const auto& z : sum["sizes"]) {
    if (!z.is_object()) continue;
    const std::string size = str(z, "name");
    (z.value("complete", false) ? complete : incomplete).push_back(size);
    if (z.contains("arms") && z["arms"].is_array()) {
      for (const auto& a : z["arms"]) {
        const nlohmann::json& runs = a.value("runs", nlohmann::json::object());
        std::string att = "-";
        if (a.contains("attenuation") && a["attenuation"].is_object() && !a["attenuation"].empty()) {
          att.clear();
          for (const char* g : {"fprop", "dgrad", "wgrad"}) {
            const nlohmann::json& x = a["attenuation"].value(g, nlohmann::json::object());
            att += (att.empty() ? "" : " / ") +
                   (x.contains("cum_alpha_last_layer") && x["cum_alpha_last_layer"].is_number()
                        ? fixed(x["cum_alpha_last_layer"].get<double>(), 3)
                        : std::string("-"));
          }
        }
        const bool base = !a.contains("gap");
        gaps.rows.push_back({size, str(a, "recipe"),
                             fmt::format("{} / {} / {} of {}", count(runs, "finished"), count(runs, "diverged"),
                                         count(runs, "started"), count(runs, "planned")),
                             base ? "0 (baseline)" : points_ci(a["gap"]),
                             base ? "-" : points_ci(a.value("gap_bf16_forward", nlohmann::json())), att});
        if (!base && a["gap"].is_object() && a["gap"].value("mean", nlohmann::json()).is_number()) {
          const auto& g = a["gap"];
          const double lo = g.value("ci_lo", nlohmann::json()).is_number() ? g["ci_lo"].get<double>() : g["mean"].get<double>();
          const double hi = g.value("ci_hi", nlohmann::json()).is_number() ? g["ci_hi"].get<double>() : g["mean"].get<double>();
          csv += fmt::format("{},{},{},{},{},{}\n", size, count(z, "quantized_linear_parameters"), str(a, "recipe"),
                             csv_num(100 * g["mean"].get<double>()), csv_num(100 * lo), csv_num(100 * hi));
          ++plotted;
        }
      }
    }
    if (z.contains("pairs") && z["pairs"].is_array()) {
      for (const auto& p : z["pairs"]) {
        const nlohmann::json& d = p.value("d", nlohmann::json::object());
        std::string boot = "-";
        if (p.contains("bootstrap") && p["bootstrap"].is_object()) {
          const auto& b = p["bootstrap"];
          boot = fmt::format("[{:+.3f}, {:+.3f}]", 100 * b.value("ci_lo", 0.0), 100 * b.value("ci_hi", 0.0));
        }
        std::string paper = "-";
        if (p.contains("paper_d") && p["paper_d"].is_number()) {
          paper = fmt::format("{:+.3f} ({} the interval)", 100 * p["paper_d"].get<double>(),
                              p.value("paper_within_ci", false) ? "inside" : "outside");
        }
        pairs.rows.push_back(
            {size, str(p, "a") + " − " + str(p, "b"), str(p, "question"), std::to_string(count(d, "n")),
             points_ci(d), boot,
             p.contains("t_test") && p["t_test"].value("p", nlohmann::json()).is_number()
                 ? fmt::format("{:.3g}", p["t_test"]["p"].get<double>())
                 : "-",
             str(p, "verdict"), paper,
             p.contains("seeds_needed") ? std::to_string(count(p, "seeds_needed")) : std::string("-")});
      }
    }
  }
  const nlohmann::json& runs = sum.value("runs", nlohmann::json::object());
  s.intro_html += fmt::format(
      "<p><b>Scaling study</b> (<code>{}</code>, {} sizes): {} runs planned, {} started, {} finished, {} diverged "
      "(every started run is counted; a diverged run is a result). Complete sizes: {}. Incomplete: {}.</p>\n",
      html_escape(str(sum, "study")), sum["sizes"].size(), count(runs, "planned"), count(runs, "started"),
      count(runs, "finished"), count(runs, "diverged"), complete.empty() ? "none" : fmt::format("{}", fmt::join(complete, ", ")),
      incomplete.empty() ? "none" : fmt::format("{}", fmt::join(incomplete, ", ")));
  s.tables.push_back(gaps);
  s.tables.push_back(pairs);
  if (plotted > 0) {
    w.text("data/training_study_gap.csv", csv);
    s.figures.push_back(
        {"training_study_gap", "Loss gap to BF16 per size (scaling study).",
         "Mean signed gap g of each quantized recipe at each size, with its 95 % Student-t interval (pp), against the "
         "parameters of the quantized linears.",
         "set key autotitle columnhead\nset logscale x\nset xlabel 'quantized-linear "
         "parameters'\nset ylabel 'g = (L - L_bf16)/L_bf16 (pp)'\nset key outside right\n"
         "plot for [r in 'e2m1 ufp4 e2m1+rht=all ufp4+rht=wgrad nvfp4'] 'data/training_study_gap.csv' "
         "using ($2):(strcol(3) eq r ? $4 : NaN):(strcol(3) eq r ? $5 : NaN):(strcol(3) eq r ? $6 : NaN) "
         "with yerrorlines title r\n"});
  }
}

// Section 3: the scaling study where its summary is recorded, and the 6.4 M sweep until a
// size of the study is complete.
Section training_section(const ReportOptions& o, const Writer& w, const TrainingData& training,
                         const StudyData& study, std::vector<RecipeGap>& gaps) {
  std::vector<std::string> complete;
  if (!study.present) {
    Section s = sweep_section(o, w, training, gaps);
    s.notes_html += "<p class=\"note\" data-absent=\"training-study\">The scaling study (<code>nibble "
                    "train-study</code>, docs/training.md) has no recorded summary yet: " +
                    html_escape(study.problem) + ".</p>\n";
    return s;
  }
  Section study_part;
  add_study(study_part, w, study, complete);
  Section s;
  if ((complete.empty() || o.training_fresh) && training.present) {
    s = sweep_section(o, w, training, gaps);
    s.intro_html = study_part.intro_html +
                   (complete.empty() ? "<p>No size of the study is complete yet, so the earlier 6.4 M-parameter sweep "
                                       "stays below it (its tables and curves follow the study's).</p>\n"
                                     : "<p>The 6.4 M-parameter sweep below was run now on request (--training "
                                       "fresh); the study above replaces it.</p>\n") +
                   s.intro_html;
    s.source += "; scaling study: " + study.path;
  } else {
    s.id = "training";
    s.title = "3. Training quality";
    s.source = "recorded GPU results: " + study.path + " (the scaling study; not re-run by this report)";
    s.intro_html = study_part.intro_html;
    if (!complete.empty()) {
      s.intro_html += "<p>The earlier 6.4 M-parameter sweep (training/summary.json) is retired from this section now "
                      "that a size of the study is complete; docs/results/training.md keeps its history.</p>\n";
      // The trade-off takes the gaps of the largest complete size.
      for (const auto& z : study.summary["sizes"]) {
        if (!z.is_object() || z.value("name", "") != complete.back()) continue;
        for (const auto& a : z.value("arms", nlohmann::json::array())) {
          const nlohmann::json& g = a.value("gap", nlohmann::json());
          if (!g.is_object() || !g.value("mean", nlohmann::json()).is_number()) continue;
          gaps.push_back({a.value("recipe", ""), g["mean"].get<double>(),
                          g.value("sd", nlohmann::json()).is_number() ? g["sd"].get<double>() : 0.0});
        }
      }
    }
  }
  s.tables.insert(s.tables.begin(), study_part.tables.begin(), study_part.tables.end());
  s.figures.insert(s.figures.begin(), study_part.figures.begin(), study_part.figures.end());
  return s;
}

// ---------------------------------------------------------------- 4 hardware
// The element format of a recipe spec ("preset" or "preset+key=value+..."): a format= flag, else the preset's.
std::string format_of_recipe(const std::string& recipe) {
  const size_t flag = recipe.find("+format=");
  if (flag != std::string::npos) return recipe.substr(flag + 8, recipe.find('+', flag + 1) - flag - 8);
  const std::string preset = recipe.substr(0, recipe.find('+'));
  if (preset == "ufp4-int4") return "int4";
  if (preset == "ufp4") return "e1m2";
  if (preset == "bf16") return "";
  return "e2m1";  // e2m1, nvfp4, mxfp4
}

bool config_supports(const std::string& config, const std::string& format) {
  return config == "all" || config.find(format) != std::string::npos;
}

Section hardware_section(const ReportOptions& o, const Writer& w, const AreaData& area) {
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
  std::string csv = "index,table,config,area,percent_vs_e2m1,energy_per_mac\n";
  std::string xtics;
  int idx = 0;
  for (const AreaData::Record& r : area.records) {
    t.rows.push_back({r.table, r.config, r.label, num(r.area, 6), r.unit,
                      r.has_percent ? fmt::format("{:+.1f}%", r.percent_vs_e2m1) : "-",
                      r.has_energy ? num(r.energy_per_mac, 5) : "-", r.has_energy ? r.energy_unit : "-"});
    any_energy = any_energy || r.has_energy;
    csv += fmt::format("{},{},{},{},{},{}\n", idx, r.table, r.config, csv_num(r.area),
                       r.has_percent ? csv_num(r.percent_vs_e2m1) : "NaN",
                       r.has_energy ? csv_num(r.energy_per_mac) : "NaN");
    xtics += fmt::format("{}'{}{}' {}", idx ? ", " : "", r.config,
                         area.records.front().table == r.table ? "" : " (" + r.table + ")", idx);
    ++idx;
  }
  t.rows.push_back({"published", "MixFP4 (arXiv 2605.31035)", "E1M2 added next to E2M1 in a tensor core", "-", "-",
                    fmt::format("{:+.1f}%", area.mixfp4_area_percent),
                    fmt::format("{:+.1f}% power", area.mixfp4_power_percent), "-"});
  s.tables.push_back(t);
  w.text("data/area.csv", csv);
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
    std::string ecsv = "index,library,config,format,operands,energy_per_mac,unit,percent_vs_e2m1_only\n";
    std::string etics;
    int ei = 0;
    for (const AreaData::Energy& e : area.energy) {
      const double pc = area.energy_percent(e.table, e.config, e.format, e.operands);
      et.rows.push_back({e.table, e.config, e.format, e.operands, num(e.energy_per_mac, 5), e.unit,
                         std::isfinite(pc) ? fmt::format("{:+.1f}%", pc) : "-"});
      if (e.operands != "gaussian") continue;
      ecsv += fmt::format("{},{},{},{},{},{},{},{}\n", ei, e.table, e.config, e.format, e.operands,
                          csv_num(e.energy_per_mac), e.unit, csv_num(pc));
      etics += fmt::format("{}'{} {}{}' {}", ei ? ", " : "", e.config, e.format,
                           e.table == area.energy.front().table ? "" : " (" + e.table + ")", ei);
      ++ei;
    }
    s.tables.push_back(et);
    w.text("data/energy.csv", ecsv);
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
    const AreaData::Record* base = nullptr;
    for (const auto& r : area.records) {
      if (r.table == tb && r.config == "e2m1") base = &r;
    }
    if (!base) continue;
    for (const auto& r : area.records) {
      if (r.table != tb || r.config == "e2m1" || (r.config.find("e2m1") == std::string::npos && r.config != "all")) {
        continue;
      }
      inc += fmt::format("<li>{}: E2M1-only → {}: +{} {} ({:+.1f}%)</li>", html_escape(tb), html_escape(r.label),
                         fixed(r.area - base->area, std::fabs(r.area - base->area) >= 100 ? 0 : 2), html_escape(r.unit), 100.0 * (r.area - base->area) / base->area);
    }
  }
  if (!inc.empty()) s.notes_html += "<p>Incremental cost of uniform-grid support:</p><ul>" + inc + "</ul>\n";
  return s;
}

// ---------------------------------------------------------------- 5 trade-off
Section tradeoff_section(const Writer& w, const AreaData& area, const std::vector<RecipeGap>& gaps,
                         const nlohmann::json& chain) {
  Section s;
  s.id = "tradeoff";
  s.title = "5. Trade-off: quality against cost";
  if (!area.present) {
    s.source = "absent: needs recorded area results (section 4)";
    s.notes_html = "<p class=\"note\" data-absent=\"tradeoff\">No trade-off plot: " + html_escape(area.problem) +
                   (gaps.empty() ? "; and no recorded training results (section 3)" : "") + ".</p>\n";
    return s;
  }
  // The first table of area records (one library/top).
  const std::string tb = area.records.front().table;
  std::vector<const AreaData::Record*> recs;
  for (const auto& r : area.records) {
    if (r.table == tb) recs.push_back(&r);
  }
  auto pct = [&](const AreaData::Record& r) {
    if (r.has_percent) return r.percent_vs_e2m1;
    for (const auto& b : area.records) {
      if (b.table == r.table && b.config == "e2m1" && b.area > 0) return 100.0 * (r.area - b.area) / b.area;
    }
    return std::nan("");
  };
  // Energy per MAC running format f, percent over E2M1-only running E2M1 (gaussian operands).
  auto epct = [&](const AreaData::Record& r, const std::string& f) {
    if (!area.energy.empty()) return area.energy_percent(r.table, r.config, f);
    for (const auto& b : area.records) {
      if (r.has_energy && b.table == r.table && b.config == "e2m1" && b.has_energy && b.energy_per_mac > 0) {
        return 100.0 * (r.energy_per_mac - b.energy_per_mac) / b.energy_per_mac;
      }
    }
    return std::nan("");
  };
  Table t{"tradeoff", "One point per format configuration and recipe (the configuration must multiply the recipe's "
                      "element format).",
          {"config", "recipe / run", "format", "area vs E2M1-only (%)", "energy/MAC vs E2M1-only (%)", "quality",
           "quality measure"},
          {}};
  std::string csv = "series,config,recipe,area_percent,energy_percent,quality\n";
  int series = 0;
  if (!gaps.empty()) {
    s.source = "recorded: area-energy.json and the training results of section 3";
    for (const RecipeGap& g : gaps) {
      const std::string f = format_of_recipe(g.recipe);
      if (f.empty()) continue;
      for (const auto* r : recs) {
        if (!config_supports(r->config, f)) continue;
        csv += fmt::format("0,{},{},{},{},{}\n", r->config, g.recipe, csv_num(pct(*r)),
                           csv_num(epct(*r, f)), csv_num(100.0 * g.mean));
        t.rows.push_back({r->config, g.recipe, f, fixed(pct(*r), 1), fixed(epct(*r, f), 1),
                          fixed(100.0 * g.mean, 3) + " %", "loss gap to BF16"});
      }
    }
    series = 1;
  } else {
    s.source = "recorded area-energy.json; quality from the chain computed now (no recorded training results)";
  }
  // Quality proxy: attenuation of the 8-layer chain, 1 - eta_8, per format and RHT.
  for (const auto& run : chain["runs"]) {
    const std::string f = run["format"].get<std::string>();
    const double eta = run["depths"].back()["eta"].get<double>();
    const std::string nm = f + (run["rht"] == "off" ? std::string(" no-rht") : " rht" + run["rht"].get<std::string>());
    for (const auto* r : recs) {
      if (!config_supports(r->config, f)) continue;
      csv += fmt::format("1,{},{},{},{},{}\n", r->config, nm, csv_num(pct(*r)),
                         csv_num(epct(*r, f)), csv_num(100.0 * std::fabs(1.0 - eta)));
      t.rows.push_back({r->config, "chain: " + nm, f, fixed(pct(*r), 1), fixed(epct(*r, f), 1),
                        fixed(100.0 * std::fabs(1.0 - eta), 3) + " %", "|1 - eta_8| of the chain"});
    }
  }
  w.text("data/tradeoff.csv", csv);
  s.tables.push_back(t);
  std::string plot = "set xlabel 'area vs E2M1-only (%)'\nset ylabel 'quality loss (%)'\n"
                     "set offsets graph 0.05, graph 0.3, graph 0.1, graph 0.05\nplot ";
  if (series) {
    plot += "'data/tradeoff.csv' skip 1 using ($1==0 ? $4 : NaN):6:3 with labels point pt 7 ps 1.2 offset 0.5,0.5 "
            "left font ',9' title 'loss gap to BF16 (training)', ";
  }
  plot += "'data/tradeoff.csv' skip 1 using ($1==1 ? $4 : NaN):6:3 with labels point pt 6 ps 1.2 offset 0.5,-0.5 "
          "left font ',9' title '|1 - eta_8| (chain)'\n";
  s.figures.push_back({"tradeoff", "Quality against area, one point per configuration and recipe.",
                       "Filled: relative loss gap to BF16 from recorded training (where present). Open: attenuation "
                       "of the 8-layer chain, |1 - eta_8|, computed now.",
                       plot});
  if (std::any_of(recs.begin(), recs.end(), [&](const auto* r) { return std::isfinite(epct(*r, "e2m1")); })) {
    std::string p2 = "set xlabel 'energy per MAC vs E2M1-only (%)'\nset ylabel 'quality loss (%)'\n"
                     "set offsets graph 0.05, graph 0.3, graph 0.1, graph 0.05\nplot ";
    if (series) p2 += "'data/tradeoff.csv' skip 1 using ($1==0 ? $5 : NaN):6:3 with labels point pt 7 offset 0.5,0.5 left font ',9' title 'loss gap to BF16', ";
    p2 += "'data/tradeoff.csv' skip 1 using ($1==1 ? $5 : NaN):6:3 with labels point pt 6 offset 0.5,-0.5 left font ',9' title '|1 - eta_8|'\n";
    s.figures.push_back({"tradeoff_energy", "Quality against energy per MAC.", "As above, against energy.", p2, "tradeoff"});
  }
  return s;
}

// ---------------------------------------------------------------- 6 verification, 7 cycles
Section verification_section(const ReportOptions& o, const Writer& w, const CycleResults& cyc) {
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

Section cycles_section(const Writer& w, const CycleResults& cyc) {
  Section s;
  s.id = "cycles";
  s.title = "7. Cycle simulation: GEMM tile sweep";
  if (!cyc.available) {
    s.source = "absent: this build has no SystemC model";
    s.notes_html = "<p class=\"note\" data-absent=\"cycles\">Not built with SystemC: no cycle sweep.</p>\n";
    return s;
  }
  s.source = "computed now on the SystemC cycle model (nibble::sim::SystemCDevice)";
  std::string csv = "rows,cols,lanes,bandwidth,m,n,k,cycles,macs,peak_macs_per_cycle,utilization,stall_operand,"
                    "stall_output,stall_pipeline,formula_cycles,compared,mismatches\n";
  Table t{"cycles", "", {"array", "bandwidth B/cycle", "cycles", "MAC/cycle", "utilization", "operand stalls",
                         "pipeline stalls", "closed form", "checked vs golden"}, {}};
  std::vector<std::string> shapes;
  for (const CyclePoint& p : cyc.sweep) {
    csv += fmt::format("{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}\n", p.rows, p.cols, p.lanes, p.bandwidth, p.m,
                       p.n, p.k, p.cycles, p.macs, p.peak, csv_num(p.utilization), p.stall_operand, p.stall_output,
                       p.stall_pipeline, p.formula_applies ? std::to_string(p.formula_cycles) : "NaN", p.compared,
                       p.mismatches);
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
  t.caption = fmt::format("A {}x{}x{} GEMM (E2M1 x E2M1, nvfp4 scales, 1x16 blocks), latency 4, no injected stalls, "
                          "per array shape (rows x cols x lanes) and operand-buffer bandwidth.",
                          p0.m, p0.n, p0.k);
  w.text("data/cycles.csv", csv);
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
  s.figures.push_back({"cycles", "MAC utilization against operand bandwidth, per array shape.",
                       "Larger arrays need more bytes per cycle to stay busy; at low bandwidth every shape is "
                       "operand-bound.",
                       plot + "\n"});
  return s;
}

// ---------------------------------------------------------------- 8 GPU kernels
// The range of a value over several runs.
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

Section kernels_section(const Writer& w, const KernelData& kd) {
  Section s;
  s.id = "gpu-kernels";
  s.title = "8. GPU kernels: the formats on today's hardware";
  if (kd.runs.empty()) {
    mark_absent(s, "gpu-kernels", "GPU kernel runs", kd.problem,
                "They come from <code>nibble bench-kernels --json FILE</code> on a GPU machine, saved under the "
                "results directory's <code>kernels/</code> (docs/results/kernels.md).");
    return s;
  }
  std::string files;
  for (const std::string& f : kd.files) files += (files.empty() ? "" : ", ") + fs::path(f).filename().string();
  s.source = "recorded: " + kd.dir + " (" + files + "; nibble bench-kernels --json on a GPU; not re-run)";
  s.intro_html =
      "<p>Hopper GPUs have no 4-bit tensor cores, and none of their tensor cores rounds once per block as the "
      "contract does, so Nibble's CUDA kernels emulate the formats bit for bit: quantization against a device copy "
      "of the same bytes, and the block-scaled GEMM against cuBLAS BF16 of the same shape. The <i>bound</i> rows "
      "time the contract's own adds alone (one binary32 add per output per k-block, in k order) on the CUDA cores, "
      "over 128 × 128 tiles: where those tiles fill the GPU, no bit-exact GEMM on it can be faster, and a tensor "
      "core that accumulates per block, as the DPU of section 4 does, removes that cost. Ranges are over the "
      "recorded runs of each GPU.</p>\n";

  // The GPUs, in the order the runs name them.
  std::vector<std::string> devices;
  for (const io::KernelBenchRun& run : kd.runs) {
    if (std::find(devices.begin(), devices.end(), run.device.name) == devices.end()) devices.push_back(run.device.name);
  }
  Table gemm{"kernels_gemm",
             "GEMM C = A·Bᵀ: cuBLAS BF16, the contract's adds alone, the library's bit-exact GEMM per recipe (its "
             "default path), and the usual emulation (dequantize to BF16, then cuBLAS; not bit-exact; its range over "
             "the recipes).",
             {"GPU", "M × N × K", "path", "ms", "vs cuBLAS BF16", "tile"},
             {}};
  Table quant{"kernels_quantize",
              "Quantize (the runs' tensor, row-wise output unless named): time, bandwidth against a device copy "
              "of the input, and the fused RHT16's cost: the time of the RHT16 recipe in the row above over this "
              "one's, the same recipe without RHT.",
              {"GPU", "input", "shape", "recipe", "ms", "vs copy", "RHT16 above / this"},
              {}};
  std::string csv;
  std::vector<std::string> columns;  // figure columns after the shape: bound, then each recipe, then the emulation
  std::vector<std::vector<std::string>> csv_rows;
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
      std::vector<std::string> fig_row = {shape_text(shape)};
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
          fig_row.push_back(csv_num(rr.ratio.mean()));
        }
      }
      if (emulation.n > 0) {
        gemm.rows.push_back({dev, shape_text(shape), "emulation (dequantize + cuBLAS), any recipe",
                             range_cell(emulation_ms, 3), range_cell(emulation, 2, "×"), "-"});
        data.push_back({{"gpu", dev}, {"shape", shape}, {"path", "emulation"}, {"kind", "emulation"},
                        {"ms", {emulation_ms.lo, emulation_ms.hi}}, {"vs_cublas", {emulation.lo, emulation.hi}}});
        if (dev == devices.front()) {
          if (shape == shapes.front()) columns.push_back("emulation (mean over recipes)");
          fig_row.push_back(csv_num(emulation.mean()));
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
  csv = "shape";
  for (std::string name : columns) {  // a column head holds no separator
    std::replace(name.begin(), name.end(), ',', ';');
    csv += "," + name;
  }
  csv += "\n";
  for (const auto& row : csv_rows) {
    for (size_t i = 0; i < row.size(); ++i) csv += (i ? "," : "") + row[i];
    csv += "\n";
  }
  s.tables.push_back(gemm);
  s.tables.push_back(quant);
  w.text("data/kernels_gemm.csv", csv);
  w.json("data/kernels.json", {{"files", kd.files}, {"gemm", data}});
  s.figures.push_back(
      {"kernels_gemm",
       "Throughput against cuBLAS BF16 on " + devices.front() + ", per GEMM shape (M × N × K).",
       "Bars: the contract's adds alone (16-wide blocks, 128 × 128 tiles: where those fill the GPU, the ceiling of "
       "any bit-exact GEMM on it), the library's bit-exact GEMM per recipe, and the dequantize + cuBLAS emulation; "
       "1 = cuBLAS BF16. Mean of the recorded runs.",
       // noenhanced: the recipes' names hold '^' and '_' as they are
       "set key noenhanced\n" +
           histogram_script("kernels_gemm", static_cast<int>(columns.size()), "throughput vs cuBLAS BF16")});
  if (!kd.problem.empty()) s.notes_html += "<p class=\"note\">" + html_escape(kd.problem) + "</p>\n";
  return s;
}

std::string now_utc() {
  const std::time_t t = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M UTC", std::gmtime(&t));
  return buf;
}

}  // namespace

void check_output_dir(const std::string& out_dir) {
  std::error_code ec;
  // Never scatter files into an unrelated directory (e.g. a source folder).
  if (fs::is_directory(out_dir, ec) && !fs::is_empty(out_dir, ec) && !fs::exists(fs::path(out_dir) / "report.json")) {
    throw ReportError(fmt::format("'{}' is a non-empty directory that holds no earlier report (no report.json); "
                                  "choose a new or empty directory",
                                  out_dir));
  }
}

ReportSummary write_report(const ReportOptions& o) {
  const auto t0 = Clock::now();
  if (o.out_dir.empty()) throw ReportError("no output directory");
  std::error_code ec;
  // (Checked by the caller before its training sweep wrote into out_dir/training.)
  if (!o.training_fresh) check_output_dir(o.out_dir);
  fs::create_directories(o.out_dir, ec);
  if (ec || !fs::is_directory(o.out_dir)) throw ReportError(fmt::format("cannot create directory '{}'", o.out_dir));
  const Writer w{fs::path(o.out_dir)};
  auto step = [&](const std::string& m) {
    if (o.progress) {
      o.progress(fmt::format("[{:5.1f} s] {}", std::chrono::duration<double>(Clock::now() - t0).count(), m));
    }
  };
  ReportOptions oo = o;
  oo.progress = step;

  ReportSummary summary;
  step("reading recorded results in " + o.results_dir);
  const TrainingData training = read_training(training_dir(o));
  const AreaData area = read_area(o.results_dir);

  FormatsResult formats = formats_section(oo, w);
  Section compounding = compounding_section(oo, w, formats.json, training);
  formats.json["equivalent_command"] =
      fmt::format("nibble quant --input all --formats {} --scale {} --block 1x16 --rht off,16 --rounding rne,sr "
                  "--seed {} --chain {} --chain-width {} --chain-batch {} --json FILE",
                  kFormatsList, kScalesList, o.seed, kChainLayers, kChainWidth, kChainBatch);
  w.json("data/quant.json", formats.json);

  std::vector<RecipeGap> gaps;
  Section train = training_section(oo, w, training, read_study((fs::path(o.results_dir) / "training").string()), gaps);
  Section hw = hardware_section(oo, w, area);
  Section trade = tradeoff_section(w, area, gaps, formats.json["chain"]);
  step("cycles: GEMM sweep and live check on the SystemC model");
  const CycleResults cyc = run_cycle_sweep(o.seed, step);
  Section verif = verification_section(oo, w, cyc);
  Section cycles = cycles_section(w, cyc);
  Section kernels = kernels_section(w, read_kernels(o.results_dir));

  std::vector<Section> sections = {formats.section, compounding, train, hw, trade, verif, cycles, kernels};
  std::vector<std::vector<std::string>> svgs;
  const std::string generated = now_utc();
  nlohmann::json index = {{"command", o.command_line}, {"generated", generated}, {"seed", o.seed}};
  index["sections"] = nlohmann::json::array();
  for (const Section& s : sections) {
    std::vector<std::string> v;
    nlohmann::json js = {{"id", s.id}, {"title", s.title}, {"source", s.source}};
    js["figures"] = nlohmann::json::array();
    js["tables"] = nlohmann::json::array();
    for (const Figure& f : s.figures) {
      step("plotting " + f.id);
      v.push_back(run_gnuplot(f, o.out_dir, o.gnuplot));
      js["figures"].push_back({{"id", f.id}, {"title", f.title}, {"data", f.data_file()},
                               {"svg", "figures/" + f.id + ".svg"}, {"script", "plots/" + f.id + ".gp"}});
      ++summary.figures;
    }
    for (const Table& t : s.tables) {
      js["tables"].push_back({{"id", t.id}, {"rows", t.rows.size()}});
      ++summary.tables;
    }
    svgs.push_back(std::move(v));
    index["sections"].push_back(js);
    summary.notes.push_back(s.title + ": " + s.source);
  }
  index["data_files"] = w.data_files();

  PageMeta meta;
  meta.title = "Nibble co-design report: E2M1, E1M2 and INT4";
  meta.command = o.command_line;
  meta.generated = generated;
  std::string lead = "<p>What does first-class E1M2/INT4 support cost in a 4-bit tensor core, and what does it buy? "
                     "Computed now, on this machine: ";
  std::string rec, absent, now;
  for (const Section& s : sections) {
    const std::string link = "<a href=\"#" + s.id + "\">" + html_escape(s.title.substr(0, s.title.find(':'))) + "</a>";
    if (s.source.rfind("recorded", 0) == 0) {
      rec += (rec.empty() ? "" : ", ") + link;
    } else if (s.source.rfind("absent", 0) == 0) {
      absent += (absent.empty() ? "" : ", ") + link;
    } else {
      now += (now.empty() ? "" : ", ") + link;
    }
  }
  lead += now + ".</p>\n<p>From recorded results (GPU training, Yosys synthesis, GPU kernel runs): " +
          (rec.empty() ? "none" : rec) +
          ". Not available in this run: " + (absent.empty() ? "none" : absent) + ".</p>\n";
  meta.lead_html = lead;
  const std::string html = render_page(meta, sections, svgs);
  w.text("index.html", html);
  summary.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  index["seconds"] = summary.seconds;
  w.json("report.json", index);
  summary.html_path = (fs::path(o.out_dir) / "index.html").string();
  step(fmt::format("wrote {} ({} figures, {} tables)", summary.html_path, summary.figures, summary.tables));
  return summary;
}

}  // namespace nibble::report
