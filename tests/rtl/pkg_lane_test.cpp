// nibble_pkg against golden's format tables and power/lane_design.h's lane-design table, and
// every code pair of every format pair through nibble_decode + nibble_lane (for each lane
// design and format mask) against golden's decode.
#include <gtest/gtest.h>

#include <cstdio>

#include "Vtb_lanes.h"
#include "nibble/formats.h"
#include "nibble/power/lane_design.h"
#include "nibble/scale.h"
#include "rtl_harness.h"

namespace nibble::rtl_test {
namespace {

constexpr unsigned kNumMasks = 7;  // tb_lanes.sv: E2M1, E1M2, INT4, E2M1+E1M2, all, E2M1+INT4, E1M2+INT4
constexpr unsigned kNumDesigns = power::kLaneDesignTable.size();

int64_t sign_extend(uint64_t v, unsigned width) {
  const uint64_t sign = uint64_t{1} << (width - 1);
  return static_cast<int64_t>((v ^ sign) - sign);
}

bool in_mask(unsigned mask, Format f) { return ((mask >> static_cast<unsigned>(f)) & 1u) != 0; }

// golden's view of a mask's common fixed point.
int golden_unit_exp(unsigned mask) {
  int u = 0;
  bool first = true;
  for (Format f : kAllFormats) {
    if (!in_mask(mask, f)) continue;
    u = first ? lsb_exp(f) : std::min(u, lsb_exp(f));
    first = false;
  }
  return u;
}

class RtlLanes : public testing::Test {
 protected:
  void SetUp() override {
    seed_ = test_seed();
    context_ = make_context(seed_);
    model_ = std::make_unique<Vtb_lanes>(context_.get());
    model_->eval();
  }
  void TearDown() override { model_->final(); }
  uint64_t seed_ = 0;
  std::unique_ptr<VerilatedContext> context_;
  std::unique_ptr<Vtb_lanes> model_;
};

TEST_F(RtlLanes, PackageTableEqualsGolden) {
  Vtb_lanes& m = *model_;
  int checked = 0;
  for (const FormatInfo& i : kFormatTable) {
    const unsigned f = static_cast<unsigned>(i.id);
    SCOPED_TRACE(std::string(i.name));
    EXPECT_EQ(field(m.encoding_o, 8 * f, 8), static_cast<uint64_t>(i.encoding));
    EXPECT_EQ(field(m.exp_bits_o, 8 * f, 8), static_cast<uint64_t>(i.exp_bits));
    EXPECT_EQ(field(m.man_bits_o, 8 * f, 8), static_cast<uint64_t>(i.man_bits));
    EXPECT_EQ(field(m.bias_o, 8 * f, 8), static_cast<uint64_t>(i.bias));
    EXPECT_EQ(sign_extend(field(m.lsb_exp_o, 8 * f, 8), 8), lsb_exp(i.id));
    EXPECT_EQ(field(m.max_units_o, 8 * f, 8), max_units(i.id));
    EXPECT_EQ(field(m.max_decode_units_o, 8 * f, 8), max_decode_units(i.id));
    checked += 7;
  }
  for (const ScaleFormatInfo& i : kScaleFormatTable) {
    const unsigned f = static_cast<unsigned>(i.id);
    SCOPED_TRACE(std::string(i.name));
    EXPECT_EQ(field(m.scale_bits_o, 8 * f, 8), static_cast<uint64_t>(i.bits));
    EXPECT_EQ(field(m.scale_exp_bits_o, 8 * f, 8), static_cast<uint64_t>(i.exp_bits));
    EXPECT_EQ(field(m.scale_man_bits_o, 8 * f, 8), static_cast<uint64_t>(i.man_bits));
    EXPECT_EQ(field(m.scale_bias_o, 8 * f, 8), static_cast<uint64_t>(i.bias));
    EXPECT_EQ(field(m.scale_nan_code_o, 32 * f, 32), i.nan_code);
    checked += 5;
  }
  for (unsigned k = 0; k < kNumMasks; ++k) {
    const unsigned mask = static_cast<unsigned>(field(m.mask_o, 8 * k, 8));
    SCOPED_TRACE("mask " + std::to_string(mask));
    const int u = golden_unit_exp(mask);
    uint32_t max_common = 0;
    for (Format f : kAllFormats) {
      if (in_mask(mask, f)) max_common = std::max(max_common, max_decode_units(f) << (lsb_exp(f) - u));
    }
    unsigned width = 0;
    while ((uint64_t{1} << width) <= max_common) ++width;
    EXPECT_EQ(sign_extend(field(m.unit_exp_o, 8 * k, 8), 8), u);
    EXPECT_EQ(field(m.common_max_units_o, 8 * k, 8), max_common);
    EXPECT_EQ(field(m.common_mag_width_o, 8 * k, 8), width);
    checked += 3;
  }
  // The all-format common fixed point the datapath is specified with (units of 2^-2).
  EXPECT_EQ(golden_unit_exp(0b111), -2);
  // The lane-design table against power/lane_design.h.
  EXPECT_EQ(m.num_lane_designs_o, kNumDesigns);
  EXPECT_EQ(m.default_lane_design_o, static_cast<unsigned>(power::kDefaultLaneDesign));
  for (const power::LaneDesignInfo& d : power::kLaneDesignTable) {
    const unsigned i = static_cast<unsigned>(d.id);
    SCOPED_TRACE(std::string(d.name));
    EXPECT_EQ(field(m.own_unit_o, 8 * i, 8), d.own_unit ? 1u : 0u);
    EXPECT_EQ(field(m.split_o, 8 * i, 8), d.split ? 1u : 0u);
    EXPECT_EQ(field(m.late_sign_o, 8 * i, 8), d.late_sign ? 1u : 0u);
    EXPECT_EQ(field(m.fold_shift_o, 8 * i, 8), d.fold_shift ? 1u : 0u);
    EXPECT_EQ(field(m.raw_select_o, 8 * i, 8), d.raw_select ? 1u : 0u);
    checked += 5;
  }
  checked += 2;
  std::printf("[ cases    ] %d table entries compared\n", checked);
  ASSERT_GT(checked, 0);
}

TEST_F(RtlLanes, EveryCodePairOfEveryFormatPair) {
  Vtb_lanes& m = *model_;
  uint64_t checked = 0;
  uint64_t tied_off = 0;
  bool reported = false;
  for (Format fa : kAllFormats) {
    for (Format fb : kAllFormats) {
      m.format_a_i = static_cast<uint8_t>(fa);
      m.format_b_i = static_cast<uint8_t>(fb);
      for (unsigned a = 0; a < 16; ++a) {
        for (unsigned b = 0; b < 16; ++b) {
          m.code_a_i = static_cast<uint8_t>(a);
          m.code_b_i = static_cast<uint8_t>(b);
          m.eval();
          const int64_t golden = static_cast<int64_t>(decode(fa, static_cast<uint8_t>(a)).signed_units()) *
                                 decode(fb, static_cast<uint8_t>(b)).signed_units();
          for (const power::LaneDesignInfo& d : power::kLaneDesignTable) {
            for (unsigned k = 0; k < kNumMasks; ++k) {
              const unsigned mask = static_cast<unsigned>(field(m.mask_o, 8 * k, 8));
              const unsigned e = static_cast<unsigned>(d.id) * kNumMasks + k;
              // The lane's product in units of 2^(ua + ub); a late-sign lane's late_neg_o is
              // part of it.
              const int64_t rtl = sign_extend(field(m.prod_o, 16 * e, 16), 16) +
                                  static_cast<int64_t>(field(m.late_neg_o, e, 1));
              if (!d.late_sign && field(m.late_neg_o, e, 1) != 0 && !reported) {
                reported = true;
                ADD_FAILURE() << d.name << ": late_neg_o set";
              }
              int64_t expected = 0;  // a format outside the mask is tied off to zero
              if (in_mask(mask, fa) && in_mask(mask, fb)) {
                const int ua = d.own_unit ? lsb_exp(fa) : golden_unit_exp(mask);
                const int ub = d.own_unit ? lsb_exp(fb) : golden_unit_exp(mask);
                expected = golden * (int64_t{1} << (lsb_exp(fa) + lsb_exp(fb) - ua - ub));
                ++checked;
              } else if (d.raw_select) {
                continue;  // not tied off in the lane: nibble_dpu_core zeroes such a block
              } else {
                ++tied_off;
              }
              if (rtl != expected && !reported) {
                reported = true;
                ADD_FAILURE() << "first mismatch: " << d.name << " mask 0x" << std::hex << mask << " " << name(fa)
                              << " code 0x" << a << " x " << name(fb) << " code 0x" << b << ": rtl 0x"
                              << (rtl & 0xFFFF) << " golden 0x" << (expected & 0xFFFF) << std::dec << " (" << rtl
                              << " vs " << expected << ")";
              }
            }
          }
        }
      }
    }
  }
  std::printf("[ cases    ] %llu lane products checked, %llu tied-off lanes checked zero\n",
              static_cast<unsigned long long>(checked), static_cast<unsigned long long>(tied_off));
  // Per design: 9 format pairs x 256 (all) + 3 x 4 x 256 (the three two-format masks) + 3 x 256
  // (single formats).
  EXPECT_EQ(checked, kNumDesigns * 24u * 256u);
}

}  // namespace
}  // namespace nibble::rtl_test
