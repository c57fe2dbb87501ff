// The training study's statistics (torch-free, tested in CI): Student-t
// confidence intervals and the paired t-test (Boost.Math's students_t), a seeded
// percentile bootstrap of the mean, and the number of seeds a target interval
// needs.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace nibble::train {

// The two-sided Student-t quantile: t such that P(|T| <= t) = level, for `df` degrees of freedom.
double t_quantile(double level, double df);

// Mean and a two-sided `level` Student-t interval of the mean (needs n >= 2 for an interval;
// with n < 2, half_width is NaN).
struct MeanInterval {
  size_t n = 0;
  double mean = 0;
  double sd = 0;          // sample standard deviation
  double half_width = 0;  // t_{level, n-1} * sd / sqrt(n)
  double lo = 0, hi = 0;
};
MeanInterval t_interval(const std::vector<double>& x, double level);

// The paired t-test of H0: mean(d) = 0 on the differences d (n >= 2): t and its two-sided
// p-value with n - 1 degrees of freedom. Zero spread gives p = 0 (mean != 0) or 1 (mean = 0).
struct TTest {
  double t = 0;
  double df = 0;
  double p = 1;
};
TTest paired_t_test(const std::vector<double>& d);

// The percentile bootstrap interval of the mean: `resamples` resamples with replacement,
// drawn from a generator seeded with `seed` (the same seed gives the same interval on
// every machine), and their (1-level)/2 and (1+level)/2 quantiles.
struct BootstrapInterval {
  double lo = 0, hi = 0;
  int resamples = 0;
  uint64_t seed = 0;
};
BootstrapInterval bootstrap_interval(const std::vector<double>& x, double level, int resamples, uint64_t seed);

// The smallest n >= min_n whose `level` t interval, with standard deviation sd, has a
// half-width <= target (at most max_n; returns max_n + 1 where even that is not enough).
int seeds_needed(double sd, double target, double level, int min_n, int max_n = 10000);

// Pearson's correlation of x and y (NaN for fewer than 3 pairs or no spread).
double pearson(const std::vector<double>& x, const std::vector<double>& y);

// The verdict on a paired difference d = g_a - g_b from its interval: "<a> better" where the
// whole interval lies below 0 (a's gap is smaller), "<b> better" where it lies above, and
// otherwise "no difference larger than X pp", X = the larger of |lo| and |hi| in
// percentage points of the gap.
std::string verdict(const MeanInterval& d, const std::string& a, const std::string& b);

}  // namespace nibble::train
