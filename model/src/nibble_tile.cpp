#include "nibble/model/nibble_tile.h"

#include <optional>
#include <stdexcept>
#include <string>

#include "nibble/model/nibble_dpu.h"

namespace nibble::model {

nibble_tile::nibble_tile(sc_core::sc_module_name name, const TileConfig& cfg, Channel<TileBeat>& in,
                         Channel<TileRow>& out, uint64_t total_beats)
    : sc_core::sc_module(name), cfg_(cfg), in_(in), out_(out), total_beats_(total_beats) {
  validate(cfg_);
  const size_t cells = static_cast<size_t>(cfg_.rows) * static_cast<size_t>(cfg_.cols);
  acc_.assign(cells, 0.0f);
  finished_.assign(cells, 0.0f);
  buffer_.assign(cells, 0.0f);
  SC_CTHREAD(run, clk_i.pos());
}

void nibble_tile::compute(const TileBeat& b) {
  const size_t lanes = static_cast<size_t>(cfg_.lanes);
  const size_t rows = static_cast<size_t>(cfg_.rows);
  const size_t cols = static_cast<size_t>(cfg_.cols);
  if (b.codes_a.size() != rows * lanes || b.codes_b.size() != cols * lanes || b.scales_a.size() != rows ||
      b.scales_b.size() != cols) {
    throw std::invalid_argument("nibble_tile: a beat's panels do not match the array shape");
  }
  for (size_t m = 0; m < rows; ++m) {
    for (size_t n = 0; n < cols; ++n) {
      float& acc = acc_[m * cols + n];
      acc = dpu_accumulate(acc, b.first, &b.codes_a[m * lanes], b.format_a, b.scales_a[m], b.scale_format_a,
                           &b.codes_b[n * lanes], b.format_b, b.scales_b[n], b.scale_format_b, lanes);
    }
  }
}

void nibble_tile::run() {
  const int rows = cfg_.rows;
  const size_t cols = static_cast<size_t>(cfg_.cols);
  std::optional<TileBeat> held;
  bool pending = false, busy = false, out_blocked = false;
  uint64_t done_at = 0;
  int row = 0;
  for (uint64_t cycle = 0;; ++cycle) {
    // Flow-control state as registered at the start of the cycle.
    const bool free_for_last = !pending && !busy;
    const bool output_stuck = busy && out_blocked;

    if (pending && cycle == done_at) {  // the last beat leaves the DPUs into the output buffer
      buffer_ = finished_;
      pending = false;
      busy = true;
      row = 0;
      out_blocked = false;
      ++counters_.tiles;
    }
    if (busy) {
      TileRow r;
      r.row = row;
      r.last = row == rows - 1;
      r.c.assign(buffer_.begin() + static_cast<std::ptrdiff_t>(static_cast<size_t>(row) * cols),
                 buffer_.begin() + static_cast<std::ptrdiff_t>(static_cast<size_t>(row + 1) * cols));
      if (out_.PushNB(r)) {
        if (++row == rows) busy = false;
      } else {
        out_blocked = true;
      }
    }

    if (!held) {
      TileBeat b;
      if (in_.PopNB(b)) held = std::move(b);
    }
    if (held && (!held->last || free_for_last)) {
      compute(*held);
      ++counters_.beats;
      if (held->last) {
        finished_ = acc_;
        pending = true;
        done_at = cycle + static_cast<uint64_t>(cfg_.latency);
      }
      held.reset();
    } else if (held) {
      if (output_stuck || (busy && out_blocked)) {
        ++counters_.stall_output;
      } else {
        ++counters_.stall_pipeline;
      }
    } else if (total_beats_ != 0 && counters_.beats >= total_beats_) {
      ++counters_.stall_pipeline;
    } else {
      ++counters_.stall_operand;
    }
    ++counters_.cycles;
    sc_core::wait();
  }
}

}  // namespace nibble::model
