// How the event model tiles a GEMM into an array's buffers (arch.h), and what
// the hierarchy costs. One GEMM on the array:
//
//   DRAM --(dram.bandwidth, latency)--> SRAM (shared) --(sram.bandwidth, latency)-->
//        operand buffer of each tile --(tile.bandwidth: the beat fetch)--> tile
//
// Tiling. The output tiles (Rows x Cols of C each) form a tm x tn grid; a
// k-block is one beat. An operand-buffer window is wm x wn output tiles with
// their full-K panels: the wm A panels (Rows rows x K, codes and scale codes,
// as the beats carry them) and the wn B panels are loaded into a tile's
// operand buffer once and every output tile of the window is computed from
// them. The capacity a window may use is the buffer's, halved with
// double_buffer (the next window loads while this one computes). Among the
// windows that fit, the plan takes the least SRAM traffic
//   ceil(tn / wn) * |A| + ceil(tm / wm) * |B|       (|A|, |B|: every panel's bytes)
// keeping at least min(tiles, tm * tn) windows so that every tile has work
// (ties: the larger wm). Where one A panel and one B panel do not fit, the
// panels stream through the buffer one output tile at a time (wm = wn = 1,
// buffer_streams). SRAM windows are sm x sn output tiles, multiples of the
// buffer window, chosen the same way against the SRAM's capacity (halved with
// double_buffer), giving DRAM traffic ceil(tn / sn) * |A| + ceil(tm / sm) * |B|;
// where one buffer window does not fit, or there is no SRAM, every buffer fill
// comes from DRAM (sram_streams). C leaves the array once, FP32, to the SRAM
// and on to DRAM.
//
// Order and tiles. SRAM windows row-major, buffer windows row-major inside
// each, output tiles row-major inside each; buffer window w runs on array tile
// w mod tiles. With 1 x 1 windows this is the single-tile sequencer's order, so
// one tile without a hierarchy is the single-tile model, cycle for cycle.
//
// Dataflows, inside a window:
//   output-stationary (the RTL): each output tile takes its nk beats, A and B
//     sub-blocks in every beat (the tile's own timing, event_device.h);
//   weight-stationary: for each k-block, for each B panel, for each A panel:
//     one beat whose result is a partial-sum tile; the B sub-block stays in
//     the beat register across the A panels, so only the first beat of each
//     run fetches it;
//   input-stationary: the same with A and B exchanged.
// A beat that ends a partial-sum tile is a last beat to the tile, so it waits
// for the previous tile's drain (latency + Rows cycles): on this tile the two
// stationary dataflows trade operand-buffer bandwidth for that. The partial
// sums are added, FP32, in an accumulator beside the tile, in increasing k
// (golden's order, so C is unchanged): accumulator_bytes counts their writes
// and reads, 4 bytes each.
//
// Timing of the loads (per array tile, in its window order). Buffer window w
// may be requested at G_w: cycle 0 for the first one (two with double_buffer),
// then the cycle after the last beat of window w - 1 (w - 2 with
// double_buffer) is taken, when its buffer half is free. A transfer of b bytes
// occupies its level for t = ceil(b / (bandwidth / active)) cycles from its
// start, one transfer at a time, and its last byte is usable in its last cycle
// (as the operand buffer raises in_valid in the last cycle of a beat's fetch);
// `active` is the number of array tiles that have a window (each level's
// bandwidth is shared evenly). The window's DRAM bytes (the panels this SRAM
// window has not yet brought in) start at max(DRAM free, G_w + dram.latency)
// and are in the SRAM at Dd_w, the last cycle of their transfer; its buffer
// fill starts at max(SRAM free, G_w + sram.latency, Dd_w) and is in the buffer
// at Ds_w. The window's first beat fetch starts no earlier than Ds_w; the
// cycles it waits are memory stalls, DRAM stalls where Dd_w was the bound,
// SRAM stalls otherwise. A level left out delivers at once: no stall, its
// traffic still counted. Writes of C and partial sums are counted, not timed.
#pragma once

#include <cstdint>

#include "nibble/formats.h"
#include "nibble/quantize.h"
#include "nibble/scale.h"
#include "nibble/sim/arch.h"

namespace nibble::sim {

// What the timing of a GEMM depends on: its sizes and its operands' formats,
// scale modes and block shapes (no values).
struct GemmShape {
  int64_t m = 0, n = 0, k = 0;  // C [m, n] = A [m, k] * B [n, k]^T
  Format format_a = Format::kE2M1, format_b = Format::kE2M1;
  ScaleMode scale_a = ScaleMode::kNVFP4, scale_b = ScaleMode::kNVFP4;
  BlockShape block_a = BlockShape::k1x16, block_b = BlockShape::k1x16;
};
GemmShape shape_of(const QuantizedTensor& a, const QuantizedTensor& b);

struct Tiling {
  int64_t tm = 0, tn = 0, nk = 0;  // output tiles down and across; k-blocks (beats per output tile)
  int64_t wm = 1, wn = 1;          // output tiles per operand-buffer window
  bool buffer_streams = true;      // one A and one B panel exceed the buffer's window capacity
  int64_t sm = 1, sn = 1;          // output tiles per SRAM window (multiples of wm, wn)
  bool sram_streams = true;        // no SRAM, or one buffer window exceeds its capacity
  uint64_t a_bytes = 0, b_bytes = 0;          // all A panels, all B panels (codes + scale codes)
  uint64_t a_panel_bytes = 0, b_panel_bytes = 0;  // one full panel (Rows, Cols rows)
  uint64_t windows() const {
    return static_cast<uint64_t>((tm + wm - 1) / wm) * static_cast<uint64_t>((tn + wn - 1) / wn);
  }
};

// The plan above. `reuse` false gives 1 x 1 windows (the single-tile sequencer).
// The shape must fit the tile (check_tile_shape).
Tiling plan_tiling(const ArchConfig& arch, const GemmShape& shape, bool reuse = true);

// Throws std::invalid_argument (message starting with `who`) for a shape the tile
// cannot take: empty sizes, a format or scale mode outside its masks, a k-block
// wider than its lanes.
void check_tile_shape(const std::string& who, const model::TileConfig& cfg, const GemmShape& shape);

}  // namespace nibble::sim
