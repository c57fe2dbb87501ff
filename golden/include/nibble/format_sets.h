// Sets of formats a hardware unit is built for: the RTL's FormatMask and
// ScaleFormatMask parameters (rtl/pkg/nibble_pkg.sv: bit f is format f, bit s
// scale format s), and the named sets the area and energy flows synthesize and
// the lint and synthesis tests check. One table each; every mask, SystemVerilog
// literal and list the other layers use is derived here (header-only, so that
// CMake can print it at configure time: cmake/NibbleFormatSets.cmake).
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "nibble/formats.h"
#include "nibble/scale.h"

namespace nibble {

using FormatMask = uint32_t;  // bit f: Format f; bit s: ScaleFormat s

constexpr FormatMask format_bit(Format f) { return 1u << static_cast<unsigned>(f); }
constexpr FormatMask format_bit(ScaleFormat f) { return 1u << static_cast<unsigned>(f); }
inline constexpr FormatMask kAllFormatsMask = (1u << kAllFormats.size()) - 1u;
inline constexpr FormatMask kAllScaleFormatsMask = (1u << kAllScaleFormats.size()) - 1u;

// The minifloat formats (the RTL's FormatMaskMinifloat).
constexpr FormatMask minifloat_mask() {
  FormatMask m = 0;
  for (const FormatInfo& i : kFormatTable) {
    if (i.encoding == Encoding::kSignMagnitudeFloat) m |= format_bit(i.id);
  }
  return m;
}

// A set of element formats, and whether `nibble energy` measures it unless
// told otherwise.
struct FormatSetRow {
  FormatMask mask;
  bool energy_default;
};
// THE table of element-format sets, in the order the area and energy tables
// list them: E2M1 alone, the minifloats together, all formats, INT4 alone,
// E1M2 alone. Names and labels are derived (format_set_name, format_set_label).
inline constexpr std::array kFormatSets = {
    FormatSetRow{format_bit(Format::kE2M1), true},
    FormatSetRow{minifloat_mask(), true},
    FormatSetRow{kAllFormatsMask, true},
    FormatSetRow{format_bit(Format::kInt4), true},
    FormatSetRow{format_bit(Format::kE1M2), false},
};
// The set every area and energy figure is compared with: E2M1 alone, what
// today's FP4 hardware multiplies.
inline constexpr FormatMask kBaselineFormatSet = format_bit(Format::kE2M1);

// A set of scale formats and the golden scale mode of the energy runs'
// operand streams on a unit built for it.
struct ScaleFormatSet {
  FormatMask mask;
  ScaleMode energy_mode;
};
// THE table of scale-format sets, in the order the area and energy tables list them.
inline constexpr std::array kScaleFormatSets = {
    ScaleFormatSet{kAllScaleFormatsMask, ScaleMode::kNVFP4},
    ScaleFormatSet{format_bit(ScaleFormat::kE4M3) | format_bit(ScaleFormat::kUE8M0), ScaleMode::kNVFP4},
    ScaleFormatSet{format_bit(ScaleFormat::kFP32), ScaleMode::kFP32},
};

namespace detail {
template <class Table>
std::string join_names(const Table& table, FormatMask mask, bool upper) {
  std::string s;
  for (const auto& row : table) {
    if (((mask >> static_cast<unsigned>(row.id)) & 1u) == 0) continue;
    if (!s.empty()) s += '+';
    for (char c : row.name) s += upper && c >= 'a' && c <= 'z' ? static_cast<char>(c - 'a' + 'A') : c;
  }
  return s;
}
}  // namespace detail

// A set's command-line name: "all" for every format, else the formats' names
// joined by '+' ("e2m1+e1m2"). Its table label: the upper-case names joined
// by '+', "-only" after a single element format ("E2M1-only", "E2M1+E1M2"),
// " scales" after scale formats ("E4M3+UE8M0 scales").
inline std::string format_set_name(FormatMask mask) {
  return mask == kAllFormatsMask ? "all" : detail::join_names(kFormatTable, mask, false);
}
inline std::string format_set_label(FormatMask mask) {
  const bool single = (mask & (mask - 1u)) == 0;
  return detail::join_names(kFormatTable, mask, true) + (single ? "-only" : "");
}
inline std::string scale_format_set_name(FormatMask mask) {
  return mask == kAllScaleFormatsMask ? "all" : detail::join_names(kScaleFormatTable, mask, false);
}
inline std::string scale_format_set_label(FormatMask mask) {
  return detail::join_names(kScaleFormatTable, mask, true) + " scales";
}

// The set a name denotes ("all", or format names joined by '+'), or nullopt
// where a part names no format.
inline std::optional<FormatMask> parse_format_set(std::string_view n) {
  if (n == "all") return kAllFormatsMask;
  FormatMask mask = 0;
  for (;;) {  // every part a format, so that "e2m1+" and "+int4" are refused
    const size_t plus = n.find('+');
    const std::optional<Format> f = parse_format(n.substr(0, plus));
    if (!f) return std::nullopt;
    mask |= format_bit(*f);
    if (plus == std::string_view::npos) return mask;
    n = n.substr(plus + 1);
  }
}

// A set's formats' names joined by '+' in the table's order, "all" spelled out
// ("e2m1+e1m2+int4"): the cycle simulator's energy tables key masks so.
inline std::string format_set_spelled(FormatMask mask) { return detail::join_names(kFormatTable, mask, false); }
// Every format's name joined by '+' ("e2m1+e1m2+int4"), which "all" stands for.
inline std::string all_formats_spelled() { return format_set_spelled(kAllFormatsMask); }
inline std::string all_scale_formats_spelled() {
  return detail::join_names(kScaleFormatTable, kAllScaleFormatsMask, false);
}

// The SystemVerilog literal of a mask `width` bits wide: "3'b011".
inline std::string sv_mask(FormatMask mask, size_t width) {
  std::string s = std::to_string(width) + "'b";
  for (size_t b = width; b-- > 0;) s += ((mask >> b) & 1u) != 0 ? '1' : '0';
  return s;
}
inline std::string sv_format_mask(FormatMask mask) { return sv_mask(mask, kAllFormats.size()); }
inline std::string sv_scale_format_mask(FormatMask mask) { return sv_mask(mask, kAllScaleFormats.size()); }

}  // namespace nibble
