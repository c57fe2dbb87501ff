#include "nibble/sim/rtl_device.h"

#include <systemc.h>

#include <memory>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "nibble/fp32.h"
#include "nibble/model/nibble_tile.h"
#include "nibble_rtl_tiles.h"  // generated: the Verilated shapes (NIBBLE_RTL_TILES)
#include "tile_testbench.h"
#if NIBBLE_RTL_TILE_COUNT > 0
#include "verilated_fst_sc.h"
#endif

namespace nibble::sim {
namespace {

using model::TileBeat;
using model::TileRow;

// The data type of a Verilated port member (sc_in<T>& / sc_out<T>&): bool,
// uint32_t, uint64_t or sc_bv<W>, by width.
template <class Port>
using port_data_t = typename std::remove_reference_t<Port>::data_type;

class rtl_tile_base : public sc_core::sc_module {
 public:
  using sc_core::sc_module::sc_module;
  virtual void bind(sc_core::sc_clock& clk, model::TileSignals& s) = 0;
  virtual void open_trace(const std::string& path) = 0;
  virtual void close_trace() = 0;
};

#if NIBBLE_RTL_TILE_COUNT > 0
template <class T>
T from_words(const std::vector<uint32_t>& w) {
  if constexpr (std::is_integral_v<T>) {
    uint64_t v = w.empty() ? 0 : w[0];
    if (w.size() > 1) v |= static_cast<uint64_t>(w[1]) << 32;
    return static_cast<T>(v);
  } else {
    T v;
    for (size_t i = 0; i < w.size(); ++i) v.set_word(static_cast<int>(i), w[i]);
    return v;
  }
}

template <class T>
uint32_t word_of(const T& v, unsigned i) {
  if constexpr (std::is_integral_v<T>) {
    return i < 2 ? static_cast<uint32_t>(static_cast<uint64_t>(v) >> (32 * i)) : 0u;
  } else {
    return static_cast<uint32_t>(v.get_word(static_cast<int>(i)));
  }
}


// The Verilated tile V (an SC_MODULE with the RTL's pins) behind the model's
// ports: a TileBeat is packed onto the pins, the output pins become a TileRow.
// Both conversions are combinational (SC_METHODs), so the handshakes keep the
// RTL's timing.
template <class V>
class rtl_tile : public rtl_tile_base {
 public:
  sc_core::sc_in<bool> clk_i{"clk_i"};
  sc_core::sc_in<bool> rst_ni{"rst_ni"};
  sc_core::sc_in<bool> in_valid_i{"in_valid_i"};
  sc_core::sc_out<bool> in_ready_o{"in_ready_o"};
  sc_core::sc_in<TileBeat> in_beat_i{"in_beat_i"};
  sc_core::sc_out<bool> out_valid_o{"out_valid_o"};
  sc_core::sc_in<bool> out_ready_i{"out_ready_i"};
  sc_core::sc_out<TileRow> out_row_o{"out_row_o"};

  rtl_tile(sc_core::sc_module_name name, int rows, int cols, int lanes)
      : rtl_tile_base(name), rows_(rows), cols_(cols), lanes_(lanes), dut_("u_nibble_tile") {
    dut_.clk_i(clk_i);
    dut_.rst_ni(rst_ni);
    dut_.in_valid_i(valid_);
    dut_.in_ready_o(in_ready_o);
    dut_.in_first_i(first_);
    dut_.in_last_i(last_);
    dut_.format_a_i(format_a_);
    dut_.format_b_i(format_b_);
    dut_.scale_format_a_i(scale_format_a_);
    dut_.scale_format_b_i(scale_format_b_);
    dut_.codes_a_i(codes_a_);
    dut_.scales_a_i(scales_a_);
    dut_.codes_b_i(codes_b_);
    dut_.scales_b_i(scales_b_);
    dut_.out_valid_o(out_valid_o);
    dut_.out_ready_i(out_ready_);
    dut_.out_row_o(out_row_);
    dut_.out_last_o(out_last_);
    dut_.out_c_o(out_c_);
    // in_valid and out_ready pass through drive() too, so that every input pin of a
    // cycle changes in one delta cycle: one combinational evaluation of the model.
    SC_METHOD(drive);
    sensitive << in_beat_i << in_valid_i << out_ready_i;
    SC_METHOD(collect);
    sensitive << out_row_ << out_last_ << out_c_;
  }
  SC_HAS_PROCESS(rtl_tile);

  void bind(sc_core::sc_clock& clk, model::TileSignals& s) override {
    clk_i(clk);
    rst_ni(s.rst_n);
    in_valid_i(s.in_valid);
    in_ready_o(s.in_ready);
    in_beat_i(s.in_beat);
    out_valid_o(s.out_valid);
    out_ready_i(s.out_ready);
    out_row_o(s.out_row);
  }

  void open_trace(const std::string& path) override {
    fst_ = std::make_unique<VerilatedFstSc>();
    dut_.trace(fst_.get(), 99);
    fst_->open(path.c_str());
  }
  void close_trace() override {
    if (fst_) fst_->close();
  }

 private:
  using CodesA = port_data_t<decltype(std::declval<V&>().codes_a_i)>;
  using ScalesA = port_data_t<decltype(std::declval<V&>().scales_a_i)>;
  using CodesB = port_data_t<decltype(std::declval<V&>().codes_b_i)>;
  using ScalesB = port_data_t<decltype(std::declval<V&>().scales_b_i)>;
  using OutC = port_data_t<decltype(std::declval<V&>().out_c_o)>;
  using Sel = port_data_t<decltype(std::declval<V&>().format_a_i)>;
  using Row = port_data_t<decltype(std::declval<V&>().out_row_o)>;

  // codes [panel_rows][Lanes][4 bits] and scales [panel_rows][32 bits], packed little-endian.
  void pack_codes(const std::vector<uint8_t>& codes, int panel_rows, std::vector<uint32_t>& w) const {
    w.assign(static_cast<size_t>(panel_rows * lanes_ * 4 + 31) / 32, 0u);
    for (size_t i = 0; i < codes.size() && i < static_cast<size_t>(panel_rows * lanes_); ++i) {
      w[i / 8] |= static_cast<uint32_t>(codes[i] & 0xFu) << (4 * (i % 8));
    }
  }
  static void pack_scales(const std::vector<uint32_t>& scales, int panel_rows, std::vector<uint32_t>& w) {
    w.assign(static_cast<size_t>(panel_rows), 0u);
    for (size_t i = 0; i < scales.size() && i < w.size(); ++i) w[i] = scales[i];
  }

  void drive() {
    valid_.write(in_valid_i.read());
    out_ready_.write(out_ready_i.read());
    if (!in_beat_i.event() && packed_once_) return;
    packed_once_ = true;
    const TileBeat& b = in_beat_i.read();
    first_.write(b.first);
    last_.write(b.last);
    format_a_.write(static_cast<Sel>(b.format_a));
    format_b_.write(static_cast<Sel>(b.format_b));
    scale_format_a_.write(static_cast<Sel>(b.scale_format_a));
    scale_format_b_.write(static_cast<Sel>(b.scale_format_b));
    pack_codes(b.codes_a, rows_, words_);
    codes_a_.write(from_words<CodesA>(words_));
    pack_codes(b.codes_b, cols_, words_);
    codes_b_.write(from_words<CodesB>(words_));
    pack_scales(b.scales_a, rows_, words_);
    scales_a_.write(from_words<ScalesA>(words_));
    pack_scales(b.scales_b, cols_, words_);
    scales_b_.write(from_words<ScalesB>(words_));
  }

  void collect() {
    TileRow r;
    r.row = static_cast<int>(out_row_.read());
    r.last = out_last_.read();
    r.c.resize(static_cast<size_t>(cols_));
    const OutC& c = out_c_.read();
    for (int n = 0; n < cols_; ++n) r.c[static_cast<size_t>(n)] = f32_from_bits(word_of(c, static_cast<unsigned>(n)));
    out_row_o.write(r);
  }

  int rows_, cols_, lanes_;
  V dut_;
  sc_core::sc_signal<bool> valid_{"in_valid"}, out_ready_{"out_ready"};
  sc_core::sc_signal<bool> first_{"in_first"}, last_{"in_last"}, out_last_{"out_last"};
  bool packed_once_ = false;
  sc_core::sc_signal<Sel> format_a_{"format_a"}, format_b_{"format_b"}, scale_format_a_{"scale_format_a"},
      scale_format_b_{"scale_format_b"};
  sc_core::sc_signal<CodesA> codes_a_{"codes_a"};
  sc_core::sc_signal<ScalesA> scales_a_{"scales_a"};
  sc_core::sc_signal<CodesB> codes_b_{"codes_b"};
  sc_core::sc_signal<ScalesB> scales_b_{"scales_b"};
  sc_core::sc_signal<Row> out_row_{"out_row"};
  sc_core::sc_signal<OutC> out_c_{"out_c"};
  std::vector<uint32_t> words_;
  std::unique_ptr<VerilatedFstSc> fst_;
};

#endif  // NIBBLE_RTL_TILE_COUNT > 0

struct ShapeEntry {
  int rows, cols, lanes;
  std::unique_ptr<rtl_tile_base> (*make)(const char* name);
};

#if NIBBLE_RTL_TILE_COUNT > 0
template <class V, int R, int C, int L>
std::unique_ptr<rtl_tile_base> make_tile(const char* name) {
  return std::make_unique<rtl_tile<V>>(name, R, C, L);
}
#endif

const std::vector<ShapeEntry>& shape_table() {
#define NIBBLE_RTL_TILE_ENTRY(r, c, l, V) ShapeEntry{r, c, l, &make_tile<V, r, c, l>},
  static const std::vector<ShapeEntry> table = {NIBBLE_RTL_TILES(NIBBLE_RTL_TILE_ENTRY)};
#undef NIBBLE_RTL_TILE_ENTRY
  return table;
}

const ShapeEntry* find_shape(int rows, int cols, int lanes) {
  for (const ShapeEntry& e : shape_table()) {
    if (e.rows == rows && e.cols == cols && e.lanes == lanes) return &e;
  }
  return nullptr;
}

std::string shape_name(int rows, int cols, int lanes) {
  return std::to_string(rows) + "x" + std::to_string(cols) + "x" + std::to_string(lanes);
}

}  // namespace

std::vector<std::string> RtlDevice::shapes() {
  std::vector<std::string> out;
  for (const ShapeEntry& e : shape_table()) out.push_back(shape_name(e.rows, e.cols, e.lanes));
  return out;
}

bool RtlDevice::has_shape(int rows, int cols, int lanes) { return find_shape(rows, cols, lanes) != nullptr; }

RtlDevice::RtlDevice(const model::TileConfig& cfg, StallConfig stalls, ProgressFn progress, std::string fst_path,
                     uint64_t seed)
    : cfg_(cfg), stalls_(stalls), progress_(std::move(progress)), fst_path_(std::move(fst_path)), seed_(seed) {
  model::validate(cfg_);
  if (!has_shape(cfg_.rows, cfg_.cols, cfg_.lanes)) {
    std::string have;
    for (const std::string& s : shapes()) have += (have.empty() ? "" : ", ") + s;
    throw std::invalid_argument("rtl: this build has no Verilated nibble_tile of " +
                                shape_name(cfg_.rows, cfg_.cols, cfg_.lanes) + " (rows x cols x lanes); " +
                                (have.empty() ? std::string("it has none (built without Verilator)")
                                              : "it has " + have));
  }
  if (cfg_.latency != model::kRtlTileLatency) {
    throw std::invalid_argument("rtl: the RTL tile's latency is " + std::to_string(model::kRtlTileLatency) +
                                " cycles; the configuration asks for " + std::to_string(cfg_.latency));
  }
  validate(stalls_, "rtl");
}

void RtlDevice::check_operands(const QuantizedTensor& a, const QuantizedTensor& b) const {
  detail::check_tile_operands("rtl", cfg_, a, b);
}

GemmResult RtlDevice::run(const QuantizedTensor& a, const QuantizedTensor& b) {
  check_operands(a, b);
  const ShapeEntry* shape = find_shape(cfg_.rows, cfg_.cols, cfg_.lanes);
#if NIBBLE_RTL_TILE_COUNT > 0
  VerilatedContext* ctx = Verilated::threadContextp();
  ctx->randReset(2);  // every initial register value random (--x-initial unique), from the seed
  ctx->randSeed(static_cast<int>(seed_ % 0x7FFF'FFFFu) + 1);
  if (!fst_path_.empty()) ctx->traceEverOn(true);
#endif
  rtl_tile_base* tile = nullptr;
  const detail::DutFactory make = [shape, &tile](sc_core::sc_clock& clk, model::TileSignals& s) {
    std::unique_ptr<rtl_tile_base> t = shape->make("rtl_tile");
    t->bind(clk, s);
    tile = t.get();
    return std::unique_ptr<sc_core::sc_module>(std::move(t));
  };
  detail::TestbenchHooks hooks;
  if (!fst_path_.empty()) {
    hooks.after_elaboration = [&tile, this] { tile->open_trace(fst_path_); };
    hooks.at_end = [&tile] { tile->close_trace(); };
  }
  return detail::run_tile_testbench("rtl", cfg_, stalls_, progress_, a, b, make, hooks);
}

}  // namespace nibble::sim
