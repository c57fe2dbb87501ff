// The quantizer's combinational helpers (tb_quant_units.sv): nibble_f32_div against host IEEE
// division, nibble_e4m3_encode against golden's encode_e4m3, and nibble_grid_round on each
// element format's grid against golden's round_to_grid (RNE and SR with every B).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <deque>
#include <limits>
#include <random>
#include <vector>

#include "Vtb_quant_units.h"
#include "Vtb_quant_units_nibble_quant_pkg.h"
#include "nibble/formats.h"
#include "nibble/fp32.h"
#include "nibble/quantize.h"
#include "nibble/scale.h"
#include "rtl_harness.h"

namespace nibble::rtl_test {
namespace {

bool is_nan(uint32_t u) { return (u & 0x7F800000u) == 0x7F800000u && (u & 0x7FFFFFu) != 0; }

// Binary32 patterns that exercise a divider: every class, both signs, the binade edges.
uint32_t edge_pattern(std::mt19937_64& rng) {
  static const uint32_t kEdges[] = {
      0x00000000u, 0x00000001u, 0x00000002u, 0x00000003u, 0x007FFFFFu, 0x00400000u, 0x00800000u,
      0x00800001u, 0x00FFFFFFu, 0x3F800000u, 0x3F800001u, 0x3FFFFFFFu, 0x3F7FFFFFu, 0x40400000u,
      0x40C00000u, 0x3FE00000u, 0x40E00000u, 0x43E00000u, 0x7F7FFFFFu, 0x7F7FFFFEu, 0x7F000000u,
      0x7F800000u, 0x7FC00000u, 0x7F800001u, 0x7FFFFFFFu, 0x34000000u, 0x33800000u, 0x0B000000u,
  };
  const uint32_t sign = static_cast<uint32_t>(rng() & 1u) << 31;
  return sign | kEdges[rng() % (sizeof kEdges / sizeof kEdges[0])];
}

uint32_t random_pattern(std::mt19937_64& rng) {
  const uint32_t sign = static_cast<uint32_t>(rng() & 1u) << 31;
  const uint32_t frac = static_cast<uint32_t>(rng()) & 0x7FFFFFu;
  switch (rng() % 8) {
    case 0: return edge_pattern(rng);
    case 1: return sign | frac;                                                  // subnormal
    case 2: return sign | (static_cast<uint32_t>(1 + rng() % 30) << 23) | frac;  // tiny
    case 3: return sign | (static_cast<uint32_t>(225 + rng() % 30) << 23) | frac;  // huge
    case 4: return sign | (static_cast<uint32_t>(127) << 23) | (frac & ~0xFFFFu);  // short significand
    default: return static_cast<uint32_t>(rng());                                  // anything
  }
}

class RtlQuantUnits : public testing::Test {
 protected:
  void SetUp() override {
    seed_ = test_seed();
    rng_.seed(seed_);
    context_ = make_context(seed_);
    model_ = std::make_unique<Vtb_quant_units>(context_.get());
  }
  void TearDown() override { model_->final(); }
  uint64_t seed_ = 0;
  std::mt19937_64 rng_;
  std::unique_ptr<VerilatedContext> context_;
  std::unique_ptr<Vtb_quant_units> model_;
};

// Both dividers see every pair: the combinational one (div_o) in the same cycle, the pipelined
// one (div_pipe_o) QuantPipeDivStages rising edges later, with idle cycles of garbage operands
// (valid_i low) between some pairs that it must not let through.
TEST_F(RtlQuantUnits, DividerMatchesHostIeee) {
  constexpr size_t kStages = Vtb_quant_units_nibble_quant_pkg::QuantPipeDivStages;
  static_assert(kStages > 0, "the pipelined divider has registers");
  uint64_t checked = 0, piped = 0, nans = 0, specials = 0, subnormal_results = 0;
  bool reported = false, reported_pipe = false;
  struct InFlight {
    bool valid;
    uint32_t a, b, host;
  };
  std::deque<InFlight> in_flight;
  auto edge = [&](const InFlight& f) {
    model_->clk_i = 0;
    model_->eval();
    model_->clk_i = 1;
    model_->eval();
    in_flight.push_back(f);
    if (in_flight.size() < kStages) return;
    const InFlight out = in_flight.front();
    in_flight.pop_front();
    if (!out.valid) return;
    ++piped;
    const uint32_t rtl = model_->div_pipe_o;
    if (!(same_f32(rtl, out.host) && (!is_nan(rtl) || rtl == 0x7FC00000u)) && !reported_pipe) {
      reported_pipe = true;
      ADD_FAILURE() << "first mismatch of the pipelined divider: " << hex32(out.a) << " / " << hex32(out.b)
                    << ": rtl " << hex32(rtl) << ", host " << hex32(out.host);
    }
  };
  model_->rst_ni = 0;
  model_->valid_i = 0;
  for (int i = 0; i < 3; ++i) {
    model_->clk_i = 0;
    model_->eval();
    model_->clk_i = 1;
    model_->eval();
  }
  model_->rst_ni = 1;
  auto check = [&](uint32_t a, uint32_t b) {
    if (rng_() % 8 == 0) {  // an idle cycle
      model_->valid_i = 0;
      model_->a_i = static_cast<uint32_t>(rng_());
      model_->b_i = static_cast<uint32_t>(rng_());
      edge({false, 0, 0, 0});
    }
    model_->valid_i = 1;
    model_->a_i = a;
    model_->b_i = b;
    model_->eval();
    const uint32_t rtl = model_->div_o;
    const uint32_t host = f32_bits(f32_from_bits(a) / f32_from_bits(b));
    ++checked;
    if (is_nan(host)) ++nans;
    if (!f32_is_finite(f32_from_bits(host)) || (host & 0x7FFFFFFFu) == 0) ++specials;
    if ((host & 0x7F800000u) == 0 && (host & 0x7FFFFFu) != 0) ++subnormal_results;
    const bool ok = same_f32(rtl, host) && (!is_nan(rtl) || rtl == 0x7FC00000u);
    if (!ok && !reported) {
      reported = true;
      ADD_FAILURE() << "first mismatch: " << hex32(a) << " / " << hex32(b) << ": rtl " << hex32(rtl) << ", host "
                    << hex32(host);
    }
    edge({true, a, b, host});
  };
  for (uint32_t i = 0; i < 28 * 2; ++i) {
    for (uint32_t j = 0; j < 28 * 2; ++j) {
      std::mt19937_64 r1(i), r2(j + 1000);
      check(edge_pattern(r1), edge_pattern(r2));
    }
  }
  for (int i = 0; i < 300000; ++i) check(random_pattern(rng_), random_pattern(rng_));
  // Exact quotients and their neighbours (ties cannot occur in division, near-ties can).
  for (int i = 0; i < 50000; ++i) {
    const uint32_t q = random_pattern(rng_), b = random_pattern(rng_);
    const uint32_t a = f32_bits(f32_from_bits(q) * f32_from_bits(b));
    check(a, b);
    check(a + 1u, b);
    check(a - 1u, b);
  }
  // 1 / x and x / gmax, the quantizer's divisions.
  for (int i = 0; i < 50000; ++i) {
    check(0x3F800000u, random_pattern(rng_));
    const uint32_t gmax[] = {0x40C00000u, 0x3FE00000u, 0x40E00000u};
    check(random_pattern(rng_) & 0x7FFFFFFFu, gmax[rng_() % 3]);
  }
  model_->valid_i = 0;
  for (size_t i = 0; i < kStages; ++i) edge({false, 0, 0, 0});
  std::printf("[ cases    ] %llu divisions vs host IEEE (%llu NaN, %llu zero/Inf/NaN results, %llu subnormal); "
              "%llu through the %zu-stage pipelined divider\n",
              static_cast<unsigned long long>(checked), static_cast<unsigned long long>(nans),
              static_cast<unsigned long long>(specials), static_cast<unsigned long long>(subnormal_results),
              static_cast<unsigned long long>(piped), kStages);
  EXPECT_GT(checked, 0u);
  EXPECT_EQ(piped, checked);
  EXPECT_GT(subnormal_results, 0u);
}

TEST_F(RtlQuantUnits, E4m3EncodeMatchesGolden) {
  uint64_t checked = 0;
  bool reported = false;
  auto check = [&](uint32_t a) {
    model_->a_i = a;
    model_->eval();
    const uint32_t rtl = model_->e4m3_o;
    const uint32_t golden = encode_e4m3(f32_from_bits(a));
    ++checked;
    if (rtl != golden && !reported) {
      reported = true;
      ADD_FAILURE() << "first mismatch: encode_e4m3(" << hex32(a) << "): rtl 0x" << std::hex << rtl << ", golden 0x"
                    << golden;
    }
  };
  // Every E4M3 value, the midpoints between neighbours and their binary32 neighbours.
  for (uint32_t code = 0; code < 256; ++code) {
    if ((code & 0x7Fu) == 0x7Fu) continue;
    const float v = decode_scale(ScaleFormat::kE4M3, code);
    const float next = decode_scale(ScaleFormat::kE4M3, (code & 0x7Fu) == 0x7Eu ? code : code + 1);
    for (float x : {v, 0.5f * (v + next)}) {
      const uint32_t u = f32_bits(x);
      for (uint32_t d : {0u, 1u, 2u}) {
        check(u + d);
        if ((u & 0x7FFFFFFFu) >= d) check(u - d);
      }
    }
  }
  for (int i = 0; i < 200000; ++i) {
    uint32_t u = random_pattern(rng_);
    if (rng_() % 2) u = (u & 0x80000000u) | (static_cast<uint32_t>(100 + rng_() % 40) << 23) | (u & 0x7FFFFFu);
    check(u);
  }
  std::printf("[ cases    ] %llu E4M3 conversions vs golden encode_e4m3\n", static_cast<unsigned long long>(checked));
  EXPECT_GT(checked, 0u);
}

TEST_F(RtlQuantUnits, GridRoundEveryFormatRneAndSr) {
  uint64_t checked = 0;
  bool reported = false;
  for (int i = 0; i < 200000; ++i) {
    // Values around every format's range, on and between grid points, and far outside.
    uint32_t u;
    const unsigned pick = static_cast<unsigned>(rng_() % 5);
    if (pick == 0) {
      u = random_pattern(rng_);
      if (is_nan(u)) u = 0x7F800000u | (u & 0x80000000u);  // round_to_grid takes no NaN
    } else {
      const int k = static_cast<int>(rng_() % 64);  // quarter units around [0, 16)
      const float base = std::ldexp(static_cast<float>(k), -3 - static_cast<int>(rng_() % 3));
      u = f32_bits(base) + static_cast<uint32_t>(pick == 1 ? 0 : static_cast<int>(rng_() % 5) - 2);
      if (pick == 4) u = f32_bits(std::ldexp(std::ldexp(static_cast<float>(rng_() % (1u << 24)), -24),
                                            static_cast<int>(rng_() % 40) - 30));
      if (rng_() % 2) u |= 0x80000000u;
      if (is_nan(u)) u = f32_bits(0.0f);  // a negative step below +0
    }
    const bool sr = rng_() % 2;
    const int bits = 1 + static_cast<int>(rng_() % 8);
    const uint32_t random = sr ? static_cast<uint32_t>(rng_() % (1u << bits)) : 0u;
    model_->a_i = u;
    model_->stochastic_i = sr;
    model_->rand_i = static_cast<uint8_t>(random);
    model_->sr_bits_i = static_cast<uint8_t>(bits);
    model_->eval();
    for (Format f : kAllFormats) {
      const unsigned fi = static_cast<unsigned>(f);
      const GridValue g = round_to_grid(f32_from_bits(u), grid(f), sr ? Rounding::kStochastic : Rounding::kNearestEven,
                                        random, bits);
      const uint32_t units = static_cast<uint32_t>(field(model_->grid_units_o, 8 * fi, 8));
      const bool neg = ((model_->grid_neg_o >> fi) & 1u) != 0;
      ++checked;
      if ((units != g.units || neg != g.neg) && !reported) {
        reported = true;
        ADD_FAILURE() << "first mismatch: " << name(f) << " round_to_grid(" << hex32(u) << ", " << (sr ? "sr" : "rne")
                      << ", random " << random << ", B " << bits << "): rtl " << (neg ? "-" : "+") << units
                      << " units, golden " << (g.neg ? "-" : "+") << g.units;
      }
    }
  }
  std::printf("[ cases    ] %llu grid roundings vs golden round_to_grid\n", static_cast<unsigned long long>(checked));
  EXPECT_GT(checked, 0u);
}

}  // namespace
}  // namespace nibble::rtl_test
