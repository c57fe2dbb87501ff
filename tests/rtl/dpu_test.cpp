// nibble_dpu against golden's block-scaled dot product (dot.h): the accumulator after every
// block against block_partial_sum / block_product / accumulate, and finished dot products
// against dot_rows on golden-quantized tensors. Eighteen DPU configurations run side by side
// (tb_dpu.sv): the default lane design at 32 lanes and at 16 lanes for every format mask and
// for two scale-format sets (E4M3 + UE8M0, FP32), and each other lane design at 16 lanes, all
// formats and E2M1 alone; each block goes to every configuration whose lanes, formats and
// scale formats fit it.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <deque>
#include <limits>
#include <random>
#include <sstream>
#include <string>
#include <variant>
#include <vector>

#include <unistd.h>

#include "Vtb_dpu.h"
#include "Vtb_dpu_nibble_pkg.h"
#include "nibble/dot.h"
#include "nibble/fp32.h"
#include "nibble/power/lane_design.h"
#include "nibble/quantize.h"
#include "nibble/scale.h"
#include "nibble/vectors.h"
#include "rtl_harness.h"

namespace nibble::rtl_test {
namespace {

constexpr unsigned kNumDpus = 18;
constexpr unsigned kMaxLanes = 32;
constexpr unsigned kDpuLanes[kNumDpus] = {32, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16};
constexpr unsigned kDpuMasks[kNumDpus] = {0b111, 0b111, 0b001, 0b010, 0b100, 0b011, 0b111, 0b001, 0b111,
                                          0b001, 0b111, 0b001, 0b111, 0b001, 0b101, 0b110, 0b111, 0b111};
// tb_dpu.sv's DpuDesignOffsets: instance i has lane design (default + offset) mod count.
constexpr unsigned kDpuDesignOffsets[kNumDpus] = {0, 0, 0, 0, 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 0, 0, 0, 0};
// tb_dpu.sv's DpuScaleMasks: bit f = ScaleFormat f (E4M3, UE8M0, FP32).
constexpr unsigned kDpuScaleMasks[kNumDpus] = {0b111, 0b111, 0b111, 0b111, 0b111, 0b111, 0b111, 0b111, 0b111,
                                               0b111, 0b111, 0b111, 0b111, 0b111, 0b111, 0b111, 0b011, 0b100};

power::LaneDesign dpu_design(unsigned dpu) {
  return static_cast<power::LaneDesign>((static_cast<unsigned>(power::kDefaultLaneDesign) + kDpuDesignOffsets[dpu]) %
                                        power::kLaneDesignTable.size());
}

struct Block {
  std::vector<uint8_t> a, b;  // same length, at most kMaxLanes
  uint32_t scale_a = 0, scale_b = 0;
};

// One dot product: its blocks in increasing k, and optionally golden's dot_rows result.
struct DotProduct {
  Format fa = Format::kE2M1, fb = Format::kE2M1;
  ScaleFormat sfa = ScaleFormat::kFP32, sfb = ScaleFormat::kFP32;
  std::vector<Block> blocks;
  bool has_dot_rows = false;
  float tensor_scale = 1.0f;  // fl(ga * gb)
  uint32_t dot_rows = 0;      // bits of golden's dot_rows
  std::string what;
};

struct Expected {
  uint32_t acc;
  bool last;
  const DotProduct* dot;
  size_t block;
  uint64_t cycle;  // the cycle the block was presented in
};

constexpr uint64_t kDpuLatency = Vtb_dpu_nibble_pkg::DpuLatency;

bool fits(unsigned dpu, const DotProduct& d) {
  size_t len = 0;
  for (const Block& b : d.blocks) len = std::max(len, b.a.size());
  const unsigned mask = kDpuMasks[dpu];
  const unsigned scales = kDpuScaleMasks[dpu];
  return len <= kDpuLanes[dpu] && ((mask >> static_cast<unsigned>(d.fa)) & 1u) != 0 &&
         ((mask >> static_cast<unsigned>(d.fb)) & 1u) != 0 && ((scales >> static_cast<unsigned>(d.sfa)) & 1u) != 0 &&
         ((scales >> static_cast<unsigned>(d.sfb)) & 1u) != 0;
}

// Drives dot products through tb_dpu with random bubbles and checks every output.
class DpuChecker {
 public:
  DpuChecker(uint64_t seed, std::mt19937_64& rng) : sim_(seed), rng_(rng) { sim_.reset(); }

  void run(const std::vector<DotProduct>& dots, unsigned bubble_percent) {
    for (const DotProduct& d : dots) {
      for (size_t k = 0; k < d.blocks.size(); ++k) {
        while (rng_() % 100 < bubble_percent) cycle_idle();
        drive(d, k);
      }
    }
    for (unsigned i = 0; i < 8; ++i) cycle_idle();
    for (unsigned i = 0; i < kNumDpus; ++i) {
      EXPECT_TRUE(pending_[i].empty()) << "dpu " << i << ": " << pending_[i].size() << " results never came";
    }
  }

  uint64_t checked() const { return checked_; }
  uint64_t dot_rows_checked() const { return dot_rows_checked_; }
  uint64_t per_dpu(unsigned i) const { return per_dpu_[i]; }

 private:
  void drive(const DotProduct& d, size_t k) {
    Vtb_dpu& m = sim_.model();
    const Block& blk = d.blocks[k];
    uint32_t valid = 0;
    const uint32_t sa = blk.scale_a, sb = blk.scale_b;
    const int32_t p = block_partial_sum(blk.a.data(), d.fa, blk.b.data(), d.fb, blk.a.size());
    const float r = block_product(p, d.fa, d.fb, decode_scale(d.sfa, sa), decode_scale(d.sfb, sb));
    for (unsigned i = 0; i < kNumDpus; ++i) {
      if (!fits(i, d)) continue;
      valid |= 1u << i;
      golden_acc_[i] = accumulate(k == 0 ? 0.0f : golden_acc_[i], r);
      pending_[i].push_back({f32_bits(golden_acc_[i]), k + 1 == d.blocks.size(), &d, k, sim_.cycles()});
    }
    m.valid_i = valid;
    m.first_i = k == 0;
    m.last_i = k + 1 == d.blocks.size();
    m.format_a_i = static_cast<uint8_t>(d.fa);
    m.format_b_i = static_cast<uint8_t>(d.fb);
    m.scale_format_a_i = static_cast<uint8_t>(d.sfa);
    m.scale_format_b_i = static_cast<uint8_t>(d.sfb);
    for (unsigned lane = 0; lane < kMaxLanes; ++lane) {
      set_field(m.codes_a_i, 4 * lane, 4, lane < blk.a.size() ? blk.a[lane] : 0u);
      set_field(m.codes_b_i, 4 * lane, 4, lane < blk.b.size() ? blk.b[lane] : 0u);
    }
    m.scale_a_i = sa;
    m.scale_b_i = sb;
    step();
  }

  void cycle_idle() {
    Vtb_dpu& m = sim_.model();
    m.valid_i = 0;
    // Garbage on the data inputs while idle: the DPU must ignore it.
    m.first_i = rng_() & 1u;
    m.last_i = rng_() & 1u;
    m.scale_a_i = static_cast<uint32_t>(rng_());
    step();
  }

  void step() {
    sim_.tick();
    Vtb_dpu& m = sim_.model();
    for (unsigned i = 0; i < kNumDpus; ++i) {
      if (((m.acc_valid_o >> i) & 1u) == 0) {
        EXPECT_EQ((m.acc_last_o >> i) & 1u, 0u) << "dpu " << i << ": acc_last_o without acc_valid_o";
        continue;
      }
      if (pending_[i].empty()) {
        ADD_FAILURE() << "dpu " << i << ": unexpected acc_valid_o in cycle " << sim_.cycles();
        continue;
      }
      const Expected e = pending_[i].front();
      pending_[i].pop_front();
      const uint32_t rtl = static_cast<uint32_t>(field(m.acc_o, 32 * i, 32));
      const bool last = ((m.acc_last_o >> i) & 1u) != 0;
      ++checked_;
      ++per_dpu_[i];
      if (sim_.cycles() - e.cycle != kDpuLatency && !reported_latency_) {
        reported_latency_ = true;
        ADD_FAILURE() << "dpu " << i << ": block presented in cycle " << e.cycle << " accumulated in cycle "
                      << sim_.cycles() << ", documented latency " << kDpuLatency;
      }
      if ((!same_f32(rtl, e.acc) || last != e.last) && !reported_) {
        reported_ = true;
        report(i, e, rtl, last);
      }
      if (last && e.dot->has_dot_rows) {
        const uint32_t out = f32_bits(f32_from_bits(rtl) * e.dot->tensor_scale);
        ++dot_rows_checked_;
        if (!same_f32(out, e.dot->dot_rows) && !reported_dot_) {
          reported_dot_ = true;
          ADD_FAILURE() << "first dot_rows mismatch (dpu " << i << ", " << e.dot->what << "): rtl acc "
                        << hex32(rtl) << " * " << hex32(f32_bits(e.dot->tensor_scale)) << " = " << hex32(out)
                        << ", golden dot_rows " << hex32(e.dot->dot_rows);
        }
      }
    }
  }

  void report(unsigned dpu, const Expected& e, uint32_t rtl, bool last) {
    const DotProduct& d = *e.dot;
    const Block& blk = d.blocks[e.block];
    std::string codes_a, codes_b;
    for (size_t i = 0; i < blk.a.size(); ++i) {
      codes_a += "0123456789abcdef"[blk.a[i] & 0xF];
      codes_b += "0123456789abcdef"[blk.b[i] & 0xF];
    }
    char scales[96];
    std::snprintf(scales, sizeof scales, "scale_a 0x%08x (%s) scale_b 0x%08x (%s)", blk.scale_a,
                  std::string(name(d.sfa)).c_str(), blk.scale_b, std::string(name(d.sfb)).c_str());
    ADD_FAILURE() << "first mismatch: dpu " << dpu << " (" << kDpuLanes[dpu] << " lanes, mask 0x" << std::hex
                  << kDpuMasks[dpu] << std::dec << ", lane design " << power::info(dpu_design(dpu)).name << "), " << d.what << ", block " << e.block << " of "
                  << d.blocks.size() << ", " << name(d.fa) << " x " << name(d.fb) << "\n  codes a " << codes_a
                  << "\n  codes b " << codes_b << "\n  " << scales << "\n  rtl acc " << hex32(rtl)
                  << " last " << last << ", golden acc " << hex32(e.acc) << " last " << e.last;
  }

  ClockedSim<Vtb_dpu> sim_;
  std::mt19937_64& rng_;
  float golden_acc_[kNumDpus] = {};
  std::deque<Expected> pending_[kNumDpus];
  uint64_t checked_ = 0, dot_rows_checked_ = 0;
  uint64_t per_dpu_[kNumDpus] = {};
  bool reported_ = false, reported_dot_ = false, reported_latency_ = false;
};

// ---------------------------------------------------------------------------------------
// Random scale codes and blocks
// ---------------------------------------------------------------------------------------
uint32_t random_scale(ScaleFormat f, std::mt19937_64& rng) {
  switch (f) {
    case ScaleFormat::kE4M3: {
      const unsigned pick = static_cast<unsigned>(rng() % 10);
      if (pick == 0) return rng() & 1u ? 0x7Fu : 0xFFu;  // NaN
      if (pick == 1) return rng() & 1u ? 0x7Eu : 0xFEu;  // +-448, the saturated scale
      return static_cast<uint32_t>(rng() & 0xFFu);
    }
    case ScaleFormat::kUE8M0: {
      const unsigned pick = static_cast<unsigned>(rng() % 10);
      if (pick == 0) return 0xFFu;                                         // NaN
      if (pick == 1) return static_cast<uint32_t>(rng() % 8);              // 2^-127.. (underflow)
      if (pick == 2) return static_cast<uint32_t>(247 + rng() % 8);        // .. 2^127 (overflow)
      return static_cast<uint32_t>(107 + rng() % 40);                      // ordinary
    }
    case ScaleFormat::kFP32: {
      const uint32_t sign = static_cast<uint32_t>(rng() & (rng() % 4 == 0 ? 1u : 0u)) << 31;
      const uint32_t frac = static_cast<uint32_t>(rng()) & 0x7FFFFFu;
      switch (rng() % 10) {
        case 0: return sign | frac;                                                    // subnormal
        case 1: return sign | (static_cast<uint32_t>(1 + rng() % 20) << 23) | frac;    // tiny: subnormal r
        case 2: return sign | (static_cast<uint32_t>(230 + rng() % 25) << 23) | frac;  // huge: Inf r
        case 3: return rng() & 1u ? 0x7FC00000u : (0x7F800000u | sign);                // NaN, Inf
        case 4: return sign;                                                           // zero
        default: return sign | (static_cast<uint32_t>(100 + rng() % 50) << 23) | frac;
      }
    }
  }
  return 0;
}

DotProduct random_dot(std::mt19937_64& rng) {
  DotProduct d;
  d.fa = kAllFormats[rng() % 3];
  d.fb = kAllFormats[rng() % 3];
  d.sfa = kAllScaleFormats[rng() % 3];
  d.sfb = rng() % 2 ? d.sfa : kAllScaleFormats[rng() % 3];
  const size_t nblocks = 1 + rng() % 6;
  const unsigned len_pick = static_cast<unsigned>(rng() % 4);
  const size_t len = len_pick == 0 ? 32 : len_pick == 1 ? 16 : 1 + rng() % 32;
  for (size_t k = 0; k < nblocks; ++k) {
    Block b;
    const unsigned pattern = static_cast<unsigned>(rng() % 10);
    for (size_t i = 0; i < len; ++i) {
      uint8_t ca = static_cast<uint8_t>(rng() & 0xFu), cb = static_cast<uint8_t>(rng() & 0xFu);
      if (pattern == 0) ca = cb = 0;                 // zero block
      if (pattern == 1) ca = cb = 0x8;               // INT4 -8 (and minifloat -0)
      if (pattern == 2) ca = 0x8;
      if (pattern == 3 && rng() % 2) ca = 0;         // sparse
      b.a.push_back(ca);
      b.b.push_back(cb);
    }
    b.scale_a = random_scale(d.sfa, rng);
    b.scale_b = random_scale(d.sfb, rng);
    d.blocks.push_back(std::move(b));
  }
  d.what = "random dot product";
  return d;
}

class RtlDpu : public testing::Test {
 protected:
  void SetUp() override {
    seed_ = test_seed();
    rng_.seed(seed_);
  }
  void print_counts(const DpuChecker& c, const char* what) {
    std::printf("[ cases    ] %llu accumulator results checked (%s), %llu finished dot products vs dot_rows;"
                " per dpu:",
                static_cast<unsigned long long>(c.checked()), what,
                static_cast<unsigned long long>(c.dot_rows_checked()));
    for (unsigned i = 0; i < kNumDpus; ++i) std::printf(" %llu", static_cast<unsigned long long>(c.per_dpu(i)));
    std::printf("\n");
  }
  uint64_t seed_ = 0;
  std::mt19937_64 rng_;
};

TEST_F(RtlDpu, RandomBlocksEveryConfiguration) {
  std::vector<DotProduct> dots;
  for (int i = 0; i < 6000; ++i) dots.push_back(random_dot(rng_));
  DpuChecker checker(seed_, rng_);
  checker.run(dots, 15);
  print_counts(checker, "random blocks");
  for (unsigned i = 0; i < kNumDpus; ++i) EXPECT_GT(checker.per_dpu(i), 0u) << "dpu " << i << " checked nothing";
}

TEST_F(RtlDpu, DirectedCorners) {
  std::vector<DotProduct> dots;
  auto make = [&](Format fa, Format fb, ScaleFormat sfa, ScaleFormat sfb, size_t len, uint8_t ca, uint8_t cb,
                  std::vector<std::pair<uint32_t, uint32_t>> scales, const char* what) {
    DotProduct d;
    d.fa = fa;
    d.fb = fb;
    d.sfa = sfa;
    d.sfb = sfb;
    for (auto [sa, sb] : scales) {
      Block b;
      b.a.assign(len, ca);
      b.b.assign(len, cb);
      b.scale_a = sa;
      b.scale_b = sb;
      d.blocks.push_back(b);
    }
    d.what = what;
    dots.push_back(d);
  };
  using F = Format;
  using S = ScaleFormat;
  for (size_t len : {16u, 32u}) {
    // The widest exact block sum: INT4 -8 x -8 in every lane.
    make(F::kInt4, F::kInt4, S::kE4M3, S::kE4M3, len, 0x8, 0x8, {{0x7E, 0x7E}, {0x7E, 0xFE}}, "INT4 -8 x -8, 448 scales");
    make(F::kE2M1, F::kInt4, S::kE4M3, S::kUE8M0, len, 0x7, 0x8, {{0x7E, 127}, {0x7E, 254}, {0x01, 0}},
         "E2M1 6 x INT4 -8, saturated and extreme scales");
    make(F::kE2M1, F::kE2M1, S::kE4M3, S::kE4M3, len, 0x0, 0x0, {{0x7E, 0x7E}, {0x7F, 0x38}}, "zero blocks, NaN scale");
    make(F::kE1M2, F::kE2M1, S::kFP32, S::kFP32, len, 0x3, 0xB, {{0x00000001, 0x3F800000}, {0x00800000, 0x34000000}},
         "FP32 scales giving subnormal products");
    make(F::kE1M2, F::kE1M2, S::kUE8M0, S::kUE8M0, len, 0x1, 0x1, {{0, 0}, {0, 127}, {254, 254}, {254, 0}},
         "UE8M0 2^-127 and 2^127: underflow to 0, overflow to Inf");
    make(F::kInt4, F::kE1M2, S::kFP32, S::kFP32, len, 0x7, 0x7,
         {{0x7F7FFFFF, 0x7F7FFFFF}, {0xFF800000, 0x3F800000}}, "Inf accumulator, then Inf - Inf");
    make(F::kInt4, F::kInt4, S::kFP32, S::kFP32, len, 0x0, 0x5, {{0x7F800000, 0x3F800000}}, "Inf scale x zero block");
    make(F::kE2M1, F::kE2M1, S::kFP32, S::kFP32, len, 0x1, 0x9, {{0x3F800000, 0x3F800000}, {0x3F800000, 0xBF800000}},
         "x + (-x) = +0");
  }
  DpuChecker checker(seed_, rng_);
  checker.run(dots, 0);
  print_counts(checker, "directed corners");
  EXPECT_GT(checker.checked(), 0u);
}

// Golden-quantized tensors: rows of A and B through the DPU, the finished dot product
// compared with dot_rows (after the per-tensor scales, applied on the host).
TEST_F(RtlDpu, GoldenQuantizedDotRows) {
  std::vector<DotProduct> dots;
  std::normal_distribution<float> normal(0.0f, 1.0f);
  int tensors = 0;
  for (int t = 0; t < 150; ++t) {
    QuantConfig ca, cb;
    ca.format = kAllFormats[rng_() % 3];
    cb.format = kAllFormats[rng_() % 3];
    ca.block = kAllBlockShapes[rng_() % 3];
    cb.block = kAllBlockShapes[rng_() % 3];
    ca.scale = kAllScaleModes[rng_() % 4];
    cb.scale = rng_() % 2 ? ca.scale : kAllScaleModes[rng_() % 4];
    const int64_t rows = 2 + static_cast<int64_t>(rng_() % 3);
    const int64_t cols = 1 + static_cast<int64_t>(rng_() % 100);
    // Magnitudes from subnormal-scale (2^-135) to large; sometimes a NaN or Inf element.
    const int exps[] = {-135, -128, -20, 0, 0, 0, 8, 60};
    auto make_tensor = [&](const QuantConfig& cfg) {
      std::vector<float> x(static_cast<size_t>(rows * cols));
      const int e = exps[rng_() % 8];
      for (float& v : x) v = std::ldexp(normal(rng_), e);
      if (rng_() % 6 == 0) x[rng_() % x.size()] = rng_() % 2 ? std::numeric_limits<float>::quiet_NaN() : INFINITY;
      if (rng_() % 6 == 0) std::fill(x.begin(), x.begin() + std::min<int64_t>(cols, 20), 0.0f);
      return quantize(x.data(), rows, cols, cfg);
    };
    auto qa = std::make_shared<QuantizedTensor>(make_tensor(ca));
    auto qb = std::make_shared<QuantizedTensor>(make_tensor(cb));
    ++tensors;
    const int64_t step = std::min(block_cols(ca.block), block_cols(cb.block));
    for (int64_t ra = 0; ra < rows; ++ra) {
      for (int64_t rb = 0; rb < rows; ++rb) {
        DotProduct d;
        d.fa = ca.format;
        d.fb = cb.format;
        d.sfa = scale_format(ca.scale);
        d.sfb = scale_format(cb.scale);
        for (int64_t k0 = 0; k0 < cols; k0 += step) {
          const int64_t len = std::min(step, cols - k0);
          Block b;
          b.a.assign(qa->codes.begin() + ra * cols + k0, qa->codes.begin() + ra * cols + k0 + len);
          b.b.assign(qb->codes.begin() + rb * cols + k0, qb->codes.begin() + rb * cols + k0 + len);
          b.scale_a = qa->scale_code_at(ra, k0);
          b.scale_b = qb->scale_code_at(rb, k0);
          d.blocks.push_back(std::move(b));
        }
        d.has_dot_rows = true;
        d.tensor_scale = qa->tensor.decode * qb->tensor.decode;
        d.dot_rows = f32_bits(dot_rows(*qa, ra, *qb, rb));
        d.what = std::string("tensor ") + std::to_string(t) + " " + std::string(name(ca.format)) + "/" +
                 std::string(name(ca.block)) + "/" + std::string(name(ca.scale)) + " x " +
                 std::string(name(cb.format)) + "/" + std::string(name(cb.block)) + "/" +
                 std::string(name(cb.scale)) + " rows " + std::to_string(ra) + "," + std::to_string(rb);
        dots.push_back(std::move(d));
      }
    }
  }
  DpuChecker checker(seed_, rng_);
  checker.run(dots, 10);
  print_counts(checker, "golden-quantized tensors");
  std::printf("[ cases    ] %d tensor pairs quantized by golden\n", tensors);
  EXPECT_GT(checker.dot_rows_checked(), 0u);
}

// The golden vector stream (docs/vectors.md): `nibble vectors dot` cases written as text and
// read back as a device reads them; the expected result field is compared with the finished
// dot product (after fl(ga * gb), applied on the host), every block's accumulator with golden.
TEST_F(RtlDpu, GoldenVectorStreamDot) {
  vectors::GenerateOptions opts;
  opts.op = vectors::Op::kDot;
  opts.seed = seed_;
  opts.count = 300;
  std::stringstream text;
  const vectors::StreamCounts counts = vectors::write_stream(text, opts);
  vectors::Reader reader(text);
  std::vector<DotProduct> dots;
  while (std::optional<vectors::Vector> v = reader.next()) {
    const auto* c = std::get_if<vectors::DotCase>(&v->data);
    if (c == nullptr) continue;
    DotProduct d;
    d.fa = c->fa;
    d.fb = c->fb;
    d.sfa = c->sfa;
    d.sfb = c->sfb;
    const size_t len = static_cast<size_t>(c->length);
    for (size_t b = 0; b < static_cast<size_t>(c->nblocks); ++b) {
      Block blk;
      blk.a.assign(c->codes_a.begin() + static_cast<std::ptrdiff_t>(b * len),
                   c->codes_a.begin() + static_cast<std::ptrdiff_t>((b + 1) * len));
      blk.b.assign(c->codes_b.begin() + static_cast<std::ptrdiff_t>(b * len),
                   c->codes_b.begin() + static_cast<std::ptrdiff_t>((b + 1) * len));
      blk.scale_a = c->scales_a[b];
      blk.scale_b = c->scales_b[b];
      d.blocks.push_back(std::move(blk));
    }
    d.has_dot_rows = true;
    d.tensor_scale = f32_from_bits(c->ga) * f32_from_bits(c->gb);
    d.dot_rows = c->result;
    d.what = "vector line " + std::to_string(v->line) + (v->label.empty() ? "" : " (" + v->label + ")");
    dots.push_back(std::move(d));
  }
  DpuChecker checker(seed_, rng_);
  checker.run(dots, 10);
  print_counts(checker, "golden vector stream");
  std::printf("[ cases    ] %zu dot vectors read (%zu seeded random, %zu boundary)\n", dots.size(), counts.random,
              counts.boundary);
  EXPECT_GE(checker.dot_rows_checked(), dots.size());  // the 32-lane, all-format DPU takes every case
  EXPECT_GT(checker.dot_rows_checked(), 0u);
}

// The assertions are compiled in and stop the simulation: a block offered with a format the
// configuration was not built for violates FormatAEnabled_M (the E2M1-only DPU, instance 2).
TEST_F(RtlDpu, AssertionsAreLive) {
  testing::FLAGS_gtest_death_test_style = "threadsafe";
  uint64_t checked = 0;
  EXPECT_DEATH(
      {
        dup2(STDERR_FILENO, STDOUT_FILENO);  // Verilator reports assertions on stdout
        ClockedSim<Vtb_dpu> sim(seed_);
        sim.reset();
        sim->valid_i = 1u << 2;
        sim->first_i = 1;
        sim->last_i = 1;
        sim->format_a_i = static_cast<uint8_t>(Format::kInt4);
        sim->format_b_i = static_cast<uint8_t>(Format::kE2M1);
        sim->scale_format_a_i = static_cast<uint8_t>(ScaleFormat::kE4M3);  // legal: only the
        sim->scale_format_b_i = static_cast<uint8_t>(ScaleFormat::kE4M3);  // format is wrong
        for (int i = 0; i < 4; ++i) sim.tick();
      },
      "FormatAEnabled_M");
  ++checked;
  std::printf("[ cases    ] %llu assertion checked to fire\n", static_cast<unsigned long long>(checked));
}

}  // namespace
}  // namespace nibble::rtl_test
