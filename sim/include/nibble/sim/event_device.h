// The event-skipping model of the tile and its GEMM sequencer behind GemmDevice:
// the same sequencer, operand buffer, seeded bubbles and stalls and cycle
// accounting as the tile testbench around the SystemC model and the Verilated
// RTL (systemc_device.h), computed per output tile instead of per clock, with
// the values of C from bulk_gemm (bulk_gemm.h) or not at all. Cycle-exact with
// both on every cycle and stall count (tests/model/rtl_equivalence_test.cpp).
//
// Per tile t of nk beats (fetch cycles f_j, bubbles b_j drawn from the same
// seeded coin as the testbench, one run of heads per beat): a beat that is not a
// tile's last is taken the cycle it is offered; the last is offered at
//   O_t = A_{t-1} + sum_j (f_j + b_j)        (A_{-1} = -1)
// and taken at A_t = max(O_t, D_{t-1} + 1), since the tile refuses a last beat
// while the previous tile is in its pipeline or output buffer. Tile t lands in
// the output buffer at A_t + latency, and its last row leaves in D_t, the cycle
// of the Rows-th high out_ready from then on (D_t = A_t + latency + Rows - 1
// without output stalls). cycles = D_{T-1} + 1. The cycles a last beat waits are
// output stalls from the first cycle its predecessor met out_ready low in the
// output buffer, pipeline stalls before; the cycles before each offer are
// operand stalls; the final drain is pipeline stall.
//
// An array of tiles (arch.h): the GEMM is tiled into operand-buffer windows,
// window w runs on array tile w mod T, each array tile as above over its own
// windows' output tiles (or partial-sum tiles: the dataflows), behind the SRAM
// and DRAM, as memory.h describes, with its own stall coins (StallConfig seed +
// j for array tile j, so one tile alone is the single-tile model). cycles is
// the slowest tile's; beats, stalls and operand bytes add up over the tiles,
// and a tile that finishes early idles in pipeline stall, so that
// T * cycles = beats + stalls (memory stalls included).
//
// Work per run: O(output tiles) without injected stalls (O(beats) with a
// stationary dataflow, one result per beat), plus the plan's O(tm) search. With them, one coin draw per
// bubble and per cycle a tile sits in the output buffer; the output-stall coin's
// draws for the other cycles (the testbench draws it every cycle) are skipped
// in one step (the coins are counter-based).
#pragma once

#include <cstdint>
#include <string>

#include "nibble/model/config.h"
#include "nibble/quantize.h"
#include "nibble/sim/arch.h"
#include "nibble/sim/device.h"
#include "nibble/sim/memory.h"
#include "nibble/sim/systemc_device.h"

namespace nibble::sim {

class EventDevice : public GemmDevice {
 public:
  enum class Values {
    kBulk,  // C from bulk_gemm, bit-exact with golden
    kNone,  // timing only: GemmResult::c is empty
  };
  // Throws std::invalid_argument for a bad cfg or stall probabilities outside [0, 1).
  explicit EventDevice(const model::TileConfig& cfg, StallConfig stalls = {}, Values values = Values::kBulk,
                       ProgressFn progress = {});
  // An array of arch.tiles tiles of arch.tile. Throws std::invalid_argument (model::ConfigError) for a bad arch.
  explicit EventDevice(const ArchConfig& arch, StallConfig stalls = {}, Values values = Values::kBulk,
                       ProgressFn progress = {});
  std::string name() const override { return values_ == Values::kBulk ? "event" : "event-timing"; }
  GemmResult run(const QuantizedTensor& a, const QuantizedTensor& b) override;
  // The timing of a GEMM of this shape (what run computes, without operands).
  // Throws std::invalid_argument for a shape the tile cannot take.
  GemmStats time(const GemmShape& shape) const;
  // The tiling time() uses.
  Tiling tiling(const GemmShape& shape) const;

  // Checks that a and b fit this tile; throws std::invalid_argument naming the problem.
  void check_operands(const QuantizedTensor& a, const QuantizedTensor& b) const;

 private:
  model::TileConfig cfg_;
  ArchConfig arch_;      // the array (for the single-tile constructor: that tile, no hierarchy)
  bool reuse_ = false;   // plan operand-buffer windows (arrays); 1 x 1 windows for one tile
  StallConfig stalls_;
  Values values_;
  ProgressFn progress_;
};

}  // namespace nibble::sim
