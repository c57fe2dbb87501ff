#include "nibble/analysis/chain.h"

#include <Eigen/Dense>

#include <cmath>
#include <optional>
#include <stdexcept>
#include <string>

#include "nibble/analysis/synthetic.h"
#include "nibble/dot.h"
#include "nibble/limits.h"

namespace nibble::analysis {
namespace {

using RowMatrixD = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

RowMatrixD to_double(const std::vector<float>& x, int64_t rows, int64_t cols) {
  return Eigen::Map<const Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>>(x.data(), rows, cols)
      .cast<double>();
}

ChainDepth gain_and_cosine(int depth, const std::vector<float>& y_q, const std::vector<double>& y_ref) {
  double cross = 0.0, qq = 0.0, rr = 0.0;
  for (size_t i = 0; i < y_ref.size(); ++i) {
    const double q = y_q[i];
    cross += q * y_ref[i];
    qq += q * q;
    rr += y_ref[i] * y_ref[i];
  }
  return {depth, cross / rr, cross / std::sqrt(qq * rr)};
}

}  // namespace

ChainProblem make_chain_problem(const ChainShape& shape, uint64_t seed) {
  if (shape.layers <= 0 || shape.width <= 0 || shape.batch <= 0) {
    throw std::invalid_argument("chain: layers, width and batch must be positive");
  }
  if (shape.layers > limits::kMaxChainLayers) {
    throw std::invalid_argument("chain: " + std::to_string(shape.layers) + " layers is more than the limit of " +
                                std::to_string(limits::kMaxChainLayers));
  }
  const std::optional<int64_t> stored = limits::checked_add(shape.width, shape.batch);
  if (!stored || !limits::checked_product({shape.layers, shape.width, *stored}, limits::kMaxWorkElements)) {
    throw std::invalid_argument("chain: the weights and activations (layers x width x (width + batch)) exceed the "
                                "limit of 2^28 elements");
  }
  if (!limits::checked_product({shape.layers, shape.batch, shape.width, shape.width}, limits::kMaxMacs)) {
    throw std::invalid_argument("chain: the multiply-accumulates (layers x batch x width^2) exceed the limit of 2^40");
  }
  ChainProblem p;
  p.shape = shape;
  p.input = synthetic_tensor(Distribution::kGaussian, shape.batch, shape.width, seed, 0);
  const float w_scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(shape.width)));
  RowMatrixD y = to_double(p.input, shape.batch, shape.width);
  for (int l = 0; l < shape.layers; ++l) {
    std::vector<float> w =
        synthetic_tensor(Distribution::kGaussian, shape.width, shape.width, seed, static_cast<uint32_t>(l + 1));
    for (float& v : w) v *= w_scale;
    y = y * to_double(w, shape.width, shape.width).transpose();  // Eigen evaluates products into a temporary
    p.reference.emplace_back(y.data(), y.data() + y.size());
    p.weights.push_back(std::move(w));
  }
  return p;
}

std::vector<ChainDepth> run_chain(const ChainProblem& problem, const QuantConfig& cfg) {
  const ChainShape& s = problem.shape;
  std::vector<ChainDepth> out;
  std::vector<float> y = problem.input;
  for (int l = 0; l < s.layers; ++l) {
    QuantConfig act = cfg;
    act.stream = static_cast<uint32_t>(2 * l);
    QuantConfig wgt = cfg;
    wgt.stream = static_cast<uint32_t>(2 * l + 1);
    const QuantizedTensor qa = quantize(y.data(), s.batch, s.width, act);
    const QuantizedTensor qw = quantize(problem.weights[static_cast<size_t>(l)].data(), s.width, s.width, wgt);
    y = gemm(qa, qw);
    out.push_back(gain_and_cosine(l + 1, y, problem.reference[static_cast<size_t>(l)]));
  }
  return out;
}

}  // namespace nibble::analysis
