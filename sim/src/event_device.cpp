#include "nibble/sim/event_device.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "nibble/sim/bulk_gemm.h"
#include "tile_sequence.h"

namespace nibble::sim {
namespace {

// The timing of the output tiles first, first + stride, ... of one GEMM on one
// tile, tile by tile (the formulas of event_device.h). Cycles are signed so that
// "before cycle 0" is -1.
GemmStats event_timing(const model::TileConfig& cfg, const StallConfig& stalls, const detail::TileSequence& seq,
                       int64_t first, int64_t stride, const ProgressFn& progress) {
  constexpr int64_t kNever = std::numeric_limits<int64_t>::max();
  detail::Coin in = detail::input_coin(stalls), out = detail::output_coin(stalls);
  const int64_t nk = seq.kblocks();
  const int64_t tiles = static_cast<int64_t>(seq.tiles());
  const int64_t latency = cfg.latency, rows = cfg.rows;
  const uint64_t report_every = std::max<uint64_t>(1, seq.tiles() / 100);

  GemmStats s;
  int64_t accepted = -1;    // the cycle the latest beat was taken (A)
  int64_t drained = -1;     // the cycle the previous tile's last C row was taken (D)
  int64_t refused = kNever; // the first cycle the previous tile met out_ready low in the output buffer
  int64_t drawn = 0;        // the output-stall coin is drawn for cycles [0, drawn)
  uint64_t beats = 0;
  for (int64_t tile = first; tile < tiles; tile += stride) {
    // The operand buffer: every beat of the tile fetched back to back, each after its bubbles.
    const int64_t ra = seq.rows_a(tile), rb = seq.rows_b(tile);
    const uint64_t full_bytes = seq.bytes(ra, rb, seq.step());
    const uint64_t last_bytes = seq.bytes(ra, rb, seq.count(nk - 1));
    const int64_t fetch = static_cast<int64_t>((static_cast<uint64_t>(nk) - 1) * seq.fetch_cycles(full_bytes) +
                                               seq.fetch_cycles(last_bytes));
    int64_t bubbles = 0;
    if (in.active()) {
      for (int64_t j = 0; j < nk; ++j) bubbles += static_cast<int64_t>(in.run());
    }
    beats += static_cast<uint64_t>(nk);
    s.operand_bytes += (static_cast<uint64_t>(nk) - 1) * full_bytes + last_bytes;
    s.stall_operand += static_cast<uint64_t>(fetch + bubbles - nk);

    // The last beat: held back until the previous tile has left the output buffer.
    const int64_t offered = accepted + fetch + bubbles;
    accepted = std::max(offered, drained + 1);
    const int64_t output_held = refused < accepted ? accepted - std::max(offered, refused) : 0;
    s.stall_output += static_cast<uint64_t>(output_held);
    s.stall_pipeline += static_cast<uint64_t>(accepted - offered - output_held);

    // The output buffer: one row per cycle with out_ready high.
    const int64_t land = accepted + latency;
    refused = kNever;
    if (!out.active()) {
      drained = land + rows - 1;
    } else {
      out.skip(static_cast<uint64_t>(land - drawn));
      drawn = land;
      for (int64_t taken = 0; taken < rows; ++drawn) {
        if (out.flip()) {
          refused = std::min(refused, drawn);
        } else if (++taken == rows) {
          drained = drawn;
        }
      }
    }
    const uint64_t done = static_cast<uint64_t>(tile + 1);
    if (progress && (done % report_every == 0 || done == seq.tiles())) progress(done, seq.tiles());
  }
  s.beats = beats;
  s.cycles = static_cast<uint64_t>(drained + 1);
  s.stall_pipeline += static_cast<uint64_t>(drained - accepted);  // the final drain
  return s;
}

}  // namespace

EventDevice::EventDevice(const model::TileConfig& cfg, StallConfig stalls, Values values, ProgressFn progress)
    : cfg_(cfg), stalls_(stalls), values_(values), progress_(std::move(progress)) {
  model::validate(cfg_);
  validate(stalls_, "event");
}

EventDevice::EventDevice(const ArchConfig& arch, StallConfig stalls, Values values, ProgressFn progress)
    : EventDevice(arch.tile, stalls, values, std::move(progress)) {
  validate(arch);
  tiles_ = arch.tiles;
}

void EventDevice::check_operands(const QuantizedTensor& a, const QuantizedTensor& b) const {
  detail::check_tile_operands(name(), cfg_, a, b);
}

GemmResult EventDevice::run(const QuantizedTensor& a, const QuantizedTensor& b) {
  check_operands(a, b);
  const detail::TileSequence seq(cfg_, a, b);
  detail::cycle_bound(name(), cfg_, stalls_, seq);  // the same limit as the cycle-stepped devices
  GemmResult r;
  r.m = a.rows;
  r.n = b.rows;
  // Array tile j takes output tiles j, j + T, ...; an array tile with none stays idle.
  const int64_t array = std::min<int64_t>(tiles_, static_cast<int64_t>(seq.tiles()));
  const ProgressFn timing_progress = values_ == Values::kNone && array == 1 ? progress_ : ProgressFn{};
  std::vector<GemmStats> per_tile;
  for (int64_t j = 0; j < array; ++j) {
    StallConfig st = stalls_;
    st.seed += static_cast<uint64_t>(j);
    per_tile.push_back(event_timing(cfg_, st, seq, j, tiles_, timing_progress));
  }
  GemmStats s;
  for (const GemmStats& t : per_tile) s.cycles = std::max(s.cycles, t.cycles);
  for (const GemmStats& t : per_tile) {
    s.beats += t.beats;
    s.stall_operand += t.stall_operand;
    s.stall_output += t.stall_output;
    s.stall_pipeline += t.stall_pipeline + (s.cycles - t.cycles);  // idle after its last tile
    s.operand_bytes += t.operand_bytes;
  }
  s.stall_pipeline += static_cast<uint64_t>(tiles_ - array) * s.cycles;  // tiles with no output tile
  s.tiles = seq.tiles();
  s.macs = static_cast<uint64_t>(a.rows) * static_cast<uint64_t>(b.rows) * static_cast<uint64_t>(a.cols);
  s.peak_macs_per_cycle = static_cast<uint64_t>(tiles_) * static_cast<uint64_t>(cfg_.rows) *
                          static_cast<uint64_t>(cfg_.cols) * static_cast<uint64_t>(cfg_.lanes);
  r.stats = s;
  if (values_ == Values::kBulk) {
    // Progress in output tiles, as the timed devices report it: C rows done -> tile rows done.
    ProgressFn rows_done;
    if (progress_) {
      const uint64_t tiles_n = static_cast<uint64_t>(seq.tiles_n()), panel = static_cast<uint64_t>(cfg_.rows);
      rows_done = [this, tiles_n, panel, &seq](uint64_t m, uint64_t total) {
        progress_(m == total ? seq.tiles() : m / panel * tiles_n, seq.tiles());
      };
    }
    r.c = bulk_gemm(a, b, rows_done);
  }
  return r;
}

}  // namespace nibble::sim
