#include "nibble/stats.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace nibble {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

// The four sums every energy metric is a ratio of.
struct ErrorSums {
  double signal = 0.0;     // sum x^2
  double error = 0.0;      // sum (x - q)^2
  double cross = 0.0;      // sum q x
  double abs_x = 0.0;      // sum |x|
  double abs_q = 0.0;      // sum |q|
};

ErrorSums error_sums(const float* x, const float* q, size_t n) {
  ErrorSums s;
  for (size_t i = 0; i < n; ++i) {
    const double xi = x[i];
    const double qi = q[i];
    s.signal += xi * xi;
    s.error += (xi - qi) * (xi - qi);
    s.cross += qi * xi;
    s.abs_x += std::fabs(xi);
    s.abs_q += std::fabs(qi);
  }
  return s;
}

// An error of exactly zero is a perfect reconstruction whatever the signal;
// testing it first keeps 0/0 out of the two ratios. NaN fails both tests and
// falls through to the division, which keeps it.
double sqnr_from(const ErrorSums& s) {
  if (s.error == 0.0) return kInf;
  return 10.0 * std::log10(s.signal / s.error);
}
double nmse_from(const ErrorSums& s) {
  if (s.error == 0.0) return 0.0;
  return s.error / s.signal;
}
double alpha_from(const ErrorSums& s) { return s.signal == 0.0 ? kNaN : s.cross / s.signal; }
double rel_mag_from(const ErrorSums& s) { return s.abs_x == 0.0 ? kNaN : (s.abs_q - s.abs_x) / s.abs_x; }

double level_value(Format f, uint32_t units) { return std::ldexp(static_cast<double>(units), lsb_exp(f)); }

}  // namespace

ErrorMetrics error_metrics(const float* x, const float* q, size_t n) {
  const ErrorSums s = error_sums(x, q, n);
  return {sqnr_from(s), nmse_from(s), alpha_from(s), rel_mag_from(s)};
}

double sqnr_db(const float* x, const float* q, size_t n) { return sqnr_from(error_sums(x, q, n)); }
double nmse(const float* x, const float* q, size_t n) { return nmse_from(error_sums(x, q, n)); }
double attenuation(const float* x, const float* q, size_t n) { return alpha_from(error_sums(x, q, n)); }
double relative_magnitude_error(const float* x, const float* q, size_t n) {
  return rel_mag_from(error_sums(x, q, n));
}

std::vector<double> positive_levels(Format f) {
  std::vector<uint32_t> units;
  for (uint32_t code = 0; code < 16; ++code) {
    const Decoded d = decode(f, static_cast<uint8_t>(code));
    if (d.units > 0 && d.units <= max_units(f)) units.push_back(d.units);
  }
  std::sort(units.begin(), units.end());
  units.erase(std::unique(units.begin(), units.end()), units.end());
  std::vector<double> levels;
  levels.reserve(units.size());
  for (uint32_t u : units) levels.push_back(level_value(f, u));
  return levels;
}

int emitted_level_count(Format f) { return 2 * static_cast<int>(positive_levels(f).size()) + 1; }

double code_entropy_bits(const uint8_t* codes, size_t n) {
  if (n == 0) return 0.0;
  uint64_t histogram[16] = {};
  for (size_t i = 0; i < n; ++i) ++histogram[codes[i] & 0xFu];
  double h = 0.0;
  for (uint64_t count : histogram) {
    if (count == 0) continue;
    const double p = static_cast<double>(count) / static_cast<double>(n);
    h -= p * std::log2(p);
  }
  return h;
}

double effective_level_fraction(double entropy_bits, int levels) {
  return std::exp2(entropy_bits) / static_cast<double>(levels);
}

std::vector<GridLevelBias> grid_level_bias(Format f) {
  const std::vector<double> levels = positive_levels(f);
  std::vector<GridLevelBias> out;
  out.reserve(levels.size());
  for (size_t i = 0; i < levels.size(); ++i) {
    const double g = levels[i];
    const double p = i == 0 ? 0.0 : levels[i - 1];
    const double n = i + 1 == levels.size() ? g : levels[i + 1];
    const double ell = (g - p) / 2.0;
    const double r = (n - g) / 2.0;
    out.push_back({g, p, n, ell, r, (ell - r) / 2.0});
  }
  return out;
}

std::vector<MeasuredLevelBias> measured_level_bias(Format f, const uint8_t* codes, const double* x_scaled,
                                                   size_t n) {
  const std::vector<double> levels = positive_levels(f);
  std::vector<double> sums(levels.size(), 0.0);
  std::vector<uint64_t> counts(levels.size(), 0);
  for (size_t i = 0; i < n; ++i) {
    const Decoded d = decode(f, codes[i]);
    if (d.units == 0) continue;
    const double g = level_value(f, d.units);
    // A decodable magnitude outside the emitted set (INT4's -8) has no level to
    // be charged to; a quantizer never produces it.
    const auto it = std::lower_bound(levels.begin(), levels.end(), g);
    if (it == levels.end() || *it != g) continue;
    const size_t k = static_cast<size_t>(it - levels.begin());
    sums[k] += g - std::fabs(x_scaled[i]);
    ++counts[k];
  }
  std::vector<MeasuredLevelBias> out;
  out.reserve(levels.size());
  for (size_t k = 0; k < levels.size(); ++k) {
    const double bias = counts[k] == 0 ? kNaN : sums[k] / static_cast<double>(counts[k]);
    out.push_back({levels[k], counts[k], bias});
  }
  return out;
}

}  // namespace nibble
