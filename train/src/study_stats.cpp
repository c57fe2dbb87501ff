#include "nibble/train/study_stats.h"

#include <boost/math/distributions/students_t.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <stdexcept>

namespace nibble::train {

double t_quantile(double level, double df) {
  if (!(level > 0 && level < 1) || !(df > 0)) {
    throw std::invalid_argument(fmt::format("t_quantile: level {} and df {} out of range", level, df));
  }
  const boost::math::students_t dist(df);
  return boost::math::quantile(dist, 0.5 + level / 2);
}

MeanInterval t_interval(const std::vector<double>& x, double level) {
  MeanInterval r;
  r.n = x.size();
  if (x.empty()) {
    r.mean = r.sd = r.half_width = r.lo = r.hi = std::numeric_limits<double>::quiet_NaN();
    return r;
  }
  double sum = 0;
  for (double v : x) sum += v;
  r.mean = sum / static_cast<double>(x.size());
  if (x.size() < 2) {
    r.sd = r.half_width = r.lo = r.hi = std::numeric_limits<double>::quiet_NaN();
    return r;
  }
  double ss = 0;
  for (double v : x) ss += (v - r.mean) * (v - r.mean);
  r.sd = std::sqrt(ss / static_cast<double>(x.size() - 1));
  r.half_width = t_quantile(level, static_cast<double>(x.size() - 1)) * r.sd / std::sqrt(static_cast<double>(x.size()));
  r.lo = r.mean - r.half_width;
  r.hi = r.mean + r.half_width;
  return r;
}

TTest paired_t_test(const std::vector<double>& d) {
  if (d.size() < 2) throw std::invalid_argument("paired_t_test: needs at least 2 differences");
  const MeanInterval m = t_interval(d, 0.95);
  TTest r;
  r.df = static_cast<double>(d.size() - 1);
  if (m.sd == 0) {
    r.t = m.mean == 0 ? 0 : std::copysign(std::numeric_limits<double>::infinity(), m.mean);
    r.p = m.mean == 0 ? 1 : 0;
    return r;
  }
  r.t = m.mean / (m.sd / std::sqrt(static_cast<double>(d.size())));
  const boost::math::students_t dist(r.df);
  r.p = 2 * boost::math::cdf(boost::math::complement(dist, std::fabs(r.t)));
  return r;
}

BootstrapInterval bootstrap_interval(const std::vector<double>& x, double level, int resamples, uint64_t seed) {
  if (x.empty() || resamples < 2 || !(level > 0 && level < 1)) {
    throw std::invalid_argument("bootstrap_interval: needs values, at least 2 resamples and a level in (0, 1)");
  }
  // mt19937_64's output is fixed by the standard; the index is taken from its top 32
  // bits by a multiply (not uniform_int_distribution, whose algorithm is the library's).
  if (x.size() > UINT32_MAX) throw std::invalid_argument("bootstrap_interval: too many values");
  std::mt19937_64 gen(seed);
  const uint64_t n = x.size();
  std::vector<double> means(static_cast<size_t>(resamples));
  for (double& mean : means) {
    double sum = 0;
    for (size_t i = 0; i < x.size(); ++i) sum += x[static_cast<size_t>(((gen() >> 32) * n) >> 32)];
    mean = sum / static_cast<double>(x.size());
  }
  std::sort(means.begin(), means.end());
  // The empirical quantile at q: the order statistic ceil(q * R) (1-based), clamped.
  auto at = [&](double q) {
    const double k = std::ceil(q * static_cast<double>(resamples));
    const size_t i = static_cast<size_t>(std::clamp(k, 1.0, static_cast<double>(resamples))) - 1;
    return means[i];
  };
  return {at((1 - level) / 2), at((1 + level) / 2), resamples, seed};
}

int seeds_needed(double sd, double target, double level, int min_n, int max_n) {
  if (!(target > 0) || !std::isfinite(sd) || sd < 0) {
    throw std::invalid_argument(fmt::format("seeds_needed: sd {} and target {} out of range", sd, target));
  }
  for (int n = std::max(2, min_n); n <= max_n; ++n) {
    if (t_quantile(level, n - 1) * sd / std::sqrt(static_cast<double>(n)) <= target) return n;
  }
  return max_n + 1;
}

double pearson(const std::vector<double>& x, const std::vector<double>& y) {
  const size_t n = std::min(x.size(), y.size());
  if (n < 3) return std::numeric_limits<double>::quiet_NaN();
  double mx = 0, my = 0;
  for (size_t i = 0; i < n; ++i) {
    mx += x[i];
    my += y[i];
  }
  mx /= static_cast<double>(n);
  my /= static_cast<double>(n);
  double sxy = 0, sxx = 0, syy = 0;
  for (size_t i = 0; i < n; ++i) {
    sxy += (x[i] - mx) * (y[i] - my);
    sxx += (x[i] - mx) * (x[i] - mx);
    syy += (y[i] - my) * (y[i] - my);
  }
  if (sxx == 0 || syy == 0) return std::numeric_limits<double>::quiet_NaN();
  return sxy / std::sqrt(sxx * syy);
}

std::string verdict(const MeanInterval& d, const std::string& a, const std::string& b) {
  if (!std::isfinite(d.lo) || !std::isfinite(d.hi)) return "too few paired seeds for an interval";
  if (d.hi < 0) return a + " better";
  if (d.lo > 0) return b + " better";
  return fmt::format("no difference larger than {:.3f} pp", 100 * std::max(std::fabs(d.lo), std::fabs(d.hi)));
}

}  // namespace nibble::train
