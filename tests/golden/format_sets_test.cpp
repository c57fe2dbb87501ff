// The format sets (format_sets.h): masks, names, labels and SystemVerilog
// literals derived from the format tables, against the values written out.
#include <gtest/gtest.h>

#include <set>

#include "nibble/format_sets.h"

namespace nibble {
namespace {

TEST(FormatSets, NamedSetsHaveTheirNamesLabelsAndLiterals) {
  struct Want {
    const char* name;
    const char* label;
    const char* sv;
  };
  const Want want[] = {{"e2m1", "E2M1-only", "3'b001"},
                       {"e2m1+e1m2", "E2M1+E1M2", "3'b011"},
                       {"all", "E2M1+E1M2+INT4", "3'b111"},
                       {"int4", "INT4-only", "3'b100"},
                       {"e1m2", "E1M2-only", "3'b010"}};
  ASSERT_EQ(kFormatSets.size(), std::size(want));
  std::set<FormatMask> seen;
  for (size_t i = 0; i < kFormatSets.size(); ++i) {
    const FormatMask m = kFormatSets[i].mask;
    EXPECT_EQ(format_set_name(m), want[i].name) << i;
    EXPECT_EQ(format_set_label(m), want[i].label) << i;
    EXPECT_EQ(sv_format_mask(m), want[i].sv) << i;
    EXPECT_NE(m, 0u) << i;
    EXPECT_EQ(m & ~kAllFormatsMask, 0u) << i;
    EXPECT_TRUE(seen.insert(m).second) << "set " << i << " listed twice";
  }
  EXPECT_EQ(format_set_name(kBaselineFormatSet), "e2m1");
  EXPECT_TRUE(seen.count(kBaselineFormatSet) == 1 && seen.count(kAllFormatsMask) == 1);
  EXPECT_EQ(all_formats_spelled(), "e2m1+e1m2+int4");
}

TEST(FormatSets, MasksFollowTheFormatTables) {
  int checked = 0;
  for (Format f : kAllFormats) {
    EXPECT_EQ(format_bit(f), 1u << static_cast<unsigned>(f));
    EXPECT_EQ((minifloat_mask() & format_bit(f)) != 0, info(f).encoding == Encoding::kSignMagnitudeFloat) << name(f);
    EXPECT_NE(kAllFormatsMask & format_bit(f), 0u) << name(f);
    ++checked;
  }
  for (ScaleFormat f : kAllScaleFormats) {
    EXPECT_NE(kAllScaleFormatsMask & format_bit(f), 0u) << name(f);
    ++checked;
  }
  EXPECT_EQ(checked, static_cast<int>(kAllFormats.size() + kAllScaleFormats.size()));
  EXPECT_EQ(kAllFormatsMask >> kAllFormats.size(), 0u);
  EXPECT_EQ(kAllScaleFormatsMask >> kAllScaleFormats.size(), 0u);
}

TEST(FormatSets, EveryNameParsesBackToItsSetAndMalformedNamesAreRefused) {
  int checked = 0;
  for (FormatMask m = 1; m <= kAllFormatsMask; ++m) {
    EXPECT_EQ(parse_format_set(format_set_name(m)), m) << format_set_name(m);
    EXPECT_EQ(parse_format_set(format_set_spelled(m)), m) << format_set_spelled(m);
    ++checked;
  }
  EXPECT_EQ(checked, static_cast<int>(kAllFormatsMask));
  for (const char* bad : {"", "+", "e2m1+", "+int4", "e2m1++int4", "e3m0", "E2M1", "all+e2m1"}) {
    EXPECT_EQ(parse_format_set(bad), std::nullopt) << "'" << bad << "'";
  }
}

TEST(FormatSets, ScaleSetsHaveTheirNamesLabelsAndModes) {
  struct Want {
    const char* name;
    const char* label;
    const char* sv;
    ScaleMode mode;
  };
  const Want want[] = {{"all", "E4M3+UE8M0+FP32 scales", "3'b111", ScaleMode::kNVFP4},
                       {"e4m3+ue8m0", "E4M3+UE8M0 scales", "3'b011", ScaleMode::kNVFP4},
                       {"fp32", "FP32 scales", "3'b100", ScaleMode::kFP32}};
  ASSERT_EQ(kScaleFormatSets.size(), std::size(want));
  for (size_t i = 0; i < kScaleFormatSets.size(); ++i) {
    const ScaleFormatSet& s = kScaleFormatSets[i];
    EXPECT_EQ(scale_format_set_name(s.mask), want[i].name) << i;
    EXPECT_EQ(scale_format_set_label(s.mask), want[i].label) << i;
    EXPECT_EQ(sv_scale_format_mask(s.mask), want[i].sv) << i;
    EXPECT_EQ(s.energy_mode, want[i].mode) << i;
    // the energy streams' scale mode stores a scale format the set decodes
    EXPECT_NE(s.mask & format_bit(scale_format(s.energy_mode)), 0u) << i;
  }
  EXPECT_EQ(all_scale_formats_spelled(), "e4m3+ue8m0+fp32");
}

}  // namespace
}  // namespace nibble
