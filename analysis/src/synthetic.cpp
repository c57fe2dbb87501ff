#include "nibble/analysis/synthetic.h"

#include <Random123/boxmuller.hpp>
#include <Random123/philox.h>
#include <Random123/uniform.hpp>

#include <cmath>
#include <stdexcept>

namespace nibble::analysis {
namespace {

using Philox = r123::Philox4x32_R<10>;

// The outlier column's draw uses a domain word no distribution uses.
constexpr uint32_t kOutlierColumnDomain = kSyntheticDomain + 0xFFu;

Philox::ctr_type draw(uint64_t seed, uint64_t index, uint32_t stream, uint32_t domain) {
  const Philox::key_type key = {{static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32)}};
  const Philox::ctr_type ctr = {{static_cast<uint32_t>(index), static_cast<uint32_t>(index >> 32), stream, domain}};
  return Philox()(ctr, key);
}

float gaussian(const Philox::ctr_type& w) { return r123::boxmuller(w[0], w[1]).x; }

// u01<double> of a 32-bit word lies in (0, 1) and never equals 1/2, so the
// logarithm's argument is positive: the largest |x| is ln(2^32)/sqrt(2).
float laplace(const Philox::ctr_type& w) {
  const double u = r123::u01<double>(w[0]) - 0.5;
  const double magnitude = -std::log1p(-2.0 * std::fabs(u)) / std::sqrt(2.0);
  return static_cast<float>(u < 0.0 ? -magnitude : magnitude);
}

float student_t3(const Philox::ctr_type& w) {
  const r123::float2 a = r123::boxmuller(w[0], w[1]);
  const r123::float2 b = r123::boxmuller(w[2], w[3]);
  const double chi2 = static_cast<double>(a.y) * a.y + static_cast<double>(b.x) * b.x + static_cast<double>(b.y) * b.y;
  return static_cast<float>(static_cast<double>(a.x) / std::sqrt(chi2 / 3.0) / std::sqrt(3.0));
}

float uniform(const Philox::ctr_type& w) {
  return static_cast<float>(std::sqrt(3.0) * (2.0 * static_cast<double>(r123::u01<float>(w[0])) - 1.0));
}

}  // namespace

std::optional<Distribution> parse_distribution(std::string_view n) {
  for (Distribution d : kAllDistributions) {
    if (name(d) == n) return d;
  }
  return std::nullopt;
}

std::string_view name(Distribution d) {
  switch (d) {
    case Distribution::kGaussian: return "gaussian";
    case Distribution::kLaplace: return "laplace";
    case Distribution::kStudentT: return "student-t";
    case Distribution::kUniform: return "uniform";
    case Distribution::kOutlier: return "outlier";
  }
  return "?";
}

int64_t outlier_column(uint64_t seed, int64_t cols) {
  if (cols <= 0) throw std::invalid_argument("outlier_column: cols must be positive");
  const uint64_t word = draw(seed, 0, 0, kOutlierColumnDomain)[0];
  return static_cast<int64_t>(word % static_cast<uint64_t>(cols));
}

std::vector<float> synthetic_tensor(Distribution d, int64_t rows, int64_t cols, uint64_t seed, uint32_t stream) {
  if (rows <= 0 || cols <= 0) throw std::invalid_argument("synthetic_tensor: rows and cols must be positive");
  // The outlier tensor is the gaussian one with a hot column, so the two
  // differ only where the outlier is.
  const Distribution base = d == Distribution::kOutlier ? Distribution::kGaussian : d;
  const uint32_t domain = kSyntheticDomain + static_cast<uint32_t>(base);
  const int64_t hot = d == Distribution::kOutlier ? outlier_column(seed, cols) : -1;
  std::vector<float> x(static_cast<size_t>(rows * cols));
  for (size_t i = 0; i < x.size(); ++i) {
    const Philox::ctr_type w = draw(seed, i, stream, domain);
    switch (d) {
      case Distribution::kGaussian: x[i] = gaussian(w); break;
      case Distribution::kLaplace: x[i] = laplace(w); break;
      case Distribution::kStudentT: x[i] = student_t3(w); break;
      case Distribution::kUniform: x[i] = uniform(w); break;
      case Distribution::kOutlier: {
        const bool in_hot_column = static_cast<int64_t>(i % static_cast<size_t>(cols)) == hot;
        x[i] = in_hot_column ? gaussian(w) * kOutlierGain : gaussian(w);
        break;
      }
    }
  }
  return x;
}

}  // namespace nibble::analysis
