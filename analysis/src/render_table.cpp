#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "nibble/analysis/render.h"

namespace nibble::analysis {
namespace {

std::string not_applicable(int width) { return fmt::format("{:>{}}", "-", width); }

// A number in a fixed-width cell. NaN and Inf print as nan and inf: a metric
// that is not finite is a finding, not a blank.
std::string number(double v, int width, int precision, char presentation = 'f') {
  return presentation == 'e' ? fmt::format("{:>{}.{}e}", v, width, precision)
                             : fmt::format("{:>{}.{}f}", v, width, precision);
}

std::string run_label(const QuantConfig& c) {
  return fmt::format("{} {}", name(c.format), c.rht.enabled() ? "rht" + rht_name(c.rht) : "no-rht");
}

}  // namespace

std::string rht_name(const RhtConfig& rht) { return rht.enabled() ? std::to_string(rht.size) : "off"; }

std::string matrix_table(const std::vector<MatrixRow>& rows) {
  size_t input_width = 5;
  for (const MatrixRow& r : rows) input_width = std::max(input_width, r.input.size());
  std::string out = fmt::format("{:<{}}  {:<6} {:<8} {:<5} {:<4} {:<5} {:>8} {:>9} {:>10} {:>8} {:>9} {:>6} {:>6}\n",
                                "input", input_width, "format", "scale", "block", "rht", "round", "SQNR dB",
                                "dSQNR RHT", "NMSE", "alpha", "|q|/|x|-1", "H bits", "B_eff");
  for (const MatrixRow& r : rows) {
    const QuantConfig& c = r.config;
    const Measurement& m = r.measurement;
    out += fmt::format("{:<{}}  {:<6} {:<8} {:<5} {:<4} {:<5} {} {} {} {} {} {} {}\n", r.input, input_width,
                       name(c.format), name(c.scale), name(c.block), rht_name(c.rht), name(c.rounding),
                       number(m.metrics.sqnr_db, 8, 3),
                       c.rht.enabled() ? number(r.delta_sqnr_rht, 9, 3) : not_applicable(9),
                       number(m.metrics.nmse, 10, 3, 'e'), number(m.metrics.alpha, 8, 5),
                       number(m.metrics.rel_mag_error, 9, 5), number(m.code_entropy_bits, 6, 3), number(m.b_eff, 6, 3));
  }
  return out;
}

std::string level_bias_table(Format f, const std::vector<const MatrixRow*>& measured) {
  std::string out = fmt::format("{:>7} {:>15} {:>7} {:>7} {:>10}", "level", "bucket", "ell", "r", "predicted");
  for (const MatrixRow* row : measured) {
    const std::string label = row->config.rht.enabled() ? "rht" + rht_name(row->config.rht) : "no-rht";
    out += fmt::format(" {:>20}", "measured " + label);
  }
  out += '\n';
  const std::vector<GridLevelBias> predicted = grid_level_bias(f);
  for (size_t k = 0; k < predicted.size(); ++k) {
    const GridLevelBias& g = predicted[k];
    const std::string bucket = fmt::format("[{:.4g}, {:.4g}]", (g.below + g.level) / 2, (g.level + g.above) / 2);
    out += fmt::format("{:>7.4g} {:>15} {:>7.4g} {:>7.4g} {:>+10.4f}", g.level, bucket, g.ell, g.r, g.bias);
    for (const MatrixRow* row : measured) {
      const MeasuredLevelBias& m = row->measurement.level_bias[k];
      // A level no element rounded to has no mean.
      const std::string bias = m.count == 0 ? std::string("-") : fmt::format("{:+.4f}", m.bias);
      out += fmt::format(" {:>20}", fmt::format("{} (n={})", bias, m.count));
    }
    out += '\n';
  }
  return out;
}

std::string chain_table(const ChainShape& shape, const std::vector<ChainRun>& runs) {
  std::string header = fmt::format("{:>5}", "depth");
  for (const ChainRun& run : runs) header += fmt::format("  {:>12}", run_label(run.config));
  std::string eta = "eta_l = <y_q, y_ref> / ||y_ref||^2\n" + header + '\n';
  std::string cosine = "cosine(y_q, y_ref)\n" + header + '\n';
  for (int l = 0; l < shape.layers; ++l) {
    eta += fmt::format("{:>5}", l + 1);
    cosine += fmt::format("{:>5}", l + 1);
    for (const ChainRun& run : runs) {
      const ChainDepth& d = run.depths[static_cast<size_t>(l)];
      eta += fmt::format("  {:>12.5f}", d.eta);
      cosine += fmt::format("  {:>12.5f}", d.cosine);
    }
    eta += '\n';
    cosine += '\n';
  }
  // The geometric-mean gain per layer: flat at 1 without bias, below 1 when
  // every layer shrinks the output by the same factor.
  eta += fmt::format("{:>5}", "gain");
  for (const ChainRun& run : runs) {
    eta += fmt::format("  {:>12.5f}", std::pow(run.depths.back().eta, 1.0 / static_cast<double>(shape.layers)));
  }
  eta += "   (eta_L^(1/L), per layer)\n";
  return eta + '\n' + cosine;
}

}  // namespace nibble::analysis
