// The SystemC model behind GemmDevice: a GEMM tile sequencer feeding a
// model::nibble_tile from an operand buffer of finite bandwidth and draining C.
//
// Sequencer: output tiles in row-major order (tile (i, j) covers C rows
// i*Rows.., columns j*Cols..), and for each tile the k-blocks in increasing k;
// one beat per k-block. A k-block is step = min(block widths of A and B)
// elements (16 or 32; a 1x32 operand needs lanes = 32); the last may be
// partial; codes beyond K or beyond M/N (edge tiles) are zero padding.
//
// Operand buffer: a beat costs bytes = rows_a * (ceil(count/2) + sb_a)
//   + rows_b * (ceil(count/2) + sb_b), rows_* the real (unpadded) rows of the
// panels, count the real k elements, sb the scale code bytes (1 for E4M3/UE8M0,
// 4 for FP32). The buffer fetches one beat at a time for
// f = ceil(bytes / bandwidth) cycles and offers it in the last of them; the
// next fetch starts once the beat is taken by the channel.
//
// Cycle count with an always-ready drain and no injected stalls, for T tiles
// of nk k-blocks each, latency L, Rows rows, and every beat costing f cycles:
//   f = 1 (compute-bound):   cycles = nk + (T - 1) * max(nk, L + Rows) + L + Rows + 1
//   nk * f >= L + Rows:      cycles = T * nk * f + L + Rows + 1
// (1: the first beat crosses the input channel; L + Rows: the last tile's
// pipeline and its row-per-cycle drain; +1 the output channel). Every cycle is
// either a beat accepted or one stall: cycles = beats + stall_operand +
// stall_output + stall_pipeline.
#pragma once

#include <cstdint>

#include "nibble/model/config.h"
#include "nibble/sim/device.h"

namespace nibble::sim {

// Randomized stalls at the array's boundary (tests): the operand buffer and the
// C drain each skip a cycle with these probabilities. Results must not change.
struct StallConfig {
  double input = 0.0;
  double output = 0.0;
  uint64_t seed = 0;
};

class SystemCDevice : public GemmDevice {
 public:
  explicit SystemCDevice(const model::TileConfig& cfg, StallConfig stalls = {}, ProgressFn progress = {});
  std::string name() const override { return "systemc"; }
  GemmResult run(const QuantizedTensor& a, const QuantizedTensor& b) override;

  // Checks that a and b fit this tile; throws std::invalid_argument naming the problem.
  void check_operands(const QuantizedTensor& a, const QuantizedTensor& b) const;

 private:
  model::TileConfig cfg_;
  StallConfig stalls_;
  ProgressFn progress_;
};

}  // namespace nibble::sim
