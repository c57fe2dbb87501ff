// What both timing paths share, so that they cannot drift apart: the GEMM tile
// sequencer's beat order and each beat's operand-buffer cost, the seeded coins
// of the injected bubbles and stalls, and the bound on a run's cycles. The
// tile testbench (tile_testbench.cpp, cycle by cycle around the SystemC model
// or the Verilated RTL) and the event-skipping model (event_device.cpp) both
// read them from here. Internal to sim/.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "nibble/limits.h"
#include "nibble/model/config.h"
#include "nibble/quantize.h"
#include "nibble/scale.h"
#include "nibble/sim/memory.h"
#include "nibble/sim/systemc_device.h"

namespace nibble::sim::detail {

// Seeded Bernoulli draws for bubbles and stalls: heads when the next 64-bit
// output of SplitMix64 (Steele, Lea and Flood, OOPSLA 2014) is below p * 2^64.
// Draw i is mix(start + (i + 1) * gamma), so skipping draws is one multiply-add:
// the event model skips the output-stall draws of the cycles that cannot use
// them. With p = 0 nothing is drawn.
class Coin {
 public:
  Coin(double p, uint64_t seed)
      : threshold_(p > 0.0 ? static_cast<uint64_t>(std::ldexp(p, 64)) : 0u), state_(mix(seed)) {}
  bool flip() { return threshold_ != 0 && next() < threshold_; }
  void skip(uint64_t draws) {  // as `draws` calls of flip(), results unused
    if (threshold_ != 0) state_ += draws * kGamma;
  }
  uint64_t run() {  // how many heads before the first tail
    uint64_t n = 0;
    while (flip()) ++n;
    return n;
  }
  bool active() const { return threshold_ != 0; }

 private:
  static constexpr uint64_t kGamma = 0x9E3779B97F4A7C15u;
  static uint64_t mix(uint64_t z) {
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9u;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBu;
    return z ^ (z >> 31);
  }
  uint64_t next() {
    state_ += kGamma;
    return mix(state_);
  }

  uint64_t threshold_;  // p * 2^64, p in [0, 1)
  uint64_t state_;
};

// The two coins of a StallConfig: input bubbles (drawn once per beat, when the
// fetch of that beat starts) and output stalls (drawn once per cycle).
inline Coin input_coin(const StallConfig& st) { return Coin(st.input, st.seed * 2 + 1); }
inline Coin output_coin(const StallConfig& st) { return Coin(st.output, st.seed * 2 + 2); }

// Throws std::invalid_argument (message starting with `who`) for operands that do
// not fit the tile: empty or mismatched operands, formats or scale modes outside
// cfg, a k-block wider than the lanes.
void check_tile_operands(const std::string& who, const model::TileConfig& cfg, const QuantizedTensor& a,
                         const QuantizedTensor& b);

inline int scale_bytes(ScaleFormat f) { return f == ScaleFormat::kFP32 ? 4 : 1; }

// The beats of one GEMM on one tile: output tiles row-major, then the k-blocks of
// each tile in increasing k (golden's block order).
class TileSequence {
 public:
  TileSequence(const model::TileConfig& cfg, const QuantizedTensor& a, const QuantizedTensor& b)
      : TileSequence(cfg, shape_of(a, b)) {}
  TileSequence(const model::TileConfig& cfg, const GemmShape& s)
      : cfg_(cfg),
        m_(s.m),
        n_(s.n),
        k_(s.k),
        step_(std::min(block_cols(s.block_a), block_cols(s.block_b))),
        sb_a_(scale_bytes(scale_format(s.scale_a))),
        sb_b_(scale_bytes(scale_format(s.scale_b))) {}

  int64_t step() const { return step_; }
  int64_t tiles_m() const { return (m_ + cfg_.rows - 1) / cfg_.rows; }
  int64_t tiles_n() const { return (n_ + cfg_.cols - 1) / cfg_.cols; }
  int64_t kblocks() const { return (k_ + step_ - 1) / step_; }
  uint64_t tiles() const { return static_cast<uint64_t>(tiles_m() * tiles_n()); }
  uint64_t beats() const { return tiles() * static_cast<uint64_t>(kblocks()); }

  // Real (unpadded) rows of tile `tile`'s A and B panels.
  int64_t rows_a(int64_t tile) const { return std::min<int64_t>(cfg_.rows, m_ - tile / tiles_n() * cfg_.rows); }
  int64_t rows_b(int64_t tile) const { return std::min<int64_t>(cfg_.cols, n_ - tile % tiles_n() * cfg_.cols); }
  // The same by output-tile row and column.
  int64_t rows_a_of(int64_t tile_row) const { return std::min<int64_t>(cfg_.rows, m_ - tile_row * cfg_.rows); }
  int64_t rows_b_of(int64_t tile_col) const { return std::min<int64_t>(cfg_.cols, n_ - tile_col * cfg_.cols); }
  // Real k elements of k-block kb.
  int64_t count(int64_t kb) const { return std::min(step_, k_ - kb * step_); }

  // Bytes the operand buffer reads for one beat:
  // ra * (ceil(count/2) + sa) + rb * (ceil(count/2) + sb).
  uint64_t bytes(int64_t ra, int64_t rb, int64_t count) const { return a_bytes(ra, count) + b_bytes(rb, count); }
  // The A part and the B part of it.
  uint64_t a_bytes(int64_t ra, int64_t count) const { return static_cast<uint64_t>(ra * ((count + 1) / 2 + sb_a_)); }
  uint64_t b_bytes(int64_t rb, int64_t count) const { return static_cast<uint64_t>(rb * ((count + 1) / 2 + sb_b_)); }
  // Bytes of one operand row over the whole of K, as the beats carry it: codes and one scale code per k-block.
  uint64_t a_row_bytes() const { return a_bytes(1, step_) * static_cast<uint64_t>(kblocks() - 1) + a_bytes(1, count(kblocks() - 1)); }
  uint64_t b_row_bytes() const { return b_bytes(1, step_) * static_cast<uint64_t>(kblocks() - 1) + b_bytes(1, count(kblocks() - 1)); }
  // Cycles to fetch them: ceil(bytes / bandwidth), at least 1.
  uint64_t fetch_cycles(uint64_t bytes) const {
    const double f = std::ceil(static_cast<double>(bytes) / cfg_.bandwidth);
    return std::max<uint64_t>(1, static_cast<uint64_t>(f));
  }

 private:
  model::TileConfig cfg_;
  int64_t m_, n_, k_, step_;
  int sb_a_, sb_b_;
};

// A generous bound on a run's cycles: every beat's fetch plus every tile's drain,
// stretched by 20 and by the expected cost of the injected stalls (a cycle goes
// ahead with probability (1 - p_in)(1 - p_out)). Computed in double, so that a tiny
// bandwidth cannot wrap it. Throws std::invalid_argument (message starting with
// `who`) when it passes limits::kMaxSimCycles.
// `beats`, `drains` (results leaving the tile: output tiles, or partial-sum
// tiles with a stationary dataflow) and `extra` (cycles memory levels may add)
// are one tile's, so that an array is bounded by its busiest tile.
inline uint64_t cycle_bound(const std::string& who, const model::TileConfig& cfg, const StallConfig& stalls,
                            double beats, double drains, double extra) {
  const uint64_t max_bytes = static_cast<uint64_t>(cfg.rows + cfg.cols) * static_cast<uint64_t>(cfg.lanes / 2 + 4);
  const double fetch_bound = std::ceil(static_cast<double>(max_bytes) / cfg.bandwidth) + 1.0;
  const double go_ahead = (1.0 - stalls.input) * (1.0 - stalls.output);
  const double bound_cycles =
      (beats * fetch_bound + drains * static_cast<double>(cfg.latency + 2 * cfg.rows + 4) + extra + 100.0) * 20.0 /
      go_ahead;
  if (!(bound_cycles <= static_cast<double>(limits::kMaxSimCycles))) {
    throw std::invalid_argument(who + ": the run could take up to " + std::to_string(bound_cycles) +
                                " cycles, more than the limit of 2^36 (raise the bandwidth, lower the stall "
                                "probabilities or the GEMM's size)");
  }
  return static_cast<uint64_t>(bound_cycles);
}
// One tile taking every beat of `seq`.
inline uint64_t cycle_bound(const std::string& who, const model::TileConfig& cfg, const StallConfig& stalls,
                            const TileSequence& seq) {
  return cycle_bound(who, cfg, stalls, static_cast<double>(seq.beats()), static_cast<double>(seq.tiles()), 0.0);
}

}  // namespace nibble::sim::detail
