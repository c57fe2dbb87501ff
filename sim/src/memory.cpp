#include "nibble/sim/memory.h"

#include <algorithm>
#include <limits>
#include <stdexcept>
#include <string>

#include "nibble/formats.h"
#include "tile_sequence.h"

namespace nibble::sim {
namespace {

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// The window of x by y panels (A panels of pa bytes down, B panels of pb across)
// with the least traffic ceil(ny / y) * a_total + ceil(nx / x) * b_total among
// those with x * pa + y * pb <= cap and at least min_windows windows; ties go to
// the larger x. False where not even 1 x 1 fits.
bool best_window(int64_t nx, int64_t ny, double pa, double pb, double cap, int64_t min_windows, double a_total,
                 double b_total, int64_t& wx, int64_t& wy) {
  wx = wy = 1;
  if (pa + pb > cap) return false;
  double best = std::numeric_limits<double>::infinity();
  for (int64_t x = 1; x <= nx; ++x) {
    const double left = cap - static_cast<double>(x) * pa;
    if (left < pb) break;
    int64_t y = std::min<int64_t>(ny, static_cast<int64_t>(left / pb));
    // Windows: ceil(nx / x) * ceil(ny / y) >= min_windows needs ceil(ny / y) >= q.
    // (1 x 1 always has enough, min_windows being at most nx * ny; a larger x may have none.)
    const int64_t q = ceil_div(min_windows, ceil_div(nx, x));
    if (q > ny) continue;
    if (q > 1) y = std::min<int64_t>(y, ceil_div(ny, q - 1) - 1);
    const double traffic = static_cast<double>(ceil_div(ny, y)) * a_total + static_cast<double>(ceil_div(nx, x)) * b_total;
    if (traffic <= best) {
      best = traffic;
      wx = x;
      wy = y;
    }
  }
  return true;
}

}  // namespace

GemmShape shape_of(const QuantizedTensor& a, const QuantizedTensor& b) {
  GemmShape s;
  s.m = a.rows;
  s.n = b.rows;
  s.k = a.cols;
  s.format_a = a.config.format;
  s.format_b = b.config.format;
  s.scale_a = a.config.scale;
  s.scale_b = b.config.scale;
  s.block_a = a.config.block;
  s.block_b = b.config.block;
  return s;
}

void check_tile_shape(const std::string& who, const model::TileConfig& cfg, const GemmShape& shape) {
  if (shape.m <= 0 || shape.n <= 0 || shape.k <= 0) throw std::invalid_argument(who + ": empty operands");
  std::string formats, modes;
  for (Format f : cfg.formats) formats += (formats.empty() ? "" : ", ") + std::string(nibble::name(f));
  for (ScaleMode m : cfg.scale_modes) modes += (modes.empty() ? "" : ", ") + std::string(nibble::name(m));
  for (int op = 0; op < 2; ++op) {
    const char* which = op == 0 ? "A" : "B";
    const Format f = op == 0 ? shape.format_a : shape.format_b;
    const ScaleMode s = op == 0 ? shape.scale_a : shape.scale_b;
    if (!cfg.allows(f)) {
      throw std::invalid_argument(who + ": format of " + which + " '" + std::string(nibble::name(f)) +
                                  "' is not in the tile's formats (" + formats + ")");
    }
    if (!cfg.allows(s)) {
      throw std::invalid_argument(who + ": scale mode of " + which + " '" + std::string(nibble::name(s)) +
                                  "' is not in the tile's scale_modes (" + modes + ")");
    }
  }
  const int step = std::min(block_cols(shape.block_a), block_cols(shape.block_b));
  if (step > cfg.lanes) {
    throw std::invalid_argument(who + ": a k-block of " + std::to_string(step) + " elements needs lanes >= " +
                                std::to_string(step) + " (the tile has " + std::to_string(cfg.lanes) + ")");
  }
}

Tiling plan_tiling(const ArchConfig& arch, const GemmShape& shape, bool reuse) {
  const detail::TileSequence seq(arch.tile, shape);
  Tiling t;
  t.tm = seq.tiles_m();
  t.tn = seq.tiles_n();
  t.nk = seq.kblocks();
  t.a_bytes = seq.a_row_bytes() * static_cast<uint64_t>(shape.m);
  t.b_bytes = seq.b_row_bytes() * static_cast<uint64_t>(shape.n);
  t.a_panel_bytes = seq.a_row_bytes() * static_cast<uint64_t>(arch.tile.rows);
  t.b_panel_bytes = seq.b_row_bytes() * static_cast<uint64_t>(arch.tile.cols);
  if (!reuse) return t;
  const double halve = arch.double_buffer ? 0.5 : 1.0;
  const double a_total = static_cast<double>(t.a_bytes), b_total = static_cast<double>(t.b_bytes);
  const int64_t min_windows = std::min<int64_t>(arch.tiles, t.tm * t.tn);
  t.buffer_streams = !best_window(t.tm, t.tn, static_cast<double>(t.a_panel_bytes), static_cast<double>(t.b_panel_bytes),
                                  static_cast<double>(arch.operand_buffer_bytes) * halve, min_windows, a_total, b_total,
                                  t.wm, t.wn);
  t.sm = t.wm;
  t.sn = t.wn;
  t.sram_streams = true;
  if (arch.sram) {
    int64_t a = 1, b = 1;
    t.sram_streams = !best_window(ceil_div(t.tm, t.wm), ceil_div(t.tn, t.wn),
                                  static_cast<double>(t.a_panel_bytes) * static_cast<double>(t.wm),
                                  static_cast<double>(t.b_panel_bytes) * static_cast<double>(t.wn),
                                  static_cast<double>(arch.sram->bytes) * halve, 1, a_total, b_total, a, b);
    t.sm = a * t.wm;
    t.sn = b * t.wn;
  }
  return t;
}

}  // namespace nibble::sim
