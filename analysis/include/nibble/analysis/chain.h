// The compounding chain: how quantization bias accumulates through depth.
//
// A batch X [batch, width] passes through `layers` random linear layers
// W_l [width, width] (output x input), W_l[o, i] ~ N(0, 1/width), with no
// nonlinearity: Y_l = Y_{l-1} W_l^T, Y_0 = X. The quantized chain computes
// each layer with golden nibble::gemm on both operands quantized -- Y_{l-1}
// along width (its contraction axis) and W_l along its input dimension -- and
// feeds the binary32 result to the next layer. The reference chain runs the
// same (binary32-valued) X and W_l in double precision, unquantized.
//
// Per depth l it reports the compounded gain eta_l = <y_q, y_ref> / ||y_ref||^2
// and the cosine <y_q, y_ref> / (||y_q|| ||y_ref||) over the whole [batch, width]
// output. A format whose rounding shrinks magnitudes by a factor a per operand
// gives eta_l ~ a^(2l): the bias multiplies, where random error only lowers the
// cosine.
#pragma once

#include <cstdint>
#include <vector>

#include "nibble/quantize.h"

namespace nibble::analysis {

struct ChainShape {
  int layers = 8;
  int64_t width = 256;  // d
  int64_t batch = 64;   // B
};

// The chain's data, shared by every quantizer configuration run on it. X is
// the gaussian synthetic tensor of `seed`, stream 0; W_l that of stream l + 1,
// scaled by 1/sqrt(width) in binary32.
struct ChainProblem {
  ChainShape shape;
  std::vector<float> input;                      // X, [batch, width]
  std::vector<std::vector<float>> weights;       // W_l, [width, width] each
  std::vector<std::vector<double>> reference;    // Y_l in double, [batch, width] each, l = 1..layers
};

// Throws std::invalid_argument unless layers, width and batch are positive and
// within nibble/limits.h: layers <= kMaxChainLayers, the weights and activations
// layers x width x (width + batch) <= kMaxWorkElements, the multiply-accumulates
// layers x batch x width^2 <= kMaxMacs.
ChainProblem make_chain_problem(const ChainShape& shape, uint64_t seed);

struct ChainDepth {
  int depth;  // 1-based layer index
  double eta;
  double cosine;
};

// Runs the quantized chain with cfg for both operands of every layer (cfg.seed
// keys the RHT signs, shared by both operands as gemm requires, and the SR
// bits; layer l's activations use SR stream 2l and its weights stream 2l + 1).
// Throws std::invalid_argument if cfg's RHT size does not divide width.
std::vector<ChainDepth> run_chain(const ChainProblem& problem, const QuantConfig& cfg);

// One configuration's chain, as the reports list it.
struct ChainRun {
  QuantConfig config;
  std::vector<ChainDepth> depths;
};

}  // namespace nibble::analysis
