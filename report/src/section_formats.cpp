// Section 1: the grids to scale, the per-level bias and the `nibble quant` matrix on
// the synthetic inputs, computed now with the golden model.
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

namespace {
struct FormatsResult {
  Section section;
  std::vector<analysis::MatrixRow> rows;
  nlohmann::json json;
};
}  // namespace

Section formats_section(ReportContext& ctx) {
  const ReportOptions& o = ctx.options;
  const Writer& w = ctx.writer;
  FormatsResult r;
  Section& s = r.section;
  s.id = "formats";
  s.title = prose("formats", "title");
  s.source = prose("formats", "source");

  // Grids to scale: every code's value, normalized to the format's largest magnitude.
  io::CsvTable grids({"format_index", "format", "code", "value", "normalized"});
  std::string ytics;
  int fi = 0;
  for (Format f : kAllFormats) {
    const double top = max_value(f);
    for (int code = 0; code < 16; ++code) {
      const double v = decode_value(f, static_cast<uint8_t>(code));
      grids.add({fi, name(f), code, v, v / top});
    }
    ytics += fmt::format("{}'{}' {}", fi ? ", " : "", name(f), fi);
    ++fi;
  }
  w.text("data/grids.csv", grids.text());
  s.figures.push_back(
      {"grids", prose("formats", "grids_title"), prose("formats", "grids_caption"),
       // One short vertical bar per code, each format on its own row (impulses from y = 0 would merge rows).
       fmt::format("set ytics ({})\nset yrange [-0.6:{}.6]\nset xrange [-1.2:1.2]\nset xlabel 'value / largest "
                   "magnitude'\nset key off\nplot for [i=0:{}] 'data/grids.csv' skip 1 using ($1==i ? $5 : NaN):($1-0.25):"
                   "(0):(0.5) with vectors nohead lw 2 lc i+1\n",
                   ytics, kAllFormats.size() - 1, kAllFormats.size() - 1)});

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
  io::CsvTable pred({"format_index", "format", "level", "normalized_level", "bias", "bias_over_max"});
  io::CsvTable meas({"format_index", "format", "rht", "level", "normalized_level", "count", "bias", "bias_over_max"});
  Table bias_table{"level_bias", prose("formats", "level_bias_table_caption"),
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
            meas.add({fi, name(f), rht, l.level, l.level / top, l.count, l.bias, l.bias / top});
          }
          if (rht == 0) m = &row;
        }
      }
    }
    for (const GridLevelBias& g : grid_level_bias(f)) {
      pred.add({fi, name(f), g.level, g.level / top, g.bias, g.bias / top});
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
  w.text("data/level_bias.csv", pred.text());
  w.text("data/level_bias_measured.csv", meas.text());
  s.figures.push_back(
      {"level_bias", prose("formats", "level_bias_title"), prose("formats", "level_bias_caption"),
       fmt::format("set xlabel 'level / largest magnitude'\nset ylabel 'bias / largest magnitude'\n"
                   "plot for [i=0:{0}] 'data/level_bias.csv' skip 1 using ($1==i ? $4 : NaN):6 with linespoints lw 2 "
                   "lc i+1 pt 0 title word('{1}', i+1).' predicted', "
                   "for [i=0:{0}] 'data/level_bias_measured.csv' skip 1 using (($1==i && $3==0) ? $5 : NaN):8 with "
                   "points pt 7 lc i+1 title word('{1}', i+1).' measured', "
                   "for [i=0:{0}] 'data/level_bias_measured.csv' skip 1 using (($1==i && $3==16) ? $5 : NaN):8 with "
                   "points pt 6 lc i+1 title word('{1}', i+1).' measured, RHT16'\n",
                   kAllFormats.size() - 1, format_names(" "))});
  s.tables.push_back(bias_table);

  // alpha and SQNR by input: nvfp4 1x16 RNE, each format with and without RHT.
  std::vector<std::string> columns = {"input"};
  for (Format f : kAllFormats) {
    for (int rht : {0, 16}) columns.push_back(label(f, rht));
  }
  io::CsvTable alpha(columns), sqnr(columns);
  for (analysis::Distribution d : analysis::kAllDistributions) {
    std::vector<io::CsvCell> arow = {analysis::name(d)}, srow = {analysis::name(d)};
    for (Format f : kAllFormats) {
      for (int rht : {0, 16}) {
        for (const analysis::MatrixRow& row : r.rows) {
          const QuantConfig& c = row.config;
          if (row.input == analysis::name(d) && c.format == f && c.scale == ScaleMode::kNVFP4 &&
              c.rounding == Rounding::kNearestEven && c.rht.size == rht) {
            arow.emplace_back(row.measurement.metrics.alpha);
            srow.emplace_back(row.measurement.metrics.sqnr_db);
          }
        }
      }
    }
    alpha.add(arow);
    sqnr.add(srow);
  }
  w.text("data/alpha_by_input.csv", alpha.text());
  w.text("data/sqnr_by_input.csv", sqnr.text());
  s.figures.push_back({"alpha_by_input", prose("formats", "alpha_title"), prose("formats", "alpha_caption"),
                       histogram_script("alpha_by_input", 6, "alpha")});
  s.figures.back().script = "set yrange [0.985:1.005]\n" + s.figures.back().script;
  s.figures.push_back({"sqnr_by_input", prose("formats", "sqnr_title"), prose("formats", "sqnr_caption"),
                       histogram_script("sqnr_by_input", 6, "SQNR (dB)")});

  // Relative magnitude error, RNE against SR: nvfp4 1x16, no RHT.
  std::vector<std::string> mag_columns = {"input"};
  for (Format f : kAllFormats) {
    mag_columns.push_back(fmt::format("{} rne", name(f)));
    mag_columns.push_back(fmt::format("{} sr", name(f)));
  }
  io::CsvTable mag(mag_columns);
  for (analysis::Distribution d : analysis::kAllDistributions) {
    std::vector<io::CsvCell> mrow = {analysis::name(d)};
    for (Format f : kAllFormats) {
      for (Rounding rd : {Rounding::kNearestEven, Rounding::kStochastic}) {
        for (const analysis::MatrixRow& row : r.rows) {
          const QuantConfig& c = row.config;
          if (row.input == analysis::name(d) && c.format == f && c.scale == ScaleMode::kNVFP4 && c.rounding == rd &&
              c.rht.size == 0) {
            mrow.emplace_back(100.0 * row.measurement.metrics.rel_mag_error);
          }
        }
      }
    }
    mag.add(mrow);
  }
  w.text("data/mag_error.csv", mag.text());
  s.figures.push_back({"mag_error", prose("formats", "mag_error_title"), prose("formats", "mag_error_caption"),
                       histogram_script("mag_error", 6, "relative magnitude error (%)")});

  Table mt{"quant_matrix",
           prose("formats", "quant_matrix_caption",
                 {{"rows", std::to_string(r.rows.size())},
                  {"inputs", std::to_string(analysis::kAllDistributions.size())},
                  {"tensor_rows", std::to_string(kRows)},
                  {"tensor_cols", std::to_string(kCols)},
                  {"seed", std::to_string(o.seed)},
                  {"scales", kScalesList}}),
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
  ctx.quant = std::move(r.json);
  return std::move(r.section);
}

std::string equivalent_quant_command(const ReportOptions& o) {
  return fmt::format("nibble quant --input all --formats {} --scale {} --block 1x16 --rht off,16 --rounding rne,sr "
                     "--seed {} --chain {} --chain-width {} --chain-batch {} --json FILE",
                     format_names(","), kScalesList, o.seed, kChainLayers, kChainWidth, kChainBatch);
}

}  // namespace nibble::report::detail
