#include "nibble/sim/event_device.h"

#include <algorithm>
#include <cmath>
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

constexpr int64_t kNever = std::numeric_limits<int64_t>::max();

// Cycles to move `bytes` at `share` bytes per cycle; none where the level is not modelled (share 0).
int64_t transfer_cycles(uint64_t bytes, double share) {
  if (share <= 0.0 || bytes == 0) return 0;
  return static_cast<int64_t>(std::ceil(static_cast<double>(bytes) / share));
}

// A memory level as one array tile sees it: its latency and its share of the bandwidth (0: not modelled).
struct LevelShare {
  int64_t latency = 0;
  double share = 0.0;
  bool present = false;
};

// One array tile: the tile's recurrence (event_device.h) over the units of its
// windows, each window gated by its load through the levels (memory.h). Cycles
// are signed so that "before cycle 0" is -1.
class TileTimer {
 public:
  TileTimer(const model::TileConfig& cfg, const StallConfig& stalls, bool double_buffer, LevelShare sram,
            LevelShare dram)
      : latency_(cfg.latency),
        rows_(cfg.rows),
        double_buffer_(double_buffer),
        sram_(sram),
        dram_(dram),
        in_(detail::input_coin(stalls)),
        out_(detail::output_coin(stalls)) {}

  // The load of the next window: `fill` bytes from the SRAM into the operand
  // buffer, `dram` of them first from DRAM into the SRAM.
  void window(uint64_t fill, uint64_t dram) {
    const int64_t request = double_buffer_ ? (ended_ >= 2 ? end_[0] + 1 : 0) : (ended_ >= 1 ? end_[1] + 1 : 0);
    // A transfer of t cycles occupies its level from its start; its last byte is usable in its last cycle.
    int64_t dram_done = -1;
    if (dram_.present && dram > 0) {
      const int64_t t = transfer_cycles(dram, dram_.share), start = std::max(dram_free_, request + dram_.latency);
      dram_done = start + t - 1;
      dram_free_ = start + t;
    }
    const int64_t sram_ready = std::max(sram_free_, request + sram_.latency);
    gate_by_dram_ = dram_done >= 0 && dram_done >= sram_ready;
    const int64_t start = std::max(sram_ready, dram_done);
    const int64_t t = transfer_cycles(fill, sram_.share);
    gate_ = t > 0 ? start + t - 1 : start;
    sram_free_ = start + t;
  }
  void end_window() {
    end_[0] = end_[1];
    end_[1] = accepted_;
    ++ended_;
  }

  // One result: `beats` beats fetched from the operand buffer in `fetch` cycles;
  // the last is held back until the previous result has left the output buffer.
  void unit(int64_t beats, int64_t fetch) {
    int64_t bubbles = 0;
    if (in_.active()) {
      for (int64_t j = 0; j < beats; ++j) bubbles += static_cast<int64_t>(in_.run());
    }
    s_.beats += static_cast<uint64_t>(beats);
    s_.stall_operand += static_cast<uint64_t>(fetch + bubbles - beats);
    int64_t start = accepted_;  // the first fetch starts the cycle after
    if (gate_ != kNever) {
      const int64_t wait = std::max<int64_t>(0, gate_ - (accepted_ + 1));
      (gate_by_dram_ ? s_.stall_dram : s_.stall_sram) += static_cast<uint64_t>(wait);
      start += wait;
      gate_ = kNever;
    }

    // The last beat: held back until the previous result has left the output buffer.
    const int64_t offered = start + fetch + bubbles;
    accepted_ = std::max(offered, drained_ + 1);
    const int64_t output_held = refused_ < accepted_ ? accepted_ - std::max(offered, refused_) : 0;
    s_.stall_output += static_cast<uint64_t>(output_held);
    s_.stall_pipeline += static_cast<uint64_t>(accepted_ - offered - output_held);

    // The output buffer: one row per cycle with out_ready high.
    const int64_t land = accepted_ + latency_;
    refused_ = kNever;
    if (!out_.active()) {
      drained_ = land + rows_ - 1;
    } else {
      out_.skip(static_cast<uint64_t>(land - drawn_));
      drawn_ = land;
      for (int64_t taken = 0; taken < rows_; ++drawn_) {
        if (out_.flip()) {
          refused_ = std::min(refused_, drawn_);
        } else if (++taken == rows_) {
          drained_ = drawn_;
        }
      }
    }
  }

  GemmStats finish() {
    s_.cycles = static_cast<uint64_t>(drained_ + 1);
    s_.stall_pipeline += static_cast<uint64_t>(drained_ - accepted_);  // the final drain
    return s_;
  }

 private:
  int64_t latency_, rows_;
  bool double_buffer_;
  LevelShare sram_, dram_;
  detail::Coin in_, out_;
  GemmStats s_;
  int64_t accepted_ = -1;     // the cycle the latest beat was taken (A)
  int64_t drained_ = -1;      // the cycle the previous result's last C row was taken (D)
  int64_t refused_ = kNever;  // the first cycle the previous result met out_ready low in the output buffer
  int64_t drawn_ = 0;         // the output-stall coin is drawn for cycles [0, drawn)
  int64_t gate_ = kNever;     // the next unit's first fetch starts no earlier (its window's data is in)
  bool gate_by_dram_ = false;
  int64_t sram_free_ = 0, dram_free_ = 0;  // the first cycle each level is free for this tile's next transfer
  int64_t end_[2] = {-1, -1};  // the last beat taken of the windows before the last, and of the last
  uint64_t ended_ = 0;
};

}  // namespace

EventDevice::EventDevice(const model::TileConfig& cfg, StallConfig stalls, Values values, ProgressFn progress)
    : cfg_(cfg), stalls_(stalls), values_(values), progress_(std::move(progress)) {
  model::validate(cfg_);
  validate(stalls_, "event");
  arch_.tile = cfg_;
  arch_.operand_buffer_bytes = largest_beat_bytes(cfg_);
}

EventDevice::EventDevice(const ArchConfig& arch, StallConfig stalls, Values values, ProgressFn progress)
    : EventDevice(arch.tile, stalls, values, std::move(progress)) {
  validate(arch);
  arch_ = arch;
  reuse_ = true;
}

void EventDevice::check_operands(const QuantizedTensor& a, const QuantizedTensor& b) const {
  detail::check_tile_operands(name(), cfg_, a, b);
}

Tiling EventDevice::tiling(const GemmShape& shape) const {
  check_tile_shape(name(), cfg_, shape);
  return plan_tiling(arch_, shape, reuse_);
}

GemmStats EventDevice::time(const GemmShape& shape) const {
  check_tile_shape(name(), cfg_, shape);
  const detail::TileSequence seq(cfg_, shape);
  // Before planning, whose work grows with the GEMM: even an even share of the beats must fit the limit.
  const double share = static_cast<double>(arch_.tiles);
  detail::cycle_bound(name(), cfg_, stalls_, static_cast<double>(seq.beats()) / share,
                      static_cast<double>(seq.tiles()) / share, 0.0);
  const Tiling t = plan_tiling(arch_, shape, reuse_);
  const int64_t tiles = arch_.tiles;
  const uint64_t windows = t.windows();
  const int64_t active = std::min<int64_t>(tiles, static_cast<int64_t>(windows));
  const Dataflow flow = arch_.dataflow;
  const uint64_t nk = static_cast<uint64_t>(t.nk);

  // The levels as each tile sees them, and the bound on the run's cycles.
  LevelShare sram, dram;
  if (arch_.sram) sram = {arch_.sram->latency, arch_.sram->bandwidth / static_cast<double>(active), true};
  if (arch_.dram) dram = {arch_.dram->latency, arch_.dram->bandwidth / static_cast<double>(active), true};
  // The busiest tile: ceil(windows / active) windows, none larger than wm x wn output tiles.
  const double busiest = std::ceil(static_cast<double>(windows) / static_cast<double>(active));
  const double window_tiles = static_cast<double>(t.wm * t.wn), nk_d = static_cast<double>(t.nk);
  const double window_bytes = static_cast<double>(t.wm) * static_cast<double>(t.a_panel_bytes) +
                              static_cast<double>(t.wn) * static_cast<double>(t.b_panel_bytes);
  const double extra = busiest * (static_cast<double>(sram.latency + dram.latency + 2) +
                                   (sram.present ? window_bytes / sram.share : 0.0) +
                                   (dram.present ? window_bytes / dram.share : 0.0));
  detail::cycle_bound(name(), cfg_, stalls_, busiest * window_tiles * nk_d,
                      busiest * window_tiles * (flow == Dataflow::kOutputStationary ? 1.0 : nk_d), extra);

  std::vector<TileTimer> timers;
  for (int64_t j = 0; j < active; ++j) {
    StallConfig st = stalls_;
    st.seed += static_cast<uint64_t>(j);
    timers.emplace_back(cfg_, st, arch_.double_buffer, sram, dram);
  }
  GemmStats s;
  MemoryTraffic& traffic = s.traffic;
  const uint64_t out_tiles = seq.tiles();
  const uint64_t report_every = std::max<uint64_t>(1, out_tiles / 100);
  const bool report = progress_ && values_ == Values::kNone;
  uint64_t done = 0, w = 0;
  const auto real_rows = [](int64_t first, int64_t last, int64_t per, int64_t total) {
    return static_cast<uint64_t>(std::min(last * per, total) - first * per);
  };
  const uint64_t a_row = seq.a_row_bytes(), b_row = seq.b_row_bytes();
  for (int64_t si = 0; si < t.tm; si += t.sm) {
    for (int64_t sj = 0; sj < t.tn; sj += t.sn) {  // one SRAM window
      for (int64_t wi = si; wi < std::min(si + t.sm, t.tm); wi += t.wm) {
        for (int64_t wj = sj; wj < std::min(sj + t.sn, t.tn); wj += t.wn) {  // one buffer window
          const int64_t i1 = std::min(wi + t.wm, t.tm), j1 = std::min(wj + t.wn, t.tn);
          const uint64_t a_in = a_row * real_rows(wi, i1, cfg_.rows, shape.m);
          const uint64_t b_in = b_row * real_rows(wj, j1, cfg_.cols, shape.n);
          const uint64_t from_dram = t.sram_streams ? a_in + b_in : (wj == sj ? a_in : 0) + (wi == si ? b_in : 0);
          traffic.buffer_fill_bytes += a_in + b_in;
          traffic.dram_read_bytes += from_dram;
          TileTimer& timer = timers[w % static_cast<uint64_t>(tiles)];
          timer.window(a_in + b_in, from_dram);
          if (flow == Dataflow::kOutputStationary) {
            for (int64_t i = wi; i < i1; ++i) {
              for (int64_t j = wj; j < j1; ++j) {
                const int64_t ra = seq.rows_a_of(i), rb = seq.rows_b_of(j);
                const uint64_t full = seq.bytes(ra, rb, seq.step()), last = seq.bytes(ra, rb, seq.count(t.nk - 1));
                s.operand_bytes += (nk - 1) * full + last;
                timer.unit(t.nk, static_cast<int64_t>((nk - 1) * seq.fetch_cycles(full) + seq.fetch_cycles(last)));
              }
            }
          } else {
            // A partial-sum tile per beat; the stationary sub-block is fetched by the first beat of its run.
            const bool ws = flow == Dataflow::kWeightStationary;
            const int64_t outer0 = ws ? wj : wi, outer1 = ws ? j1 : i1, inner0 = ws ? wi : wj, inner1 = ws ? i1 : j1;
            for (int64_t kb = 0; kb < t.nk; ++kb) {
              const int64_t c = seq.count(kb);
              for (int64_t o = outer0; o < outer1; ++o) {
                for (int64_t in = inner0; in < inner1; ++in) {
                  const int64_t ra = seq.rows_a_of(ws ? in : o), rb = seq.rows_b_of(ws ? o : in);
                  const uint64_t streamed = ws ? seq.a_bytes(ra, c) : seq.b_bytes(rb, c);
                  const uint64_t held = in == inner0 ? (ws ? seq.b_bytes(rb, c) : seq.a_bytes(ra, c)) : 0;
                  s.operand_bytes += streamed + held;
                  traffic.accumulator_bytes += static_cast<uint64_t>(ra * rb) * 4u * (kb > 0 ? 2u : 1u);
                  timer.unit(1, static_cast<int64_t>(seq.fetch_cycles(streamed + held)));
                }
              }
            }
          }
          timer.end_window();
          ++w;
          const uint64_t before = done;
          done += static_cast<uint64_t>((i1 - wi) * (j1 - wj));
          if (report && (done / report_every != before / report_every || done == out_tiles)) progress_(done, out_tiles);
        }
      }
    }
  }

  std::vector<GemmStats> per_tile;
  for (TileTimer& timer : timers) per_tile.push_back(timer.finish());
  for (const GemmStats& p : per_tile) s.cycles = std::max(s.cycles, p.cycles);
  for (const GemmStats& p : per_tile) {
    s.beats += p.beats;
    s.stall_operand += p.stall_operand;
    s.stall_output += p.stall_output;
    s.stall_pipeline += p.stall_pipeline + (s.cycles - p.cycles);  // idle after its last window
    s.stall_sram += p.stall_sram;
    s.stall_dram += p.stall_dram;
  }
  s.stall_pipeline += static_cast<uint64_t>(tiles - active) * s.cycles;  // tiles with no window
  s.tiles = out_tiles;
  s.macs = static_cast<uint64_t>(shape.m) * static_cast<uint64_t>(shape.n) * static_cast<uint64_t>(shape.k);
  s.peak_macs_per_cycle = static_cast<uint64_t>(tiles) * static_cast<uint64_t>(cfg_.rows) *
                          static_cast<uint64_t>(cfg_.cols) * static_cast<uint64_t>(cfg_.lanes);
  if (reuse_) {
    s.windows = windows;
    traffic.c_bytes = static_cast<uint64_t>(shape.m) * static_cast<uint64_t>(shape.n) * 4u;
    traffic.dram_write_bytes = traffic.c_bytes;
  } else {
    traffic = MemoryTraffic{};  // one tile alone has no hierarchy
  }
  return s;
}

GemmResult EventDevice::run(const QuantizedTensor& a, const QuantizedTensor& b) {
  check_operands(a, b);
  GemmResult r;
  r.m = a.rows;
  r.n = b.rows;
  r.stats = time(shape_of(a, b));
  if (values_ == Values::kBulk) {
    // Progress in output tiles, as the timed devices report it: C rows done -> tile rows done.
    ProgressFn rows_done;
    const detail::TileSequence seq(cfg_, a, b);
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
