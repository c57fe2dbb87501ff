// The DPU's lane designs, as the area and energy flows name them: rtl/pkg/nibble_pkg.sv's
// lane_design_e and LaneDesignTable, row for row (tests/rtl/pkg_lane_test.cpp checks the two
// equal). Every design computes golden's block dot product bit for bit; they differ in the
// form a lane multiplies (docs/area-energy.md, rtl/README.md).
#pragma once

#include <array>
#include <string_view>

namespace nibble::power {

// Values equal nibble_pkg::lane_design_e.
enum class LaneDesign : unsigned { kCommonUnit = 0, kOwnUnit = 1, kSplit = 2, kSplitLateSign = 3, kSplitShortShift = 4 };

struct LaneDesignInfo {
  LaneDesign id;
  std::string_view name;  // command-line name
  bool own_unit;          // each format in its own unit; the units' exponents in the block exponent
  bool split;             // significand x significand, then one shift by the exponents' sum
  bool late_sign;         // negative lanes pass ~|p|; their count is added after the tree
  bool fold_shift;        // a narrower significand takes its first shift steps into spare bits
  bool raw_select;        // decoders select over the code's raw reading; the core zeroes a block
                          // of a format outside the mask (one-hot decoders tie it off to +0)
};

inline constexpr std::array<LaneDesignInfo, 5> kLaneDesignTable = {{
    {LaneDesign::kCommonUnit, "common-unit", false, false, false, false, false},
    {LaneDesign::kOwnUnit, "own-unit", true, false, false, false, false},
    {LaneDesign::kSplit, "split", true, true, false, false, false},
    {LaneDesign::kSplitLateSign, "split-late-sign", true, true, true, false, false},
    {LaneDesign::kSplitShortShift, "split-short-shift", true, true, true, true, true},
}};

// nibble_pkg::DefaultLaneDesign.
inline constexpr LaneDesign kDefaultLaneDesign = LaneDesign::kSplitShortShift;

constexpr const LaneDesignInfo& info(LaneDesign d) { return kLaneDesignTable[static_cast<unsigned>(d)]; }

}  // namespace nibble::power
