// The 4-bit element formats and the block-scale formats: the one table every
// other layer (RTL package, SystemC model, CUDA kernels) derives its facts from.
//
// An element format is described by three numbers; everything else -- the
// values of its 16 codes, its largest magnitude, its grid -- is derived here:
//
//   lsb_exp    the weight 2^lsb_exp of one "unit": every magnitude of the
//              format is an integer number of units (its fixed point);
//   man_bits   mantissa bits: above 2^(man_bits+1) units the grid spacing
//              doubles each binade (a minifloat); below it the spacing is 1;
//   max_units  the largest magnitude a quantizer produces, in units.
//
// E2M1 (1 sign, 2 exponent, 1 mantissa, bias 1): units of 0.5, magnitudes
//   {0,1,2,3,4,6,8,12} units = {0,0.5,1,1.5,2,3,4,6}; no Inf/NaN.
// E1M2 (1 sign, 1 exponent, 2 mantissa, bias 1): units of 0.25, magnitudes
//   0..7 units = {0,0.25,...,1.75}: a uniform grid.
// INT4 (two's complement): units of 1, values -8..7. Quantizers produce the
//   symmetric range -7..7; decoders accept -8.
//
// Codes are 4-bit; in packed storage element 2k sits in the low nibble of byte k.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "nibble/codes.h"

namespace nibble {

enum class Format : uint8_t { kE2M1, kE1M2, kInt4 };
enum class ScaleFormat : uint8_t { kE4M3, kUE8M0, kFP32 };

// A magnitude grid: k * 2^lsb_exp for integer k in [0, max_units], where only
// multiples of 2^max(0, floor(log2 k) - man_bits) are on the grid.
struct Grid {
  int lsb_exp;
  int man_bits;
  uint32_t max_units;
};

enum class Encoding : uint8_t {
  kSignMagnitudeFloat,  // s | exponent (bias) | mantissa, subnormals at exponent 0
  kTwosComplement,      // integer
};

struct FormatInfo {
  Format id;
  std::string_view name;  // the spelling used on command lines and in files
  Encoding encoding;
  int exp_bits;  // minifloat exponent bits (0 for integers)
  int man_bits;  // minifloat mantissa bits; for integers, the magnitude bits below the sign
  int bias;      // minifloat exponent bias (0 for integers)
};

// THE table. Adding a format means adding a row here (and its enum value);
// every other fact below is derived from these fields (docs/adding-a-format.md).
inline constexpr std::array kFormatTable = {
    FormatInfo{Format::kE2M1, "e2m1", Encoding::kSignMagnitudeFloat, 2, 1, 1},
    FormatInfo{Format::kE1M2, "e1m2", Encoding::kSignMagnitudeFloat, 1, 2, 1},
    FormatInfo{Format::kInt4, "int4", Encoding::kTwosComplement, 0, 3, 0},
};

// The ids of a table's rows, in order: kAllFormats, kAllScaleFormats.
template <class Info, size_t N>
constexpr auto ids_of(const std::array<Info, N>& table) {
  std::array<decltype(Info::id), N> ids{};
  for (size_t i = 0; i < N; ++i) ids[i] = table[i].id;
  return ids;
}
// Whether row i of a table describes id i (info() indexes the table by id).
template <class Info, size_t N>
constexpr bool rows_in_id_order(const std::array<Info, N>& table) {
  for (size_t i = 0; i < N; ++i) {
    if (static_cast<size_t>(table[i].id) != i) return false;
  }
  return true;
}
static_assert(rows_in_id_order(kFormatTable), "kFormatTable's rows follow the Format enum");
inline constexpr auto kAllFormats = ids_of(kFormatTable);

constexpr const FormatInfo& info(Format f) { return kFormatTable[static_cast<size_t>(f)]; }

// Exponent of one unit: emin - man_bits for minifloats (emin = 1 - bias), 0 for integers.
constexpr int lsb_exp(Format f) {
  const FormatInfo& i = info(f);
  return i.encoding == Encoding::kTwosComplement ? 0 : (1 - i.bias) - i.man_bits;
}
// Largest magnitude a quantizer emits, in units (12, 7, 7): the all-ones
// minifloat, or the symmetric integer maximum.
constexpr uint32_t max_units(Format f) {
  const FormatInfo& i = info(f);
  if (i.encoding == Encoding::kTwosComplement) return (1u << i.man_bits) - 1u;
  const int emax_field = (1 << i.exp_bits) - 1;
  return ((2u << i.man_bits) - 1u) << (emax_field - 1);
}
// Largest magnitude any code decodes to, in units (12, 7, 8: INT4's -8).
constexpr uint32_t max_decode_units(Format f) {
  return info(f).encoding == Encoding::kTwosComplement ? max_units(f) + 1u : max_units(f);
}
constexpr Grid grid(Format f) { return {lsb_exp(f), info(f).man_bits, max_units(f)}; }

static_assert(max_units(Format::kE2M1) == 12 && lsb_exp(Format::kE2M1) == -1, "E2M1 is +-6 in units of 0.5");
static_assert(max_units(Format::kE1M2) == 7 && lsb_exp(Format::kE1M2) == -2, "E1M2 is +-1.75 in units of 0.25");
static_assert(max_units(Format::kInt4) == 7 && max_decode_units(Format::kInt4) == 8, "INT4 is -8..7");

struct ScaleFormatInfo {
  ScaleFormat id;
  std::string_view name;
  int bits;
  int exp_bits;
  int man_bits;
  int bias;
  uint32_t nan_code;  // the code a block holding NaN/Inf receives
};

inline constexpr std::array kScaleFormatTable = {
    ScaleFormatInfo{ScaleFormat::kE4M3, "e4m3", 8, 4, 3, 7, 0x7Fu},           // OCP FP8, satfinite, max 448
    ScaleFormatInfo{ScaleFormat::kUE8M0, "ue8m0", 8, 8, 0, 127, 0xFFu},       // OCP MX, 2^(e-127)
    ScaleFormatInfo{ScaleFormat::kFP32, "fp32", 32, 8, 23, 127, 0x7FC00000u},  // IEEE binary32
};
static_assert(rows_in_id_order(kScaleFormatTable), "kScaleFormatTable's rows follow the ScaleFormat enum");
inline constexpr auto kAllScaleFormats = ids_of(kScaleFormatTable);

constexpr const ScaleFormatInfo& info(ScaleFormat f) { return kScaleFormatTable[static_cast<size_t>(f)]; }

// How a scale format's codes read, implied by its row (rtl/pkg/nibble_pkg.sv
// scale_encoding_e): a 32-bit code is the binary32 pattern itself; a code
// without mantissa bits is a power of two 2^(code - bias); any other is a
// sign-magnitude minifloat with subnormals (codes.h decode_scale_fields).
enum class ScaleEncoding : uint8_t { kMinifloat, kPowerOfTwo, kBinary32 };
constexpr ScaleEncoding scale_encoding(ScaleFormat f) {
  return info(f).bits == 32 ? ScaleEncoding::kBinary32
                            : (info(f).man_bits == 0 ? ScaleEncoding::kPowerOfTwo : ScaleEncoding::kMinifloat);
}

// The grid of E4M3 magnitudes (used to round block scales): units of 2^-9,
// 3 mantissa bits, largest finite the code below the NaN code S.1111.111:
// 448 = 229376 units.
inline constexpr Grid kE4M3Grid = {
    (1 - info(ScaleFormat::kE4M3).bias) - info(ScaleFormat::kE4M3).man_bits, info(ScaleFormat::kE4M3).man_bits,
    minifloat_units(info(ScaleFormat::kE4M3).nan_code - 1u, info(ScaleFormat::kE4M3).exp_bits,
                    info(ScaleFormat::kE4M3).man_bits)};

// units * 2^lsb_exp as a float, by exact doublings and halvings (constexpr:
// no bit casts), for the normal values of the grids here.
constexpr float grid_value(uint32_t units, int lsb_exp) {
  float v = static_cast<float>(units);
  for (int i = 0; i < lsb_exp; ++i) v *= 2.0f;
  for (int i = 0; i > lsb_exp; --i) v /= 2.0f;
  return v;
}
// E4M3's largest finite magnitude, 448: the nvfp4 tensor scale's numerator.
inline constexpr float kE4M3Max = grid_value(kE4M3Grid.max_units, kE4M3Grid.lsb_exp);
static_assert(kE4M3Max == 448.0f, "OCP E4M3 satfinite saturates at 448");

// The decoded value of a scale code (E4M3, UE8M0) from the table's row.
constexpr ScaleCodeValue scale_code_value(ScaleFormat f, uint32_t code) {
  const ScaleFormatInfo& i = info(f);
  return decode_scale_fields(i.bits, i.exp_bits, i.man_bits, i.bias, i.nan_code, code);
}

// Largest magnitude a quantizer emits, as a float: 6, 1.75, 7.
float max_value(Format f);
// floor(log2(max_value)): the element's emax in the OCP MX scale rule (2, 0, 2).
int emax(Format f);

// Every one of the 16 codes decodes (the low 4 bits of `code` are used; Decoded: codes.h).
constexpr Decoded decode(Format f, uint8_t code) {
  const FormatInfo& i = info(f);
  return decode_element(i.encoding == Encoding::kTwosComplement, i.exp_bits, i.man_bits, code);
}
// The exact value of a code as a float (every code is exact in binary32).
float decode_value(Format f, uint8_t code);
// The code of (neg, units); units must be on the format's grid and <= the
// largest decodable magnitude. Negative zero is encodable only in minifloats.
uint8_t encode(Format f, bool neg, uint32_t units);

// minifloat_code and minifloat_units, the one encoder and decoder of E2M1,
// E1M2 and E4M3 magnitudes: codes.h.

// Name parsing for command lines and files; nullopt for unknown names.
std::optional<Format> parse_format(std::string_view name);
std::optional<ScaleFormat> parse_scale_format(std::string_view name);
std::string_view name(Format f);
std::string_view name(ScaleFormat f);
// Every format's name in table order, separated by sep ("e2m1, e1m2, int4"), for
// help texts, messages and defaults.
std::string format_names(std::string_view sep);

// Packing: element 2k in the low nibble of byte k, element 2k+1 in the high nibble.
void pack_codes(const uint8_t* codes, size_t count, uint8_t* packed);
void unpack_codes(const uint8_t* packed, size_t count, uint8_t* codes);

}  // namespace nibble
