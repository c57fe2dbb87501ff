// nibble_tile against golden's gemm, swept over two Verilated shapes (each test body is a
// template over the shape, instantiated once per model; the default shape keeps the plain
// test names, so FST file names stay <Suite>.<Test>.fst): the
// defaults (4 x 4 DPUs of 16 lanes) and tb_tile_wide (8 x 4 DPUs of 32 lanes), every format.
// Random GEMMs cut into Rows x Cols output tiles, streamed through the tile with random input
// bubbles and random output back-pressure; every C element compared bit for bit (after the
// per-tensor scales, applied on the host as dot_rows does).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <deque>
#include <limits>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <variant>
#include <vector>

#include "Vnibble_tile.h"
#include "Vnibble_tile_nibble_pkg.h"
#include "Vtb_tile_wide.h"
#include "nibble/dot.h"
#include "nibble/fp32.h"
#include "nibble/model/config.h"
#include "nibble/quantize.h"
#include "nibble/scale.h"
#include "nibble/vectors.h"
#include "rtl_harness.h"

namespace nibble::rtl_test {
namespace {

constexpr unsigned kDpuLatency = Vnibble_tile_nibble_pkg::DpuLatency;
// The cycle models' latencies are the RTL's (model/, sim/rtl_device.cpp).
static_assert(kDpuLatency + 1 == model::kRtlTileLatency, "the tile model's latency is the RTL tile's");

// The Verilated tile shapes; each must match its model's parameters (tests/rtl/CMakeLists.txt).
struct Tile4x4Lanes16 {  // nibble_tile's defaults
  using Model = Vnibble_tile;
  static constexpr unsigned kRows = 4, kCols = 4, kLanes = 16;
};
struct Tile8x4Lanes32 {  // tb_tile_wide: -GRows=8 -GCols=4 -GLanes=32
  using Model = Vtb_tile_wide;
  static constexpr unsigned kRows = 8, kCols = 4, kLanes = 32;
};

struct Gemm {
  QuantizedTensor a, b;
  std::vector<float> c;  // golden gemm, [M, N]
  float tensor_scale = 1.0f;
  std::string what;
};

// One k-block of one tile: what the tile consumes in one beat.
struct Beat {
  const Gemm* gemm;
  int64_t m0, n0, k0, len;
  bool first, last;
};

struct TileRef {
  const Gemm* gemm;
  int64_t m0, n0;
};

template <class Shape>
class TileChecker {
 public:
  using Model = typename Shape::Model;
  static constexpr unsigned kRows = Shape::kRows, kCols = Shape::kCols, kLanes = Shape::kLanes;

  TileChecker(uint64_t seed, std::mt19937_64& rng) : sim_(seed), rng_(rng) { sim_.reset(); }

  // Streams every tile of every GEMM; bubble/stall percentages drive the handshakes.
  void run(const std::vector<std::unique_ptr<Gemm>>& gemms, unsigned bubble_percent, unsigned stall_percent) {
    std::deque<Beat> beats;
    for (const auto& g : gemms) {
      const int64_t step = std::min(block_cols(g->a.config.block), block_cols(g->b.config.block));
      for (int64_t m0 = 0; m0 < g->a.rows; m0 += kRows) {
        for (int64_t n0 = 0; n0 < g->b.rows; n0 += kCols) {
          for (int64_t k0 = 0; k0 < g->a.cols; k0 += step) {
            beats.push_back({g.get(), m0, n0, k0, std::min(step, g->a.cols - k0), k0 == 0, k0 + step >= g->a.cols});
          }
        }
      }
    }
    Model& m = sim_.model();
    bool presenting = false;
    uint64_t idle = 0;
    while ((!beats.empty() || !tiles_.empty()) && idle < 1000) {
      if (!presenting && !beats.empty() && rng_() % 100 >= bubble_percent) {
        present(beats.front());
        presenting = true;
      }
      m.in_valid_i = presenting;
      if (!presenting) scramble_inputs();
      m.out_ready_i = rng_() % 100 >= stall_percent;
      sim_.settle();
      bool progress = false;
      if (presenting && m.in_ready_o) {
        if (beats.front().last) {
          tiles_.push_back({beats.front().gemm, beats.front().m0, beats.front().n0});
          if (last_accept_cycle_ == 0) last_accept_cycle_ = sim_.cycles();  // the first tile's
        }
        beats.pop_front();
        presenting = false;
        ++beats_;
        progress = true;
      }
      if (m.out_valid_o) {
        if (first_out_cycle_ == 0) first_out_cycle_ = sim_.cycles();
        if (m.out_ready_i) {
          take_row();
          progress = true;
        }
      }
      idle = progress ? 0 : idle + 1;
      sim_.tick();
    }
    EXPECT_TRUE(beats.empty() && tiles_.empty()) << "tile stopped making progress with " << beats.size()
                                                 << " beats and " << tiles_.size() << " tiles left";
  }

  uint64_t elements() const { return elements_; }
  uint64_t beats() const { return beats_; }
  uint64_t tiles() const { return tiles_done_; }
  uint64_t cycles() const { return sim_.cycles(); }
  uint64_t latency() const { return first_out_cycle_ - last_accept_cycle_; }

 private:
  void present(const Beat& beat) {
    Model& m = sim_.model();
    const Gemm& g = *beat.gemm;
    m.in_first_i = beat.first;
    m.in_last_i = beat.last;
    m.format_a_i = static_cast<uint8_t>(g.a.config.format);
    m.format_b_i = static_cast<uint8_t>(g.b.config.format);
    m.scale_format_a_i = static_cast<uint8_t>(scale_format(g.a.config.scale));
    m.scale_format_b_i = static_cast<uint8_t>(scale_format(g.b.config.scale));
    auto load = [&](const QuantizedTensor& q, int64_t r0, unsigned n, auto& codes, auto& scales) {
      for (unsigned r = 0; r < n; ++r) {
        const int64_t row = r0 + r;
        for (unsigned lane = 0; lane < kLanes; ++lane) {
          const bool in = row < q.rows && lane < beat.len;
          const uint8_t code = in ? q.codes[static_cast<size_t>(row * q.cols + beat.k0 + lane)] : 0;
          set_field(codes, 4 * (r * kLanes + lane), 4, code);
        }
        set_field(scales, 32 * r, 32, row < q.rows ? q.scale_code_at(row, beat.k0) : 0u);
      }
    };
    load(g.a, beat.m0, kRows, m.codes_a_i, m.scales_a_i);
    load(g.b, beat.n0, kCols, m.codes_b_i, m.scales_b_i);
  }

  // While in_valid_i is low the data inputs are don't-care: drive noise.
  void scramble_inputs() {
    Model& m = sim_.model();
    m.in_first_i = rng_() & 1u;
    m.in_last_i = rng_() & 1u;
    set_field(m.codes_a_i, 0, 64, rng_());
    set_field(m.scales_b_i, 0, 32, rng_());
  }

  void take_row() {
    Model& m = sim_.model();
    if (tiles_.empty()) {
      ADD_FAILURE() << "output row with no tile outstanding";
      return;
    }
    const TileRef& t = tiles_.front();
    const Gemm& g = *t.gemm;
    EXPECT_EQ(m.out_row_o, row_) << "rows out of order";
    EXPECT_EQ(m.out_last_o, row_ + 1 == kRows);
    for (unsigned n = 0; n < kCols; ++n) {
      const int64_t gm = t.m0 + row_, gn = t.n0 + n;
      if (gm >= g.a.rows || gn >= g.b.rows) continue;  // padding rows/cols of an edge tile
      const uint32_t rtl = static_cast<uint32_t>(field(m.out_c_o, 32 * n, 32));
      const uint32_t out = f32_bits(f32_from_bits(rtl) * g.tensor_scale);
      const uint32_t golden = f32_bits(g.c[static_cast<size_t>(gm * g.b.rows + gn)]);
      ++elements_;
      if (!same_f32(out, golden) && !reported_) {
        reported_ = true;
        ADD_FAILURE() << "first mismatch: " << g.what << " C[" << gm << "][" << gn << "]: rtl acc " << hex32(rtl)
                      << " * " << hex32(f32_bits(g.tensor_scale)) << " = " << hex32(out) << ", golden gemm "
                      << hex32(golden);
      }
    }
    if (++row_ == kRows) {
      row_ = 0;
      tiles_.pop_front();
      ++tiles_done_;
    }
  }

  ClockedSim<Model> sim_;
  std::mt19937_64& rng_;
  std::deque<TileRef> tiles_;  // tiles whose last beat was accepted, in order
  unsigned row_ = 0;
  uint64_t elements_ = 0, beats_ = 0, tiles_done_ = 0;
  uint64_t last_accept_cycle_ = 0, first_out_cycle_ = 0;
  bool reported_ = false;
};

// M and N up to 2 tiles + 1 (edge tiles on both sides); K up to 5 blocks of the widest block
// the tile takes. 16 lanes take 1x16 and 16x16 blocks (every beat is 16 wide); 32 lanes add
// 1x32, and a third of the GEMMs are 1x32 x 1x32 pairs (32-wide beats; any other pair with a
// 16-wide side is cut into 16-wide beats).
template <class Shape>
std::unique_ptr<Gemm> random_gemm(std::mt19937_64& rng, int index) {
  std::normal_distribution<float> normal(0.0f, 1.0f);
  const BlockShape shapes[] = {BlockShape::k1x16, BlockShape::k16x16, BlockShape::k1x32};
  const unsigned num_shapes = Shape::kLanes >= 32 ? 3 : 2;
  QuantConfig ca, cb;
  ca.format = kAllFormats[rng() % 3];
  cb.format = kAllFormats[rng() % 3];
  ca.block = shapes[rng() % num_shapes];
  cb.block = shapes[rng() % num_shapes];
  if (Shape::kLanes >= 32 && rng() % 3 == 0) ca.block = cb.block = BlockShape::k1x32;
  ca.scale = kAllScaleModes[rng() % 4];
  cb.scale = rng() % 2 ? ca.scale : kAllScaleModes[rng() % 4];
  const int64_t m = 1 + static_cast<int64_t>(rng() % (2 * Shape::kRows + 1));
  const int64_t n = 1 + static_cast<int64_t>(rng() % (2 * Shape::kCols + 1));
  const int64_t k = 1 + static_cast<int64_t>(rng() % (5 * Shape::kLanes));
  const int exps[] = {-130, -12, 0, 0, 0, 5, 40};
  auto tensor = [&](int64_t rows, const QuantConfig& cfg) {
    std::vector<float> x(static_cast<size_t>(rows * k));
    const int e = exps[rng() % 7];
    for (float& v : x) v = std::ldexp(normal(rng), e);
    if (rng() % 8 == 0) x[rng() % x.size()] = std::numeric_limits<float>::quiet_NaN();
    return quantize(x.data(), rows, k, cfg);
  };
  auto g = std::make_unique<Gemm>();
  g->a = tensor(m, ca);
  g->b = tensor(n, cb);
  g->c = gemm(g->a, g->b);
  g->tensor_scale = g->a.tensor.decode * g->b.tensor.decode;
  g->what = "gemm " + std::to_string(index) + " [" + std::to_string(m) + "x" + std::to_string(k) + "] " +
            std::string(name(ca.format)) + "/" + std::string(name(ca.block)) + "/" + std::string(name(ca.scale)) +
            " x [" + std::to_string(n) + "x" + std::to_string(k) + "] " + std::string(name(cb.format)) + "/" +
            std::string(name(cb.block)) + "/" + std::string(name(cb.scale));
  return g;
}

class RtlTile : public testing::Test {
 protected:
  void SetUp() override {
    seed_ = test_seed();
    rng_.seed(seed_);
  }
  uint64_t seed_ = 0;
  std::mt19937_64 rng_;
};

template <class Shape>
std::string shape_name() {
  return std::to_string(Shape::kRows) + "x" + std::to_string(Shape::kCols) + "x" + std::to_string(Shape::kLanes);
}

template <class Shape>
void random_gemms_with_bubbles_and_back_pressure(uint64_t seed, std::mt19937_64& rng) {
  std::vector<std::unique_ptr<Gemm>> gemms;
  for (int i = 0; i < 250; ++i) gemms.push_back(random_gemm<Shape>(rng, i));
  TileChecker<Shape> checker(seed, rng);
  checker.run(gemms, 25, 40);
  std::printf("[ cases    ] %s: %llu C elements checked vs golden gemm (%llu tiles, %llu beats, %llu cycles)\n",
              shape_name<Shape>().c_str(), static_cast<unsigned long long>(checker.elements()), static_cast<unsigned long long>(checker.tiles()),
              static_cast<unsigned long long>(checker.beats()), static_cast<unsigned long long>(checker.cycles()));
  EXPECT_GT(checker.elements(), 0u);
}

template <class Shape>
void full_rate_and_documented_latency(uint64_t seed, std::mt19937_64& rng) {
  // No bubbles, no back-pressure: one tile, then the latency from its last beat to the
  // first output row is DpuLatency + 1.
  std::vector<std::unique_ptr<Gemm>> gemms;
  gemms.push_back(random_gemm<Shape>(rng, 0));
  TileChecker<Shape> checker(seed, rng);
  checker.run(gemms, 0, 0);
  std::printf("[ cases    ] %s: %llu C elements checked, latency %llu cycles\n",
              shape_name<Shape>().c_str(), static_cast<unsigned long long>(checker.elements()), static_cast<unsigned long long>(checker.latency()));
  EXPECT_GT(checker.elements(), 0u);
  EXPECT_EQ(checker.latency(), kDpuLatency + 1);
}

// The golden vector stream (docs/vectors.md): `nibble vectors gemm-tile` cases of Rows x Cols
// x 64 written as text and read back; every C element compared with the stream's expected c.
// A's blocks are fixed to 1x16 so that every k-block fits 16 lanes.
template <class Shape>
void golden_vector_stream_gemm_tile(uint64_t seed, std::mt19937_64& rng) {
  constexpr unsigned kRows = Shape::kRows, kCols = Shape::kCols;
  vectors::GenerateOptions opts;
  opts.op = vectors::Op::kGemmTile;
  opts.seed = seed;
  opts.count = 60;
  opts.blocks_a = {BlockShape::k1x16};
  opts.m = static_cast<int>(kRows);
  opts.n = static_cast<int>(kCols);
  opts.k = 64;
  std::stringstream text;
  const vectors::StreamCounts counts = vectors::write_stream(text, opts);
  vectors::Reader reader(text);
  std::vector<std::unique_ptr<Gemm>> gemms;
  while (std::optional<vectors::Vector> v = reader.next()) {
    const auto* c = std::get_if<vectors::GemmTileCase>(&v->data);
    if (c == nullptr) continue;
    auto g = std::make_unique<Gemm>();
    auto tensor = [&](QuantizedTensor& q, int rows, Format f, ScaleMode mode, BlockShape block,
                      const std::vector<uint8_t>& codes, const std::vector<uint32_t>& scales, uint32_t decode) {
      q.rows = rows;
      q.cols = c->k;
      q.config.format = f;
      q.config.scale = mode;
      q.config.block = block;
      q.codes = codes;
      q.scales = scales;
      q.tensor.decode = f32_from_bits(decode);
    };
    tensor(g->a, c->m, c->fa, c->mode_a, c->block_a, c->codes_a, c->scales_a, c->ga);
    tensor(g->b, c->n, c->fb, c->mode_b, c->block_b, c->codes_b, c->scales_b, c->gb);
    for (uint32_t bits : c->c) g->c.push_back(f32_from_bits(bits));
    g->tensor_scale = g->a.tensor.decode * g->b.tensor.decode;
    g->what = "vector line " + std::to_string(v->line) + (v->label.empty() ? "" : " (" + v->label + ")");
    gemms.push_back(std::move(g));
  }
  TileChecker<Shape> checker(seed, rng);
  checker.run(gemms, 20, 30);
  std::printf("[ cases    ] %s: %llu C elements checked from %zu gemm-tile vectors (%zu seeded random, %zu boundary)\n",
              shape_name<Shape>().c_str(), static_cast<unsigned long long>(checker.elements()), gemms.size(), counts.random, counts.boundary);
  EXPECT_EQ(checker.elements(), gemms.size() * kRows * kCols);
}

TEST_F(RtlTile, RandomGemmsWithBubblesAndBackPressure) {
  random_gemms_with_bubbles_and_back_pressure<Tile4x4Lanes16>(seed_, rng_);
}
TEST_F(RtlTile, RandomGemmsWithBubblesAndBackPressure8x4x32) {
  random_gemms_with_bubbles_and_back_pressure<Tile8x4Lanes32>(seed_, rng_);
}
TEST_F(RtlTile, FullRateAndDocumentedLatency) { full_rate_and_documented_latency<Tile4x4Lanes16>(seed_, rng_); }
TEST_F(RtlTile, FullRateAndDocumentedLatency8x4x32) {
  full_rate_and_documented_latency<Tile8x4Lanes32>(seed_, rng_);
}
TEST_F(RtlTile, GoldenVectorStreamGemmTile) { golden_vector_stream_gemm_tile<Tile4x4Lanes16>(seed_, rng_); }
TEST_F(RtlTile, GoldenVectorStreamGemmTile8x4x32) { golden_vector_stream_gemm_tile<Tile8x4Lanes32>(seed_, rng_); }

}  // namespace
}  // namespace nibble::rtl_test
