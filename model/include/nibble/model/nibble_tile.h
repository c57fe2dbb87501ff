// nibble_tile: Rows x Cols DPUs fed one k-block of an A row panel and a B column
// panel per beat, streaming the finished C tile out one row per beat
// (rtl/nibble_tile.sv). Function: golden (dpu_accumulate) for every C element
// and every block. Timing: the RTL's ports and flow control, cycle for cycle.
//
// Ports are the RTL's valid/ready handshakes with one message per direction
// (TileBeat carries in_first/in_last/formats/codes/scales, TileRow carries
// out_row/out_last/out_c). A transfer happens in a cycle where valid && ready,
// as in the RTL; both sides see it at the next rising edge. No channel sits
// between the testbench and the tile, so a stimulus gives the same cycle count
// here as on the Verilated RTL (tests/model/rtl_equivalence_test.cpp):
//   - in_ready_o = !(in_last && (pending || busy)), combinational in the beat
//     (never in in_valid), as the RTL's in_ready_o;
//   - the last beat accepted in cycle t puts the tile in the output buffer for
//     cycle t + latency (RTL: DpuLatency + 1 = 4): out_valid_o is high from then
//     until its last row is taken; one row per cycle with out_ready_i;
//   - rst_ni low at a rising edge empties the pipeline and the buffer.
#pragma once

#include <systemc.h>

#include <cstdint>
#include <vector>

#include "nibble/model/config.h"
#include "nibble/model/transactions.h"

namespace nibble::model {

// The wires between a testbench and a tile (model or Verilated RTL): one set per tile.
struct TileSignals {
  sc_core::sc_signal<bool> rst_n{"rst_n", false};
  sc_core::sc_signal<bool> in_valid{"in_valid", false};
  sc_core::sc_signal<bool> in_ready{"in_ready", false};
  sc_core::sc_signal<TileBeat> in_beat{"in_beat"};
  sc_core::sc_signal<bool> out_valid{"out_valid", false};
  sc_core::sc_signal<bool> out_ready{"out_ready", false};
  sc_core::sc_signal<TileRow> out_row{"out_row"};
};

SC_MODULE(nibble_tile) {
  sc_core::sc_in<bool> clk_i;
  sc_core::sc_in<bool> rst_ni;
  sc_core::sc_in<bool> in_valid_i;
  sc_core::sc_out<bool> in_ready_o;
  sc_core::sc_in<TileBeat> in_beat_i;
  sc_core::sc_out<bool> out_valid_o;
  sc_core::sc_in<bool> out_ready_i;
  sc_core::sc_out<TileRow> out_row_o;

  nibble_tile(sc_core::sc_module_name name, const TileConfig& cfg);
  SC_HAS_PROCESS(nibble_tile);

  // Binds every port but the clock to `s`.
  void bind(TileSignals& s);


 private:
  void ready();  // combinational in_ready_o
  void tick();   // the rising edge
  void compute(const TileBeat& b);
  void drive_outputs();

  TileConfig cfg_;
  sc_core::sc_signal<bool> hold_last_{"hold_last", false};  // pending || busy, as registered

  bool pending_ = false;  // a last beat is inside the DPUs
  bool busy_ = false;     // the output buffer holds a tile
  int row_ = 0;           // the row on out_row_o
  uint64_t now_ = 0;      // the cycle that starts at this edge (0 = first after reset)
  uint64_t done_at_ = 0;  // the cycle the pending tile enters the output buffer

  std::vector<float> acc_;       // [Rows][Cols] accumulators (the DPUs' state)
  std::vector<float> finished_;  // the tile whose last beat is in the pipeline
  std::vector<float> buffer_;    // the output buffer
};

}  // namespace nibble::model
