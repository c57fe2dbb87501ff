// Prints golden's format sets (golden/include/nibble/format_sets.h) as CMake
// variables; cmake/NibbleFormatSets.cmake compiles and runs it at configure
// time, so that the lint script and the synthesis tests take their masks from
// the one table.
#include <cstdio>
#include <string>

#include "nibble/format_sets.h"

namespace {

void print_list(const char* var, const std::string& items) { std::printf("set(%s \"%s\")\n", var, items.c_str()); }

std::string joined(const std::string& a, const std::string& b) { return a.empty() ? b : a + ";" + b; }

}  // namespace

int main() {
  using namespace nibble;
  std::printf("set(NIBBLE_FORMAT_COUNT %zu)\n", kAllFormats.size());
  std::printf("set(NIBBLE_SCALE_FORMAT_COUNT %zu)\n", kAllScaleFormats.size());
  std::printf("set(NIBBLE_FORMAT_MASK_ALL %u)\n", kAllFormatsMask);
  std::printf("set(NIBBLE_FORMAT_MASK_BASELINE %u)\n", kBaselineFormatSet);
  std::printf("set(NIBBLE_SCALE_FORMAT_MASK_ALL %u)\n", kAllScaleFormatsMask);
  std::printf("set(NIBBLE_FORMAT_MASK_ALL_SV \"%s\")\n", sv_format_mask(kAllFormatsMask).c_str());
  std::printf("set(NIBBLE_FORMAT_MASK_BASELINE_SV \"%s\")\n", sv_format_mask(kBaselineFormatSet).c_str());
  std::printf("set(NIBBLE_SCALE_FORMAT_MASK_ALL_SV \"%s\")\n", sv_scale_format_mask(kAllScaleFormatsMask).c_str());
  std::string names, masks, sv, every_sv, scale_masks, scale_sv, scale_alone_sv;
  for (const FormatSetRow& r : kFormatSets) {
    names = joined(names, format_set_name(r.mask));
    masks = joined(masks, std::to_string(r.mask));
    sv = joined(sv, sv_format_mask(r.mask));
  }
  for (FormatMask m = 1; m <= kAllFormatsMask; ++m) every_sv = joined(every_sv, sv_format_mask(m));
  for (const ScaleFormatSet& s : kScaleFormatSets) {
    scale_masks = joined(scale_masks, std::to_string(s.mask));
    scale_sv = joined(scale_sv, sv_scale_format_mask(s.mask));
  }
  for (ScaleFormat f : kAllScaleFormats) scale_alone_sv = joined(scale_alone_sv, sv_scale_format_mask(format_bit(f)));
  print_list("NIBBLE_FORMAT_SET_NAMES", names);     // the named sets, table order
  print_list("NIBBLE_FORMAT_SET_MASKS", masks);     // their masks as numbers
  print_list("NIBBLE_FORMAT_SET_SV", sv);           // as SystemVerilog literals
  print_list("NIBBLE_FORMAT_MASKS_EVERY_SV", every_sv);  // every non-empty set of formats
  print_list("NIBBLE_SCALE_FORMAT_SET_MASKS", scale_masks);
  print_list("NIBBLE_SCALE_FORMAT_SET_SV", scale_sv);
  print_list("NIBBLE_SCALE_FORMAT_ALONE_SV", scale_alone_sv);  // each scale format alone
  return 0;
}
