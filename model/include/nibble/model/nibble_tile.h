// nibble_tile: Rows x Cols DPUs fed one k-block of an A row panel and a B column
// panel per beat, streaming the finished C tile out one row per beat
// (rtl/nibble_tile.sv). Function: golden (dpu_accumulate) for every C element
// and every block. Timing, mirroring the RTL's flow control:
//   - a beat is accepted in the cycle it is available, except a tile's last
//     beat while the previous tile is still in the pipeline ("pending") or in the
//     output buffer ("busy"): in_ready = !(last && (pending || busy));
//   - the last beat accepted in cycle t makes the tile's rows available in the
//     output buffer from cycle t + latency (RTL: DpuLatency + 1 = 4); one row is
//     pushed per cycle while the output channel has room; the buffer is free
//     the cycle after its last row leaves.
// Every cycle is counted once: a beat accepted, or a stall by cause.
#pragma once

#include <systemc.h>

#include <cstdint>
#include <vector>

#include "nibble/model/channel.h"
#include "nibble/model/config.h"
#include "nibble/model/transactions.h"

namespace nibble::model {

struct TileCounters {
  uint64_t cycles = 0;          // cycles the tile ran
  uint64_t beats = 0;           // beats accepted (one k-block each)
  uint64_t tiles = 0;           // tiles completed into the output buffer
  uint64_t stall_operand = 0;   // no beat offered while more were expected (operand bandwidth)
  uint64_t stall_output = 0;    // a last beat held back by an output buffer that could not drain
  uint64_t stall_pipeline = 0;  // a last beat held back by the pipeline/output drain, and the final drain
};

SC_MODULE(nibble_tile) {
  sc_core::sc_in<bool> clk_i;

  // total_beats: how many beats the run will offer (cycles without a beat after
  // the last one are drain, not operand stalls); 0 if unknown.
  nibble_tile(sc_core::sc_module_name name, const TileConfig& cfg, Channel<TileBeat>& in, Channel<TileRow>& out,
              uint64_t total_beats = 0);
  SC_HAS_PROCESS(nibble_tile);

  const TileCounters& counters() const { return counters_; }

 private:
  void run();
  void compute(const TileBeat& b);

  TileConfig cfg_;
  Channel<TileBeat>& in_;
  Channel<TileRow>& out_;
  uint64_t total_beats_;
  TileCounters counters_;

  std::vector<float> acc_;       // [Rows][Cols] accumulators (the DPUs' state)
  std::vector<float> finished_;  // the tile whose last beat is in the pipeline
  std::vector<float> buffer_;    // the output buffer
};

}  // namespace nibble::model
