#include "nibble/formats.h"

#include <stdexcept>

#include "nibble/fp32.h"

namespace nibble {

float max_value(Format f) { return static_cast<float>(max_units(f)) * exp2_f32(lsb_exp(f)); }

int emax(Format f) { return msb_index(max_units(f)) + lsb_exp(f); }

float decode_value(Format f, uint8_t code) {
  const Decoded d = decode(f, code);
  const float mag = static_cast<float>(d.units) * exp2_f32(lsb_exp(f));
  return d.neg ? -mag : mag;
}

uint8_t encode(Format f, bool neg, uint32_t units) {
  const FormatInfo& i = info(f);
  if (units > (neg ? max_decode_units(f) : max_units(f))) {
    throw std::invalid_argument("encode: magnitude outside the format's range");
  }
  if (i.encoding == Encoding::kTwosComplement) {
    return static_cast<uint8_t>((neg ? 16u - units : units) & 0xFu);
  }
  const int m = i.man_bits;
  if (units >= (1u << m)) {
    const int shift = msb_index(units) - m;
    if ((units & ((1u << shift) - 1u)) != 0) throw std::invalid_argument("encode: magnitude not on the grid");
  }
  return static_cast<uint8_t>(minifloat_code(neg, units, i.exp_bits, m));
}

std::optional<Format> parse_format(std::string_view n) {
  for (const FormatInfo& i : kFormatTable) {
    if (i.name == n) return i.id;
  }
  return std::nullopt;
}

std::optional<ScaleFormat> parse_scale_format(std::string_view n) {
  for (const ScaleFormatInfo& i : kScaleFormatTable) {
    if (i.name == n) return i.id;
  }
  return std::nullopt;
}

std::string_view name(Format f) { return info(f).name; }
std::string_view name(ScaleFormat f) { return info(f).name; }

std::string format_names(std::string_view sep) {
  std::string out;
  for (const FormatInfo& i : kFormatTable) out += (out.empty() ? "" : std::string(sep)) + std::string(i.name);
  return out;
}

void pack_codes(const uint8_t* codes, size_t count, uint8_t* packed) {
  for (size_t k = 0; k < (count + 1) / 2; ++k) {
    const uint32_t lo = codes[2 * k] & 0xFu;
    const uint32_t hi = 2 * k + 1 < count ? codes[2 * k + 1] & 0xFu : 0u;
    packed[k] = static_cast<uint8_t>(lo | (hi << 4));
  }
}

void unpack_codes(const uint8_t* packed, size_t count, uint8_t* codes) {
  for (size_t i = 0; i < count; ++i) {
    codes[i] = static_cast<uint8_t>((packed[i / 2] >> (4 * (i % 2))) & 0xFu);
  }
}

}  // namespace nibble
