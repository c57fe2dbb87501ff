#include "nibble/sim/systemc_device.h"

#include <systemc.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <memory>
#include <stdexcept>
#include <string>

#include "nibble/dot.h"
#include "nibble/fp32.h"
#include "nibble/model/channel.h"
#include "nibble/model/nibble_tile.h"

namespace nibble::sim {
namespace {

using model::Channel;
using model::TileBeat;
using model::TileRow;

int scale_bytes(ScaleFormat f) { return f == ScaleFormat::kFP32 ? 4 : 1; }

// The sequencer around one nibble_tile: operand buffer -> tile -> C drain.
SC_MODULE(gemm_sequencer) {
  sc_core::sc_clock clk;
  sc_core::sc_in<bool> clk_i;
  Channel<TileBeat> beats;
  Channel<TileRow> rows;
  model::nibble_tile tile;

  gemm_sequencer(sc_core::sc_module_name name, const model::TileConfig& cfg, const StallConfig& st,
                 const ProgressFn& progress, const QuantizedTensor& a, const QuantizedTensor& b, int64_t step,
                 uint64_t total_beats, std::vector<float>& c)
      : sc_core::sc_module(name),
        clk("clk", 1, sc_core::SC_NS),
        clk_i("clk_i"),
        beats("beats"),
        rows("rows"),
        tile("nibble_tile", cfg, beats, rows, total_beats),
        cfg_(cfg),
        in_stall_(st.input, st.seed * 2 + 1),
        out_stall_(st.output, st.seed * 2 + 2),
        progress_(progress),
        a_(a),
        b_(b),
        step_(step),
        c_(c) {
    tile.clk_i(clk);
    clk_i(clk);
    SC_CTHREAD(operand_buffer, clk_i.pos());
    SC_CTHREAD(drain, clk_i.pos());
  }
  SC_HAS_PROCESS(gemm_sequencer);

  int64_t tiles_m() const { return (a_.rows + cfg_.rows - 1) / cfg_.rows; }
  int64_t tiles_n() const { return (b_.rows + cfg_.cols - 1) / cfg_.cols; }
  int64_t kblocks() const { return (a_.cols + step_ - 1) / step_; }

  bool finished = false;
  uint64_t end_cycle = 0;
  uint64_t operand_bytes = 0;

 private:
  // Fills one panel (rows of q from r0, up to `count` rows) for k-block k0.
  int64_t fill_panel(const QuantizedTensor& q, int64_t r0, int64_t panel_rows, int64_t k0, int64_t count,
                     std::vector<uint8_t>& codes, std::vector<uint32_t>& scales) const {
    const size_t lanes = static_cast<size_t>(cfg_.lanes);
    codes.assign(static_cast<size_t>(panel_rows) * lanes, 0);
    scales.assign(static_cast<size_t>(panel_rows), 0);
    int64_t real = 0;
    for (int64_t m = 0; m < panel_rows; ++m) {
      const int64_t r = r0 + m;
      if (r >= q.rows) break;
      ++real;
      const uint8_t* src = &q.codes[static_cast<size_t>(r * q.cols + k0)];
      std::copy(src, src + count, codes.begin() + static_cast<std::ptrdiff_t>(static_cast<size_t>(m) * lanes));
      scales[static_cast<size_t>(m)] = q.scale_code_at(r, k0);
    }
    return real;
  }

  void operand_buffer() {
    const int64_t nk = kblocks();
    for (int64_t ti = 0; ti < tiles_m(); ++ti) {
      for (int64_t tj = 0; tj < tiles_n(); ++tj) {
        for (int64_t kb = 0; kb < nk; ++kb) {
          TileBeat beat;
          beat.first = kb == 0;
          beat.last = kb == nk - 1;
          beat.format_a = a_.config.format;
          beat.format_b = b_.config.format;
          beat.scale_format_a = scale_format(a_.config.scale);
          beat.scale_format_b = scale_format(b_.config.scale);
          const int64_t k0 = kb * step_;
          const int64_t count = std::min(step_, a_.cols - k0);
          beat.count = static_cast<uint32_t>(count);
          const int64_t ra = fill_panel(a_, ti * cfg_.rows, cfg_.rows, k0, count, beat.codes_a, beat.scales_a);
          const int64_t rb = fill_panel(b_, tj * cfg_.cols, cfg_.cols, k0, count, beat.codes_b, beat.scales_b);
          const int64_t code_bytes = (count + 1) / 2;
          const int64_t bytes = ra * (code_bytes + scale_bytes(beat.scale_format_a)) +
                                rb * (code_bytes + scale_bytes(beat.scale_format_b));
          operand_bytes += static_cast<uint64_t>(bytes);
          const double fetch = std::ceil(static_cast<double>(bytes) / cfg_.bandwidth);
          const uint64_t f = std::max<uint64_t>(1, static_cast<uint64_t>(fetch));
          for (uint64_t i = 1; i < f; ++i) sc_core::wait();
          in_stall_.maybe_stall();
          beats.Push(beat);
          sc_core::wait();
        }
      }
    }
    for (;;) sc_core::wait();
  }

  void drain() {
    const int64_t n_total = b_.rows;
    const uint64_t total = static_cast<uint64_t>(tiles_m() * tiles_n());
    uint64_t done = 0;
    for (int64_t ti = 0; ti < tiles_m(); ++ti) {
      for (int64_t tj = 0; tj < tiles_n(); ++tj) {
        for (int r = 0; r < cfg_.rows; ++r) {
          out_stall_.maybe_stall();
          const TileRow row = rows.Pop();
          const int64_t m = ti * cfg_.rows + row.row;
          for (int64_t n = 0; n < cfg_.cols; ++n) {
            const int64_t col = tj * cfg_.cols + n;
            if (m >= a_.rows || col >= n_total) continue;
            c_[static_cast<size_t>(m * n_total + col)] =
                apply_tensor_scales(row.c[static_cast<size_t>(n)], a_.tensor.decode, b_.tensor.decode);
          }
          if (r + 1 < cfg_.rows) sc_core::wait();
        }
        ++done;
        if (progress_ && (done % 64 == 0 || done == total)) progress_(done, total);
        if (done < total) sc_core::wait();
      }
    }
    end_cycle = static_cast<uint64_t>(sc_core::sc_time_stamp() / clk.period());
    finished = true;
    sc_core::sc_stop();
    for (;;) sc_core::wait();
  }

  model::TileConfig cfg_;
  model::StallInjector in_stall_, out_stall_;
  ProgressFn progress_;
  const QuantizedTensor& a_;
  const QuantizedTensor& b_;
  int64_t step_;
  std::vector<float>& c_;
};

}  // namespace

SystemCDevice::SystemCDevice(const model::TileConfig& cfg, StallConfig stalls, ProgressFn progress)
    : cfg_(cfg), stalls_(stalls), progress_(std::move(progress)) {
  model::validate(cfg_);
  if (stalls_.input < 0.0 || stalls_.input >= 1.0 || stalls_.output < 0.0 || stalls_.output >= 1.0) {
    throw std::invalid_argument("SystemCDevice: stall probabilities must be in [0, 1)");
  }
  setenv("SYSC_DISABLE_COPYRIGHT_MESSAGE", "1", 0);
  // Every run ends with sc_stop(); SystemC's note about it is noise here.
  sc_core::sc_report_handler::set_actions("/OSCI/SystemC", sc_core::SC_INFO, sc_core::SC_DO_NOTHING);
}

void SystemCDevice::check_operands(const QuantizedTensor& a, const QuantizedTensor& b) const {
  if (a.rows <= 0 || b.rows <= 0 || a.cols <= 0) throw std::invalid_argument("systemc: empty operands");
  if (a.cols != b.cols) {
    throw std::invalid_argument("systemc: contraction lengths differ (" + std::to_string(a.cols) + " vs " +
                                std::to_string(b.cols) + ")");
  }
  if (!(a.config.rht == b.config.rht) || (a.config.rht.enabled() && a.config.seed != b.config.seed)) {
    throw std::invalid_argument("systemc: operands must share the RHT size, bf16 option and seed");
  }
  for (const QuantizedTensor* q : {&a, &b}) {
    const char* which = q == &a ? "A" : "B";
    if (!cfg_.allows(q->config.format)) {
      throw std::invalid_argument(std::string("systemc: format of ") + which + " '" +
                                  std::string(nibble::name(q->config.format)) + "' is not in the tile's formats");
    }
    if (!cfg_.allows(q->config.scale)) {
      throw std::invalid_argument(std::string("systemc: scale mode of ") + which + " '" +
                                  std::string(nibble::name(q->config.scale)) + "' is not in the tile's scale_modes");
    }
  }
  const int step = std::min(block_cols(a.config.block), block_cols(b.config.block));
  if (step > cfg_.lanes) {
    throw std::invalid_argument("systemc: a k-block of " + std::to_string(step) + " elements needs lanes >= " +
                                std::to_string(step) + " (the tile has " + std::to_string(cfg_.lanes) + ")");
  }
}

GemmResult SystemCDevice::run(const QuantizedTensor& a, const QuantizedTensor& b) {
  check_operands(a, b);
  const int64_t step = std::min(block_cols(a.config.block), block_cols(b.config.block));
  GemmResult res;
  res.m = a.rows;
  res.n = b.rows;
  res.c.assign(static_cast<size_t>(a.rows * b.rows), 0.0f);

  const uint64_t tiles = static_cast<uint64_t>(((a.rows + cfg_.rows - 1) / cfg_.rows) *
                                               ((b.rows + cfg_.cols - 1) / cfg_.cols));
  const uint64_t nk = static_cast<uint64_t>((a.cols + step - 1) / step);
  const uint64_t total_beats = tiles * nk;

  // A fresh simulation context per run: SystemC cannot elaborate after a run
  // has started, and each GEMM has its own module instances. The old context
  // is left allocated (SystemC 2.3 does not tear one down reliably).
  sc_core::sc_curr_simcontext = new sc_core::sc_simcontext;
  sc_core::sc_default_global_context = sc_core::sc_curr_simcontext;
  auto top = std::make_unique<gemm_sequencer>("gemm", cfg_, stalls_, progress_, a, b, step, total_beats, res.c);

  // A generous bound: every beat's fetch plus every tile's drain, stretched by
  // the injected stalls. Reaching it means the model deadlocked.
  const uint64_t max_bytes = static_cast<uint64_t>(cfg_.rows + cfg_.cols) * static_cast<uint64_t>(cfg_.lanes / 2 + 4);
  const uint64_t f = static_cast<uint64_t>(std::ceil(static_cast<double>(max_bytes) / cfg_.bandwidth)) + 1;
  const uint64_t bound = (total_beats * f + tiles * static_cast<uint64_t>(cfg_.latency + 2 * cfg_.rows + 4) + 100) * 20;
  sc_core::sc_start(sc_core::sc_time(static_cast<double>(bound), sc_core::SC_NS));
  if (!top->finished) throw std::runtime_error("systemc: the simulation did not finish within " +
                                               std::to_string(bound) + " cycles (deadlock)");

  const model::TileCounters& k = top->tile.counters();
  GemmStats s;
  s.cycles = top->end_cycle + 1;
  s.tiles = tiles;
  s.beats = k.beats;
  s.macs = static_cast<uint64_t>(a.rows) * static_cast<uint64_t>(b.rows) * static_cast<uint64_t>(a.cols);
  s.peak_macs_per_cycle =
      static_cast<uint64_t>(cfg_.rows) * static_cast<uint64_t>(cfg_.cols) * static_cast<uint64_t>(cfg_.lanes);
  s.stall_operand = k.stall_operand;
  s.stall_output = k.stall_output;
  s.stall_pipeline = k.stall_pipeline;
  s.operand_bytes = top->operand_bytes;
  res.stats = s;
  top.reset();
  return res;
}

}  // namespace nibble::sim
