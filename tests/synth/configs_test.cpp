// The area and energy flows' format sets (power/synth_flow.h) against golden's table
// (nibble/format_sets.h): every non-empty set of formats resolves, by any spelling of its
// name, to one configuration whose mask, name and label golden derives; the table's rows
// are those rows; anything else is refused.
#include <gtest/gtest.h>

#include <string>

#include "nibble/format_sets.h"
#include "nibble/power/synth_flow.h"

namespace nibble::power {
namespace {

TEST(Configs, EverySetOfFormatsResolvesToGoldensNameAndMask) {
  int checked = 0;
  for (FormatMask m = 1; m <= kAllFormatsMask; ++m) {
    const Config& c = config_for(m);
    EXPECT_EQ(c.bits, m);
    EXPECT_EQ(c.name, format_set_name(m));
    EXPECT_EQ(c.label, format_set_label(m));
    EXPECT_EQ(c.mask, sv_format_mask(m));
    const std::vector<const Config*> parsed = parse_configs(c.name);
    ASSERT_EQ(parsed.size(), 1u);
    EXPECT_EQ(parsed[0], &c) << c.name;
    // The formats named in reverse order are the same set.
    std::string reversed;
    for (size_t i = kAllFormats.size(); i-- > 0;) {
      if ((m & format_bit(kAllFormats[i])) != 0) {
        reversed += (reversed.empty() ? "" : "+") + std::string(name(kAllFormats[i]));
      }
    }
    EXPECT_EQ(parse_configs(reversed).at(0), &c) << reversed;
    ++checked;
  }
  EXPECT_EQ(checked, static_cast<int>(kAllFormatsMask));
  EXPECT_EQ(parse_configs(all_formats_spelled()).at(0)->bits, kAllFormatsMask);
}

TEST(Configs, TableRowsAreTheDefaultsAndOnlyTheyAreMeasuredByDefault) {
  ASSERT_FALSE(kConfigs.empty());
  for (const Config& row : kConfigs) {
    // the row itself: the flows tell configurations apart by address (baseline_config())
    EXPECT_EQ(&config_for(row.bits), &row) << row.name;
    EXPECT_EQ(parse_configs(row.name).at(0), &row) << row.name;
  }
  EXPECT_EQ(&config_for(kBaselineFormatSet), &baseline_config());
  for (FormatMask m = 1; m <= kAllFormatsMask; ++m) {
    bool in_table = false;
    for (const Config& row : kConfigs) in_table = in_table || row.bits == m;
    if (!in_table) {
      EXPECT_FALSE(config_for(m).energy_default) << config_for(m).name;
    }
  }
}

TEST(Configs, RefusesWhatIsNotASetOfFormats) {
  for (const char* bad : {"e3m0", "", "e2m1+", "+int4", "e2m1,,int4", "all+e2m1", "E2M1"}) {
    EXPECT_THROW(parse_configs(bad), FlowError) << "'" << bad << "'";
  }
  EXPECT_THROW(config_for(0), std::logic_error);
  EXPECT_THROW(config_for(kAllFormatsMask + 1), std::logic_error);
}

}  // namespace
}  // namespace nibble::power
