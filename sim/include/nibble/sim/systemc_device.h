// The SystemC model behind GemmDevice: model::nibble_tile driven through its
// valid/ready ports by the tile testbench (sim/src/tile_testbench.h), the same
// testbench that drives the Verilated RTL (rtl_device.h), so a stimulus gives
// identical C and identical cycle counts on both.
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
// f = ceil(bytes / bandwidth) cycles and raises in_valid in the last of them;
// the next fetch starts in the cycle after the beat is taken.
//
// Cycles are counted at the tile's ports from the first cycle after reset to the
// cycle the last C row is taken (handshakes are combinational, as in the RTL).
// With out_ready always high and no injected bubbles, for T tiles of nk k-blocks
// each, latency L, Rows rows, and every beat costing f cycles:
//   f = 1 (compute-bound):   cycles = nk + (T - 1) * max(nk, L + Rows) + L + Rows - 1
//   nk * f >= L + Rows:      cycles = T * nk * f + L + Rows - 1
// Every cycle is either a beat accepted or one stall: cycles = beats +
// stall_operand + stall_output + stall_pipeline.
#pragma once

#include <cstdint>
#include <string>

#include "nibble/model/config.h"
#include "nibble/sim/device.h"

namespace nibble::sim {

// Randomized stalls at the array's boundary: before offering each beat the
// operand buffer waits a further cycle with probability `input` (repeatedly),
// and out_ready is low in each cycle with probability `output`. Seeded; results
// must not change, only timing.
struct StallConfig {
  double input = 0.0;
  double output = 0.0;
  uint64_t seed = 0;
};
// Throws std::invalid_argument (naming `backend`) unless both probabilities are in [0, 1).
void validate(const StallConfig& s, const char* backend);

class SystemCDevice : public GemmDevice {
 public:
  // vcd_path: if set, each run writes a VCD of the tile's handshake signals there.
  explicit SystemCDevice(const model::TileConfig& cfg, StallConfig stalls = {}, ProgressFn progress = {},
                         std::string vcd_path = {});
  std::string name() const override { return "systemc"; }
  GemmResult run(const QuantizedTensor& a, const QuantizedTensor& b) override;

  // Checks that a and b fit this tile; throws std::invalid_argument naming the problem.
  void check_operands(const QuantizedTensor& a, const QuantizedTensor& b) const;

 private:
  model::TileConfig cfg_;
  StallConfig stalls_;
  ProgressFn progress_;
  std::string vcd_path_;
};

}  // namespace nibble::sim
