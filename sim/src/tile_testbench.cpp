#include "tile_testbench.h"

#include <algorithm>
#include <cstdlib>
#include <stdexcept>
#include <string>

#include "nibble/dot.h"
#include "nibble/scale.h"
#include "tile_sequence.h"

namespace nibble::sim::detail {
namespace {

using model::TileBeat;
using model::TileRow;

// A fresh simulation context per run: SystemC cannot elaborate after a run has
// started, and each GEMM has its own module instances. Declared before the run's
// modules, so it is deleted after them, on every exit: a program that runs many
// GEMMs keeps none of the earlier runs' contexts.
class RunContext {
 public:
  RunContext() : context_(new sc_core::sc_simcontext) {
    sc_core::sc_curr_simcontext = context_;
    sc_core::sc_default_global_context = context_;
  }
  ~RunContext() {
    delete context_;
    sc_core::sc_curr_simcontext = nullptr;
    sc_core::sc_default_global_context = nullptr;
  }
  RunContext(const RunContext&) = delete;
  RunContext& operator=(const RunContext&) = delete;

 private:
  sc_core::sc_simcontext* context_;
};

// Rising edges with rst_n low before cycle 0.
constexpr int kResetEdges = 3;

SC_MODULE(tile_testbench) {
  sc_core::sc_clock clk;
  sc_core::sc_in<bool> clk_i;
  model::TileSignals sig;
  std::unique_ptr<sc_core::sc_module> dut;

  tile_testbench(sc_core::sc_module_name name, const model::TileConfig& cfg, const StallConfig& st,
                 const ProgressFn& progress, const QuantizedTensor& a, const QuantizedTensor& b,
                 const TileSequence& seq, std::vector<float>& c, const DutFactory& make_dut)
      : sc_core::sc_module(name),
        clk("clk", 1, sc_core::SC_NS),
        clk_i("clk_i"),
        cfg_(cfg),
        in_coin_(input_coin(st)),
        out_coin_(output_coin(st)),
        progress_(progress),
        a_(a),
        b_(b),
        seq_(seq),
        c_(c) {
    clk_i(clk);
    dut = make_dut(clk, sig);
    SC_CTHREAD(run, clk_i.pos());
  }
  SC_HAS_PROCESS(tile_testbench);

  bool finished = false;
  GemmStats stats;

 private:
  // Fills one panel (rows of q from r0, up to panel_rows rows) for k-block k0.
  void fill_panel(const QuantizedTensor& q, int64_t r0, int64_t panel_rows, int64_t k0, int64_t count,
                  std::vector<uint8_t>& codes, std::vector<uint32_t>& scales) const {
    const size_t lanes = static_cast<size_t>(cfg_.lanes);
    codes.assign(static_cast<size_t>(panel_rows) * lanes, 0);
    scales.assign(static_cast<size_t>(panel_rows), 0);
    for (int64_t m = 0; m < panel_rows; ++m) {
      const int64_t r = r0 + m;
      if (r >= q.rows) break;
      const uint8_t* src = &q.codes[static_cast<size_t>(r * q.cols + k0)];
      std::copy(src, src + count, codes.begin() + static_cast<std::ptrdiff_t>(static_cast<size_t>(m) * lanes));
      scales[static_cast<size_t>(m)] = q.scale_code_at(r, k0);
    }
  }

  // Beat number i (tiles row-major, k-blocks in increasing k); returns its fetch cycles.
  uint64_t make_beat(uint64_t i, TileBeat& beat) {
    const int64_t nk = seq_.kblocks();
    const int64_t tile = static_cast<int64_t>(i) / nk, kb = static_cast<int64_t>(i) % nk;
    const int64_t ti = tile / seq_.tiles_n(), tj = tile % seq_.tiles_n();
    beat.first = kb == 0;
    beat.last = kb == nk - 1;
    beat.format_a = a_.config.format;
    beat.format_b = b_.config.format;
    beat.scale_format_a = scale_format(a_.config.scale);
    beat.scale_format_b = scale_format(b_.config.scale);
    const int64_t k0 = kb * seq_.step();
    const int64_t count = seq_.count(kb);
    beat.count = static_cast<uint32_t>(count);
    fill_panel(a_, ti * cfg_.rows, cfg_.rows, k0, count, beat.codes_a, beat.scales_a);
    fill_panel(b_, tj * cfg_.cols, cfg_.cols, k0, count, beat.codes_b, beat.scales_b);
    const uint64_t bytes = seq_.bytes(seq_.rows_a(tile), seq_.rows_b(tile), count);
    stats.operand_bytes += bytes;
    return seq_.fetch_cycles(bytes);
  }

  void run() {
    for (int i = 1; i < kResetEdges; ++i) sc_core::wait();
    sig.rst_n.write(true);

    const uint64_t total_beats = seq_.beats();
    const uint64_t total_tiles = seq_.tiles();
    uint64_t next = 0;          // the next beat to offer
    bool offering = false;      // in_valid is high with beat `next - 1`
    uint64_t ready_at = make_beat(0, beat_) - 1 + in_coin_.run();  // fetch cycles 0..f-1, then bubbles
    bool out_refused = false;   // the output buffer's tile met out_ready low
    int expect_row = 0;
    uint64_t tiles_done = 0;
    for (uint64_t cyc = 0;; ++cyc) {
      // Drive cycle `cyc`.
      if (!offering && next < total_beats && cyc >= ready_at) {
        sig.in_beat.write(beat_);
        sig.in_valid.write(true);
        offering = true;
        ++next;
      }
      sig.out_ready.write(!out_coin_.flip());
      sc_core::wait();

      // The handshakes of cycle `cyc`, as the tile's registers saw them.
      const bool accepted = offering && sig.in_ready.read();
      const bool out_valid = sig.out_valid.read();
      const bool out_ready = sig.out_ready.read();
      if (out_valid && !out_ready) out_refused = true;
      if (accepted) {
        ++stats.beats;
        offering = false;
        sig.in_valid.write(false);
        if (next < total_beats) ready_at = cyc + make_beat(next, beat_) + in_coin_.run();
      } else if (offering) {
        ++(out_refused ? stats.stall_output : stats.stall_pipeline);
      } else if (next < total_beats) {
        ++stats.stall_operand;
      } else {
        ++stats.stall_pipeline;
      }
      if (out_valid && out_ready) {
        const TileRow& row = sig.out_row.read();
        if (row.row != expect_row || row.last != (expect_row == cfg_.rows - 1) ||
            row.c.size() != static_cast<size_t>(cfg_.cols)) {
          SC_REPORT_ERROR("tile_testbench", ("unexpected C row " + std::to_string(row.row) + " (expected " +
                                             std::to_string(expect_row) + ")").c_str());
        }
        store_row(tiles_done, row);
        if (++expect_row == cfg_.rows) {
          expect_row = 0;
          out_refused = false;
          ++tiles_done;
          // About a hundred progress reports per run, at tile boundaries.
          if (progress_ && (tiles_done % std::max<uint64_t>(1, total_tiles / 100) == 0 || tiles_done == total_tiles)) {
            progress_(tiles_done, total_tiles);
          }
          if (tiles_done == total_tiles) {
            stats.cycles = cyc + 1;
            finished = true;
            sc_core::sc_stop();
            for (;;) sc_core::wait();
          }
        }
      }
    }
  }

  void store_row(uint64_t tile, const TileRow& row) {
    const int64_t ti = static_cast<int64_t>(tile) / seq_.tiles_n(), tj = static_cast<int64_t>(tile) % seq_.tiles_n();
    const int64_t m = ti * cfg_.rows + row.row;
    if (m >= a_.rows) return;
    for (int64_t n = 0; n < cfg_.cols; ++n) {
      const int64_t col = tj * cfg_.cols + n;
      if (col >= b_.rows) break;
      // The per-tensor decode scales, once per C element as it leaves the tile (golden's dot_rows).
      c_[static_cast<size_t>(m * b_.rows + col)] =
          apply_tensor_scales(row.c[static_cast<size_t>(n)], a_.tensor.decode, b_.tensor.decode);
    }
  }

  model::TileConfig cfg_;
  Coin in_coin_, out_coin_;
  ProgressFn progress_;
  const QuantizedTensor& a_;
  const QuantizedTensor& b_;
  TileSequence seq_;
  std::vector<float>& c_;
  // The beat on offer. A member, not a local of run(): run() never returns (it waits
  // forever after sc_stop) and SystemC drops a thread's stack without unwinding it, so
  // a local's buffers would never be freed.
  TileBeat beat_;
};

}  // namespace

GemmResult run_tile_testbench(const std::string& who, const model::TileConfig& cfg, const StallConfig& stalls,
                              const ProgressFn& progress, const QuantizedTensor& a, const QuantizedTensor& b,
                              const DutFactory& make_dut, const TestbenchHooks& hooks) {
  const TileSequence seq(cfg, a, b);
  const uint64_t tiles = seq.tiles();
  // Reaching the bound means the tile deadlocked.
  const uint64_t bound = cycle_bound(who, cfg, stalls, seq);

  GemmResult res;
  res.m = a.rows;
  res.n = b.rows;
  res.c.assign(static_cast<size_t>(a.rows * b.rows), 0.0f);

  setenv("SYSC_DISABLE_COPYRIGHT_MESSAGE", "1", 0);
  const RunContext context;
  // Every run ends with sc_stop(); SystemC's note about it is noise here.
  sc_core::sc_report_handler::set_actions("/OSCI/SystemC", sc_core::SC_INFO, sc_core::SC_DO_NOTHING);
  auto top = std::make_unique<tile_testbench>("gemm", cfg, stalls, progress, a, b, seq, res.c, make_dut);

  sc_core::sc_trace_file* vcd = nullptr;
  if (!hooks.vcd_path.empty()) {
    std::string base = hooks.vcd_path;
    if (base.size() > 4 && base.compare(base.size() - 4, 4, ".vcd") == 0) base.resize(base.size() - 4);
    vcd = sc_core::sc_create_vcd_trace_file(base.c_str());
    vcd->set_time_unit(1, sc_core::SC_NS);
    sc_core::sc_trace(vcd, top->clk, "clk");
    sc_core::sc_trace(vcd, top->sig.rst_n, "rst_n");
    sc_core::sc_trace(vcd, top->sig.in_valid, "in_valid");
    sc_core::sc_trace(vcd, top->sig.in_ready, "in_ready");
    sc_core::sc_trace(vcd, top->sig.out_valid, "out_valid");
    sc_core::sc_trace(vcd, top->sig.out_ready, "out_ready");
    sc_core::sc_trace(vcd, top->sig.in_beat, "in");    // in.first, in.last
    sc_core::sc_trace(vcd, top->sig.out_row, "out");   // out.row, out.last
  }

  sc_core::sc_start(sc_core::SC_ZERO_TIME);
  if (hooks.after_elaboration) hooks.after_elaboration();
  sc_core::sc_start(sc_core::sc_time(static_cast<double>(bound), sc_core::SC_NS));
  if (hooks.at_end) hooks.at_end();
  if (vcd) sc_core::sc_close_vcd_trace_file(vcd);
  if (!top->finished) {
    throw std::runtime_error(who + ": the simulation did not finish within " + std::to_string(bound) +
                             " cycles (deadlock)");
  }
  GemmStats s = top->stats;
  s.tiles = tiles;
  s.macs = static_cast<uint64_t>(a.rows) * static_cast<uint64_t>(b.rows) * static_cast<uint64_t>(a.cols);
  s.peak_macs_per_cycle =
      static_cast<uint64_t>(cfg.rows) * static_cast<uint64_t>(cfg.cols) * static_cast<uint64_t>(cfg.lanes);
  res.stats = s;
  top.reset();
  return res;
}

}  // namespace nibble::sim::detail
