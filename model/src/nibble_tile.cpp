#include "nibble/model/nibble_tile.h"

#include <stdexcept>
#include <string>

#include "nibble/model/nibble_dpu.h"

namespace nibble::model {

nibble_tile::nibble_tile(sc_core::sc_module_name name, const TileConfig& cfg)
    : sc_core::sc_module(name),
      clk_i("clk_i"),
      rst_ni("rst_ni"),
      in_valid_i("in_valid_i"),
      in_ready_o("in_ready_o"),
      in_beat_i("in_beat_i"),
      out_valid_o("out_valid_o"),
      out_ready_i("out_ready_i"),
      out_row_o("out_row_o"),
      cfg_(cfg) {
  validate(cfg_);
  const size_t cells = static_cast<size_t>(cfg_.rows) * static_cast<size_t>(cfg_.cols);
  acc_.assign(cells, 0.0f);
  finished_.assign(cells, 0.0f);
  buffer_.assign(cells, 0.0f);
  SC_METHOD(ready);
  sensitive << in_beat_i << hold_last_;
  SC_METHOD(tick);
  sensitive << clk_i.pos();
  dont_initialize();
}

void nibble_tile::bind(TileSignals& s) {
  rst_ni(s.rst_n);
  in_valid_i(s.in_valid);
  in_ready_o(s.in_ready);
  in_beat_i(s.in_beat);
  out_valid_o(s.out_valid);
  out_ready_i(s.out_ready);
  out_row_o(s.out_row);
}

void nibble_tile::ready() { in_ready_o.write(!(in_beat_i.read().last && hold_last_.read())); }

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

void nibble_tile::drive_outputs() {
  out_valid_o.write(busy_);
  hold_last_.write(pending_ || busy_);
  if (busy_) {
    const size_t cols = static_cast<size_t>(cfg_.cols);
    TileRow r;
    r.row = row_;
    r.last = row_ == cfg_.rows - 1;
    const auto first = buffer_.begin() + static_cast<std::ptrdiff_t>(static_cast<size_t>(row_) * cols);
    r.c.assign(first, first + static_cast<std::ptrdiff_t>(cols));
    out_row_o.write(r);
  }
}

void nibble_tile::tick() {
  if (!rst_ni.read()) {
    pending_ = busy_ = false;
    row_ = 0;
    now_ = 0;
    drive_outputs();
    return;
  }
  // The handshakes of the cycle that just ended (cycle now_), as the registers see them.
  const bool accept = in_valid_i.read() && in_ready_o.read();
  const bool row_taken = busy_ && out_ready_i.read();
  const uint64_t ended = now_++;
  if (row_taken) {
    if (++row_ == cfg_.rows) {
      busy_ = false;
      row_ = 0;
    }
  }
  if (accept) {
    const TileBeat& b = in_beat_i.read();
    compute(b);
    if (b.last) {
      finished_ = acc_;
      pending_ = true;
      done_at_ = ended + static_cast<uint64_t>(cfg_.latency);
    }
  }
  if (pending_ && now_ == done_at_) {  // the last beat leaves the DPUs into the output buffer
    if (busy_) SC_REPORT_ERROR("nibble_tile", "a finished tile landed on a buffer still draining");
    buffer_ = finished_;
    pending_ = false;
    busy_ = true;
    row_ = 0;
  }
  drive_outputs();
}

}  // namespace nibble::model
